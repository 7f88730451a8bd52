#!/usr/bin/env bash
# A real, single-host SLURM cluster for tests and for trying profiles/slurm on one machine:
# Debian's slurm-wlm (slurmctld + 1 or more slurmd) and its own munged, all bound to
# 127.0.0.1, with every file (config, state, spool, logs, munge key and socket) under one
# folder (default .slurm/ in the repository root; gitignored).
#
#   scripts/slurm_local.sh start [NODES]   # NODES slurmd processes (default 1; node1..nodeN)
#   scripts/slurm_local.sh status          # exit 0 when the controller answers and every node is up
#   scripts/slurm_local.sh env             # prints `export SLURM_CONF=...` (eval it in your shell)
#   scripts/slurm_local.sh stop            # cancels the cluster's jobs, stops what `start` started
#
# `start` is idempotent (a running cluster with the same node count is kept; another count
# restarts it) and installs slurm-wlm and munge with apt-get when they are missing (root or
# passwordless sudo). Client commands (sbatch, squeue, Snakemake's SLURM plugin) find this
# cluster through SLURM_CONF=<dir>/slurm.conf, which `env` prints. Inside a job, the jobstep
# plugin runs `srun` with every SLURM_* variable removed (SLURM_CONF too), so srun can only find
# the default /etc/slurm/slurm.conf: `start` links that path to <dir>/slurm.conf when it is free
# (and refuses to start when another slurm.conf is there); `stop` removes the link.
#
# The cluster: partition `local` (default), nodes node1..nodeN on 127.0.0.1, each with
# SLURM_LOCAL_CPUS CPUs (default: this machine's cores, at least 4, the most a job of
# profiles/grouped asks for (`cores: 4`); declared beyond the real cores where needed, and with
# N > 1 nodes the host's cores are booked N times over). Cores are the consumable resource
# (SelectTypeParameters=CR_CPU); memory is declared (max(MemTotal, 16 GiB), so the profile's
# requests are admitted) but not enforced, and there is no cgroup confinement. No slurmdbd:
# status queries use squeue (MinJobAge=3600 keeps finished jobs visible for an hour) and every
# finished job is written to <dir>/log/jobcomp.txt (JobCompType=jobcomp/filetxt).
#
# Environment: SLURM_LOCAL_DIR (state folder), SLURM_LOCAL_PORT (slurmctld port, default 16817;
# node i listens on PORT+i), SLURM_LOCAL_CPUS (CPUs per node).
# Exit codes: 0 ok, 1 not running (status), 2 usage, 3 the services cannot be installed/started.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
D="${SLURM_LOCAL_DIR:-$ROOT/.slurm}"
PORT="${SLURM_LOCAL_PORT:-16817}"
CONF="$D/slurm.conf"
export SLURM_CONF="$CONF"
PATH="$PATH:/usr/sbin:/sbin"

die() { echo "slurm_local: $*" >&2; exit 3; }
say() { echo "slurm_local: $*" >&2; }

ensure_installed() {
    local missing=()
    for b in munged slurmctld slurmd sbatch squeue scancel scontrol sinfo; do
        command -v "$b" >/dev/null 2>&1 || missing+=("$b")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        sudo -n true 2>/dev/null || die "missing ${missing[*]}; installing slurm-wlm and munge needs root or passwordless sudo (apt-get install slurm-wlm munge)"
        sudo=(sudo -n)
    fi
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get here: install Slurm (slurmctld, slurmd, client commands) and munge yourself"
    say "installing slurm-wlm and munge (missing: ${missing[*]})"
    local pkgs=(slurm-wlm slurm-client munge)
    export DEBIAN_FRONTEND=noninteractive
    if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >"$D/apt.log" 2>&1; then
        "${sudo[@]}" apt-get update -qq >>"$D/apt.log" 2>&1 || die "apt-get update failed (see $D/apt.log)"
        "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >>"$D/apt.log" 2>&1 \
            || die "apt-get install ${pkgs[*]} failed (see $D/apt.log)"
    fi
}

SYSCONF=/etc/slurm/slurm.conf

link_sysconf() {
    if [[ -L $SYSCONF && $(readlink "$SYSCONF") == "$CONF" ]]; then return 0; fi
    [[ -e $SYSCONF || -L $SYSCONF ]] && die "$SYSCONF exists and is not this cluster's; this machine has its own Slurm: use it, or move that file away"
    mkdir -p "$(dirname "$SYSCONF")" && ln -s "$CONF" "$SYSCONF" 2>/dev/null \
        || die "cannot link $SYSCONF -> $CONF (jobs' srun reads only that path); run as root"
}

unlink_sysconf() {
    if [[ -L $SYSCONF && $(readlink "$SYSCONF") == "$CONF" ]]; then rm -f "$SYSCONF"; fi
}

pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

node_count() { [[ -f "$D/nodes" ]] && cat "$D/nodes" || echo 0; }

write_conf() {
    local n="$1" ncpu mem
    ncpu="${SLURM_LOCAL_CPUS:-$(nproc)}"
    [[ -n ${SLURM_LOCAL_CPUS:-} ]] || ((ncpu >= 4)) || ncpu=4
    mem=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
    ((mem >= 16384)) || mem=16384
    mkdir -p "$D"/{state,spool,log,run,munge}
    cat >"$CONF" <<EOF
# Written by scripts/slurm_local.sh: a single-host test cluster on 127.0.0.1 ($n slurmd).
ClusterName=brlocal
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$PORT
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
PlugStackConfig=$D/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
EOF
    : >"$D/plugstack.conf"
    local i
    for ((i = 1; i <= n; i++)); do
        echo "NodeName=node$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((PORT + i)) CPUs=$ncpu RealMemory=$mem State=UNKNOWN" >>"$CONF"
    done
    echo "PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$CONF"
    echo "$n" >"$D/nodes"
}

start_munge() {
    pid_alive "$D/run/munged.pid" && return 0
    if [[ ! -s "$D/munge/munge.key" ]]; then
        (umask 077 && dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none)
    fi
    chmod 700 "$D/munge"
    munged --force --key-file="$D/munge/munge.key" --socket="$D/munge/munge.socket" \
        --pid-file="$D/run/munged.pid" --log-file="$D/log/munged.log" --seed-file="$D/munge/munge.seed" \
        || die "munged did not start (see $D/log/munged.log)"
}

all_up() {
    # every configured node answers and is idle/allocated/mixed (not down, drained, unknown)
    local n="$1" states
    states=$(timeout 10 sinfo -h -N -o '%N %t' 2>/dev/null) || return 1
    [[ $(grep -cE ' (idle|alloc|mix|comp)$' <<<"$states") -eq $n ]]
}

cmd_status() {
    local n
    n=$(node_count)
    [[ -f "$CONF" && $n -gt 0 ]] || { echo "slurm_local: not configured ($D)"; return 1; }
    pid_alive "$D/run/munged.pid" || { echo "slurm_local: munged not running"; return 1; }
    pid_alive "$D/run/slurmctld.pid" || { echo "slurm_local: slurmctld not running"; return 1; }
    all_up "$n" || { echo "slurm_local: not all of $n nodes are up"; sinfo -N 2>&1 | sed 's/^/  /'; return 1; }
    echo "slurm_local: up, $n node(s), SLURM_CONF=$CONF"
}

cmd_stop() {
    [[ -f "$CONF" ]] || return 0
    if pid_alive "$D/run/slurmctld.pid"; then
        local jobs
        jobs=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
        if [[ -n $jobs ]]; then
            # shellcheck disable=SC2086
            timeout 10 scancel $jobs 2>/dev/null || true
            for _ in $(seq 20); do
                [[ -z $(timeout 10 squeue -h -t R,CG,PD -o %i 2>/dev/null) ]] && break
                sleep 0.5
            done
        fi
    fi
    local f pid
    for f in "$D"/run/slurmd-*.pid "$D/run/slurmctld.pid" "$D/run/munged.pid"; do
        [[ -f $f ]] || continue
        pid=$(cat "$f")
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$f"
    done
    unlink_sysconf
    echo "slurm_local: stopped"
}

cmd_start() {
    local n="${1:-1}"
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 start [NODES>=1]" >&2; exit 2; }
    mkdir -p "$D"
    ensure_installed
    if [[ $(node_count) -eq $n ]] && cmd_status >/dev/null 2>&1; then
        link_sysconf
        cmd_status
        return 0
    fi
    cmd_stop >/dev/null
    write_conf "$n"
    link_sysconf
    start_munge
    # -c: a fresh controller state (no jobs from an earlier start); -i: ignore stale state files
    slurmctld -c -f "$CONF" || die "slurmctld did not start (see $D/log/slurmctld.log)"
    local i
    for ((i = 1; i <= n; i++)); do
        slurmd -c -f "$CONF" -N "node$i" || die "slurmd node$i did not start (see $D/log/slurmd-node$i.log)"
    done
    for _ in $(seq 60); do
        if all_up "$n"; then
            cmd_status
            return 0
        fi
        sleep 0.5
    done
    sinfo -N >&2 || true
    die "the nodes did not come up within 30 s (see $D/log/)"
}

case "${1:-}" in
    start) shift; cmd_start "$@" ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) echo "usage: $0 start [NODES]|stop|status|env" >&2; exit 2 ;;
esac
