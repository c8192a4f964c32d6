#!/usr/bin/env bash
# usage: pslite_ipc_machines.sh PSLITE_INSTANCE_GROUPS
#
# bytedance/ps-lite's test_ipc_benchmark set-up on two emulated machines:
# each machine a network namespace (joined by a bridge in a third) running
# a server and a worker of the ps-lite program, with BYTEPS_ENABLE_IPC=1
# and registered receive buffers; the scheduler on the first. Every sum
# must be exact, and each worker must send to the server of its own
# machine through shared memory and to the other machine's over the van:
# exactly one "go through shared memory" line per worker, naming its own
# machine's server.
#
# Exits 77 (CTest: skipped) with the reason where namespaces, veths or
# bridges cannot be set up here.
set -u
program=$1
deadline=40

skip() { echo "pslite_ipc_machines: SKIP: $*"; exit 77; }
source "$(dirname "$0")/../../scripts/lib/netns.sh"
netns_require
netns_executables pslite_ipc_machines "$program"

prefix="cvpi$$"
switch_ns="${prefix}sw"
machines=(m0 m1)
declare -A addr=([m0]=10.79.0.1 [m1]=10.79.0.2)
ns_of() { echo "${prefix}$1"; }

logdir=$(mktemp -d /tmp/pslite_ipc.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  netns_remove_all
  rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_switch "$switch_ns"
port=1
for m in "${machines[@]}"; do
  netns_host "$(ns_of "$m")" "$switch_ns" "p$port" "${addr[$m]}/24"
  port=$((port + 1))
done

# start NAME MACHINE ROLE RANK: one process of the job on MACHINE.
start() {
  local name=$1 m=$2 role=$3 rank=$4
  timeout -k 5 "$deadline" ip netns exec "$(ns_of "$m")" env \
    DMLC_ROLE="$role" DMLC_RANK="$rank" DMLC_PS_ROOT_URI="${addr[m0]}" DMLC_PS_ROOT_PORT=9000 \
    DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=2 DMLC_INTERFACE=eth1 BYTEPS_ENABLE_IPC=1 \
    ENABLE_RECV_BUFFER=1 BYTEPS_LOG_LEVEL=INFO CARAVAN_OP_TIMEOUT=30 \
    "$program" >"$logdir/$name.log" 2>&1 &
  pids+=($!)
}
start scheduler m0 scheduler -1
for i in 0 1; do
  start "server$i" "m$i" server "$i"
  start "worker$i" "m$i" worker "$i"
done

status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
pids=()

fail() {
  echo "pslite_ipc_machines: FAIL: $*"
  for f in "$logdir"/*.log; do echo "----- $(basename "$f" .log) -----"; cat "$f"; done
  exit 1
}
[ "$status" -eq 0 ] || fail "a process of the job failed or ran past $deadline s"
for i in 0 1; do
  log="$logdir/worker$i.log"
  grep -q "sums exact" "$log" || fail "worker$i did not check its sums"
  lines=$(grep -c "go through shared memory" "$log")
  [ "$lines" -eq 1 ] || fail "worker$i: $lines 'go through shared memory' lines, expected 1 (its own machine's server)"
  grep "go through shared memory" "$log" | grep -q "at ${addr[m$i]}," ||
    fail "worker$i sent through shared memory to a server that is not on its machine"
done
echo "pslite_ipc_machines: two machines, each worker to its own machine's server through shared memory, to the other's over the van; sums exact"
