#!/usr/bin/env bash
# caravan-launch --from-env slurm under a real Slurm: a private single-node
# cluster (munged, slurmctld and slurmd from Debian's slurm-wlm packages,
# with a configuration and state made here) runs a 4-task job two ways, as
# `srun` and as an `sbatch --wait` script; both workers' sums are checked.
# Exits 77 (skipped) saying why where Slurm or munge is missing or will not
# start; stops what it started on every exit path.
# usage: slurm_job.sh CARAVAN_LAUNCH SUM_CHECK_WORKER
set -u
launch=$1 worker=$2
skip() { echo "slurm_job: SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "runs munged and slurmd as root (uid $(id -u))"
for t in munged munge slurmctld slurmd srun sbatch sinfo; do
  command -v $t >/dev/null || skip "no '$t' (apt-get install munge slurmctld slurmd slurm-client)"
done
# Another Slurm already serving this machine would be disturbed: leave it be.
pgrep -x slurmctld >/dev/null && skip "a slurmctld already runs here"

tmp=$(mktemp -d /tmp/slurm_job.XXXXXX)
started_munged=0
cleanup() {
  for f in "$tmp"/slurmd.pid "$tmp"/slurmctld.pid; do
    [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  [ $started_munged -eq 1 ] && pkill -x munged
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "slurm_job: FAIL: $*"; tail -n 20 "$tmp"/*.log 2>/dev/null; exit 1; }

# munged: its key comes with the package; its run and log folders must be its own.
if ! munge -n >/dev/null 2>&1; then
  mkdir -p /run/munge /var/log/munge
  chown munge:munge /run/munge /var/log/munge
  [ -e /var/log/munge/munged.log ] && chown munge:munge /var/log/munge/munged.log
  runuser -u munge -- munged >"$tmp/munged.log" 2>&1 || skip "munged will not start: $(cat "$tmp/munged.log")"
  started_munged=1
  munge -n >/dev/null 2>&1 || skip "munged started but gives no credential"
fi

host=$(hostname -s)
cpus=$(nproc)
cat >"$tmp/slurm.conf" <<CONF
ClusterName=caravantest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=23470
SlurmdPort=23471
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=caravan Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
mkdir -p "$tmp/state" "$tmp/spool"
export SLURM_CONF=$tmp/slurm.conf
slurmctld -f "$SLURM_CONF" || skip "slurmctld will not start: $(tail -n 3 "$tmp/slurmctld.log")"
slurmd -f "$SLURM_CONF" || skip "slurmd will not start: $(tail -n 3 "$tmp/slurmd.log")"
for _ in $(seq 1 100); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2  # the node registers with the controller
done
sinfo -h -o %t | grep -q idle || skip "the node never became idle: $(sinfo 2>&1; tail -n 5 "$tmp/slurmd.log")"

# The scheduler's address comes from the node list: this host's name, which
# must resolve (else the address is given, and the node list is not used).
if ! getent hosts "$host" >/dev/null; then
  echo "slurm_job: '$host' does not resolve here: DMLC_PS_ROOT_URI=127.0.0.1 is given instead"
  export DMLC_PS_ROOT_URI=127.0.0.1
fi

# srun: 4 tasks on the node's CPUs (overcommitted where it has fewer).
out=$(DMLC_NUM_SERVER=2 DMLC_PS_ROOT_PORT=23472 timeout 120 srun -n 4 --overcommit \
      "$launch" --from-env slurm -- "$worker" 2 10000 2>&1) || fail "srun failed: $out"
[ "$(grep -c "of 2: .*all sums exact" <<<"$out")" -eq 2 ] || fail "srun: not both workers' sums exact: $out"
grep -q "SLURM_PROCID=0 of SLURM_NTASKS=4): server 0 and the scheduler" <<<"$out" || fail "srun: rank 0's part: $out"
echo "slurm_job: srun -n 4: ranks 0-1 servers (0 with the scheduler), 2-3 workers, all sums exact"

# The sbatch script of docs/cluster-launch.md, on this one node.
cat >"$tmp/job.sbatch" <<JOB
#!/bin/bash
#SBATCH --ntasks=4 --overcommit --output=$tmp/sbatch.out
export DMLC_NUM_SERVER=2 DMLC_PS_ROOT_PORT=23473
srun "$launch" --from-env slurm -- "$worker" 2 10000
JOB
timeout 180 sbatch --wait "$tmp/job.sbatch" >/dev/null || fail "sbatch --wait failed: $(cat "$tmp/sbatch.out" 2>/dev/null)"
[ "$(grep -c "of 2: .*all sums exact" "$tmp/sbatch.out")" -eq 2 ] || fail "sbatch: not both workers' sums exact: $(cat "$tmp/sbatch.out")"
echo "slurm_job: sbatch --wait: the job's 2 workers' sums exact"
echo "slurm_job: OK"
