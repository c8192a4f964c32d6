#!/usr/bin/env bash
# caravan-launch --from-env with the variables Slurm's srun and Kubeflow's
# PyTorchJob give each process, set by hand here (no Kubernetes cluster;
# a multi-node Slurm node list): 4 processes, every sum checked; then the
# errors a user meets. (Real mpirun and srun: Launch.FromEnvUnderMpirun,
# Launch.FromEnvUnderSlurm.)
# usage: from_env.sh CARAVAN_LAUNCH SUM_CHECK_WORKER
set -u
launch=$1 worker=$2
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fail() { echo "from_env: FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }

# Starts 4 ranks with `vars_of RANK` added to each; all must exit 0 and
# both workers report exact sums.
run_four() {
  local name=$1 i rc=0
  pids=()
  for i in 0 1 2 3; do
    env $(vars_of $i) timeout -k 5 60 "$launch" --from-env "$name" -- "$worker" 2 10000 \
      >"$tmp/$name-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1 2 3; do wait "${pids[$i]}" || rc=1; done
  pids=()
  [ $rc -eq 0 ] || fail "$name: a rank failed"
  [ "$(cat "$tmp"/$name-*.log | grep -c "all sums exact")" -eq 2 ] || fail "$name: not both workers' sums exact"
  grep -q "server 0 and the scheduler of 2 workers and 2 servers" "$tmp/$name-0.log" ||
    fail "$name: rank 0 did not run server 0 and the scheduler"
  grep -q "worker 1 of 2 workers" "$tmp/$name-3.log" || fail "$name: rank 3 is not worker 1"
  echo "from_env: $name: ranks 0-1 servers (0 with the scheduler), 2-3 workers, all sums exact"
}

# Slurm: one node, the first of the node list runs the scheduler.
vars_of() {
  echo SLURM_PROCID=$1 SLURM_NTASKS=4 SLURM_LOCALID=$1 SLURM_JOB_NUM_NODES=1 \
    SLURM_JOB_NODELIST=localhost DMLC_NUM_SERVER=2 DMLC_PS_ROOT_PORT=23452
}
run_four slurm

# Kubeflow PyTorchJob: MASTER_ADDR and MASTER_PORT; the pods' own addresses.
vars_of() {
  echo RANK=$1 WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=23453 DMLC_NUM_SERVER=2 \
    DMLC_NODE_HOST=127.0.0.1
}
run_four k8s

# What a user gets wrong, each refused at once with the variable named.
expect_error() {
  local want=$1
  shift
  local out
  out=$(timeout 10 "$@" 2>&1)
  local rc=$?
  [ $rc -eq 2 ] && grep -q -- "$want" <<<"$out" || fail "'$*' gave (exit $rc): $out; want: $want"
  echo "from_env: refused: $(head -n 1 <<<"$out")"
}
expect_error "no cluster manager's variables found" env -u OMPI_COMM_WORLD_RANK "$launch" --from-env auto -- true
expect_error "SLURM_PROCID and SLURM_NTASKS are not both set" "$launch" --from-env slurm -- true
expect_error "set DMLC_NUM_SERVER" env RANK=1 WORLD_SIZE=4 MASTER_ADDR=10.0.0.1 "$launch" --from-env k8s -- true
expect_error "leaves no worker" env SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_JOB_NUM_NODES=2 "$launch" --from-env slurm -- true
expect_error "set DMLC_PS_ROOT_URI" env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=4 DMLC_NUM_SERVER=1 "$launch" --from-env mpi -- true
expect_error "SLURM_JOB_NODELIST: cannot read node list" env SLURM_PROCID=0 SLURM_NTASKS=4 SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST='node[' "$launch" --from-env slurm -- true
expect_error "has no meaning with --from-env" "$launch" --from-env mpi --workers 2 -- true
expect_error "is not mpi, slurm, k8s or auto" "$launch" --from-env pbs -- true

# A Slurm node list's first host: what rank 0 of a multi-node job is told.
out=$(env SLURM_PROCID=3 SLURM_NTASKS=4 SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST='gpu[07-08,12],cpu1' \
  DMLC_NUM_SERVER=1 timeout 10 "$launch" --from-env slurm --server-bin /bin/true -- /bin/true 2>&1)
grep -q "scheduler at gpu07:9000" <<<"$out" || fail "node list gpu[07-08,12],cpu1 did not give gpu07: $out"
echo "from_env: SLURM_JOB_NODELIST=gpu[07-08,12],cpu1 puts the scheduler on gpu07"
echo "from_env: OK"
