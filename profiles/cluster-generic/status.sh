#!/usr/bin/env bash
# Status wrapper of the cluster-generic profile: `status.sh JOBID` must print exactly one
# line: running | success | failed. Default: the SIMULATED local scheduler.
# CLUSTER_SCHEDULER=sbatch maps SLURM states via sacct (template, not exercised by the tests;
# prefer the dedicated SLURM executor plugin: profiles/slurm). For SGE/LSF write the
# equivalent with qstat/qacct or bjobs (docs/CLUSTER.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
case "${CLUSTER_SCHEDULER:-fake}" in
    fake) exec "$here/../../scripts/fake_scheduler/status" "$@" ;;
    sbatch)
        state="$(sacct -j "$1" -X -n -P -o State | head -n 1 | cut -d' ' -f1)"
        case "$state" in
            COMPLETED) echo success ;;
            PENDING|RUNNING|COMPLETING|CONFIGURING|SUSPENDED|REQUEUED|RESIZING|"") echo running ;;
            *) echo failed ;;
        esac ;;
    *)    echo "status.sh: no status command configured for CLUSTER_SCHEDULER='${CLUSTER_SCHEDULER}'; edit $0" >&2; exit 2 ;;
esac
