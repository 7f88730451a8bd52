#!/usr/bin/env bash
# Submit wrapper of the cluster-generic profile. Snakemake calls it as
#   submit.sh JOBSCRIPT
# and expects the scheduler's job id as the first line of stdout.
#
# It reads the job's properties (rule or group, threads, resources) from the
# "# properties = {...}" line Snakemake writes into every job script and hands them to the
# scheduler. Default scheduler: the SIMULATED local one in scripts/fake_scheduler/.
# To use a real scheduler set CLUSTER_SCHEDULER (or edit the `case` below):
#   CLUSTER_SCHEDULER=sbatch  -> sbatch --parsable -J NAME -c CPUS --mem=MBM -t MIN JOBSCRIPT
#   CLUSTER_SCHEDULER=qsub    -> qsub -terse -N NAME -pe smp CPUS -l h_vmem=MBM JOBSCRIPT (SGE)
#   CLUSTER_SCHEDULER=bsub    -> bsub -J NAME -n CPUS -R "rusage[mem=MB]" < JOBSCRIPT (LSF)
# and replace status.sh / cancel.sh accordingly (see docs/CLUSTER.md). Only the fake
# scheduler is exercised by the tests; the real-scheduler lines are templates.
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: submit.sh JOBSCRIPT" >&2; exit 2; }
jobscript="${@: -1}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
fake="$here/../../scripts/fake_scheduler"

# name, cpus, mem_mb, runtime (minutes) from the job properties (stdlib-only Python).
read -r name cpus mem_mb runtime < <(python3 - "$jobscript" <<'PY'
import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"^# properties = (.*)$", text, re.M)
if m is None:
    sys.exit(f"submit.sh: no '# properties = ...' line in job script {sys.argv[1]}")
p = json.loads(m.group(1))
name = p.get("rule") if p.get("type") == "single" else f"group-{p.get('groupid')}"
res = p.get("resources") or {}
def num(v, default):
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return default
print(re.sub(r"[^A-Za-z0-9_.-]", "_", f"smk-{name}"), num(p.get("threads"), 1),
      num(res.get("mem_mb"), 1000), num(res.get("runtime"), 60))
PY
)

case "${CLUSTER_SCHEDULER:-fake}" in
    fake)   exec "$fake/submit" --name "$name" --cpus "$cpus" --mem-mb "$mem_mb" -- "$jobscript" ;;
    sbatch) sbatch --parsable -J "$name" -c "$cpus" --mem="${mem_mb}M" -t "$runtime" "$jobscript" | cut -d';' -f1 ;;
    qsub)   qsub -terse -cwd -V -N "$name" -pe smp "$cpus" -l "h_vmem=${mem_mb}M" "$jobscript" ;;
    bsub)   bsub -J "$name" -n "$cpus" -R "rusage[mem=${mem_mb}]" -o "logs/cluster/%J.out" < "$jobscript" \
                | sed -n 's/^Job <\([0-9]*\)>.*/\1/p' ;;
    *)      echo "submit.sh: unknown CLUSTER_SCHEDULER='${CLUSTER_SCHEDULER}' (fake|sbatch|qsub|bsub)" >&2; exit 2 ;;
esac
