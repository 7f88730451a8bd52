#!/usr/bin/env bash
# Cancel wrapper of the cluster-generic profile: `cancel.sh JOBID [JOBID ...]` (Snakemake
# calls it on Ctrl-C). Default: the SIMULATED local scheduler.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
case "${CLUSTER_SCHEDULER:-fake}" in
    fake)   exec "$here/../../scripts/fake_scheduler/cancel" "$@" ;;
    sbatch) exec scancel "$@" ;;
    qsub)   exec qdel "$@" ;;
    bsub)   exec bkill "$@" ;;
    *)      echo "cancel.sh: unknown CLUSTER_SCHEDULER='${CLUSTER_SCHEDULER}'" >&2; exit 2 ;;
esac
