#!/usr/bin/env bash
# The Slurm path of `tpusim sweep`, exercised for real: starts a one-node Slurm cluster from Debian's packages
# by hand (munged, slurmctld, slurmd; no systemd), runs a small sweep as a job array through
# `tpusim sweep --slurm`, merges it with `--collect`, checks that the merged table.csv and table.json equal a
# local run's byte for byte, and stops the daemons. Called by `bash scripts/setup.sh test`; run it alone with
#   bash scripts/ci-slurm.sh [path/to/tpusim]
# Needs root (it installs packages with scripts/install-deps.sh --slurm and starts daemons as root and munge).
# Every wait is bounded; the daemons are stopped by their PID files on any exit; nothing is left running.
# Facts this relies on: /work/shared/reference/slurm-on-ci.md (cgroup-free process tracking, state in a scratch
# folder, SLURM_CONF for the clients, a 0755 munge socket folder).
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$(pwd)
tpusim=$(realpath "${1:-build/tools/tpusim}")
sweep_file="$root_dir/test/tools/data/slurm-sweep.yaml"
timeout_s=${TPUSIM_SLURM_TIMEOUT:-300}

script_start=$(date +%s)
log() { echo "ci-slurm: $*"; }
fail() { echo "ci-slurm: FAILED: $*" >&2; exit 1; }

if [[ $(id -u) -ne 0 ]]; then
  # Not a failure: the ctest case SweepCli.SlurmArrayTasksRunSharesThatCollectIntoTheLocalTableByteForByte
  # runs the same script's tasks without a cluster.
  log "skipped: starting munged and the Slurm daemons needs root"
  exit 0
fi
bash scripts/install-deps.sh --slurm

start=$(date +%s)
scratch=$(mktemp -d /tmp/tpusim-slurm.XXXXXX)
chmod 0755 "$scratch"
mkdir -p "$scratch/munge" "$scratch/state" "$scratch/spool" "$scratch/log"
chown munge:munge "$scratch/munge"
chmod 0755 "$scratch/munge"

stop_daemons() {
  local status=$?
  for name in slurmd slurmctld munged; do
    local pidfile="$scratch/$name.pid"
    [[ $name == munged ]] && pidfile="$scratch/munge/munged.pid"
    if [[ -s $pidfile ]]; then
      local pid
      pid=$(cat "$pidfile")
      if kill "$pid" 2>/dev/null; then
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
      fi
    fi
  done
  if ((status != 0)); then
    for f in "$scratch"/log/*.log "$scratch"/munge/munged.log; do
      [[ -f $f ]] && { echo "---- $f (last lines)"; tail -n 20 "$f"; } >&2
    done
  fi
  rm -rf "$scratch"
  log "daemons stopped; $(($(date +%s) - script_start)) s in all"
  exit "$status"
}
trap stop_daemons EXIT

# munge: its own key, socket, pid, log and seed files under the scratch folder, run as user munge.
mungekey --create --keyfile="$scratch/munge/munge.key" >/dev/null
chown munge:munge "$scratch/munge/munge.key"
chmod 0400 "$scratch/munge/munge.key"
runuser -u munge -- munged --key-file="$scratch/munge/munge.key" --socket="$scratch/munge/munge.socket.2" \
  --pid-file="$scratch/munge/munged.pid" --log-file="$scratch/munge/munged.log" \
  --seed-file="$scratch/munge/munged.seed"

node=$(hostname -s)
cpus=$(nproc)
free_mib=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
memory=$((free_mib / 2))
export SLURM_CONF="$scratch/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=tpusim-ci
SlurmctldHost=$node
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$scratch/munge/munge.socket.2
SlurmUser=root
SlurmdUser=root
SlurmctldPort=${TPUSIM_SLURMCTLD_PORT:-16817}
SlurmdPort=${TPUSIM_SLURMD_PORT:-16818}
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/slurmctld.pid
SlurmdPidFile=$scratch/slurmd.pid
SlurmctldLogFile=$scratch/log/slurmctld.log
SlurmdLogFile=$scratch/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
MpiDefault=none
NodeName=$node CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -c
slurmd -c

# Bounded wait for the node to be idle.
deadline=$(($(date +%s) + 60))
until sinfo -h -N -o '%T' 2>/dev/null | grep -qx 'idle'; do
  (($(date +%s) < deadline)) || fail "the Slurm node did not come up idle within 60 s: $(sinfo -h -N -o '%T %E' 2>&1)"
  sleep 0.5
done
log "one-node cluster up on $node ($cpus CPUs) after $(($(date +%s) - start)) s"

work="$scratch/work"
mkdir -p "$work"
# The reference: the same sweep run here with one worker.
"$tpusim" sweep "$sweep_file" -o "$work/local" -j 1 >/dev/null 2>"$work/local.err" ||
  fail "local sweep failed: $(cat "$work/local.err")"
# The job array: the script tpusim writes, submitted as it is.
"$tpusim" sweep "$sweep_file" -o "$work/slurm" --slurm --tasks 2 >"$work/slurm.txt"
script="$work/slurm/slurm/sweep.sbatch"
[[ -f $script ]] || fail "tpusim sweep --slurm wrote no $script"
job=$(sbatch --parsable "$script")
job=${job%%;*}
log "submitted job array $job"
deadline=$(($(date +%s) + timeout_s))
while [[ -n $(squeue -h -j "$job" -o '%i' 2>/dev/null) ]]; do
  if (($(date +%s) >= deadline)); then
    squeue -j "$job" >&2 || true
    scancel "$job" || true
    fail "job array $job did not finish within $timeout_s s"
  fi
  sleep 1
done
"$tpusim" sweep "$sweep_file" -o "$work/slurm" --collect >/dev/null 2>"$work/collect.err" ||
  fail "collect failed: $(cat "$work/collect.err"; cat "$work"/slurm/slurm/*.out 2>/dev/null)"
for f in table.csv table.json; do
  cmp "$work/local/$f" "$work/slurm/$f" || fail "$f of the job array differs from the local run's"
done
tasks=$(ls "$work"/slurm/slurm/*.out | wc -l)
log "ok: $tasks array tasks; merged table.csv and table.json equal the local run's byte for byte" \
  "($(($(date +%s) - start)) s from starting the daemons)"
