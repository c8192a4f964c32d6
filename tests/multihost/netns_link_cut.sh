#!/usr/bin/env bash
# usage: netns_link_cut.sh CARAVAN_SERVER REGROUP_WORKER
#
# CARAVAN_ELASTIC=1 across emulated hosts (network namespaces joined by a
# bridge, scripts/lib/netns.sh): the scheduler, 2 servers and 3 workers,
# each on a host of its own, train with regroup_worker, which checks every
# sum against the workers in the job at that moment. Once worker 1 has done
# step 3 its host's link is cut (its bridge port down): it falls silent,
# the scheduler loses it past PS_HEARTBEAT_TIMEOUT, and the others regroup
# and train on as ranks 0 and 1 of 2. Then server 1's link is cut the same
# way: the workers go on with server 0 alone. The two cut off take the
# scheduler's silence for its loss and, as CARAVAN_ELASTIC nodes do, try
# to report the job to a scheduler started again. Then both links come
# back: the scheduler, which runs the job without them, refuses their
# reports, and they exit non-zero saying so (they are never summed with
# the next generation). Then the workers left stop (a stop file), and
# they, server 0 and the scheduler exit 0.
#
# Exits 77 (CTest: skipped) with the reason where namespaces, veths or
# bridges cannot be set up here.
set -u
server_bin=$1 worker_bin=$2

deadline=90  # seconds each node may run
skip() { echo "netns_link_cut: SKIP: $*"; exit 77; }

source "$(dirname "$0")/../../scripts/lib/netns.sh"
netns_require
netns_executables netns_link_cut "$server_bin" "$worker_bin"

prefix="cvlc$$"
netns_job_hosts "$prefix" 10.79.0
netns_logs netns_link_cut

print_logs() {
  for f in "$logdir"/*.log; do
    echo "----- $(basename "$f" .log) -----"
    cat "$f"
  done
}
fail() {
  echo "netns_link_cut: FAIL: $*"
  print_logs
  exit 1
}

# wait_for WHAT SECONDS COMMAND...: until COMMAND succeeds, or fail naming WHAT.
wait_for() {
  local what=$1 seconds=$2 t
  shift 2
  for ((t = 0; t < seconds * 10; ++t)); do
    "$@" && return 0
    sleep 0.1
  done
  fail "$what did not happen within $seconds s"
}
# Whether log $1 has a line matching $3 after its first line matching $2.
after() { awk -v a="$2" -v b="$3" 'index($0, a) { seen = 1 } seen && index($0, b) { found = 1 } END { exit !found }' "$1"; }

netns_switch "$switch_ns"
for n in "${nodes[@]}"; do
  netns_add "${prefix}$n"
  netns_link "${prefix}$n" "$switch_ns" "$n" "${addr[$n]}/24"
done

for n in "${nodes[@]}"; do
  cmd=("$server_bin")
  [ "${role[$n]}" = worker ] && cmd=("$worker_bin" 1000000)
  id=()
  case $n in w?) id=(DMLC_WORKER_ID=${n#w}) ;; s?) id=(CARAVAN_SERVER_ID=${n#s}) ;; esac
  timeout -k 5 "$deadline" ip netns exec "${prefix}$n" env \
    DMLC_ROLE="${role[$n]}" DMLC_PS_ROOT_URI="${addr[sched]}" DMLC_PS_ROOT_PORT=9000 \
    DMLC_NUM_WORKER=3 DMLC_NUM_SERVER=2 DMLC_INTERFACE=eth1 PS_VERBOSE=1 "${id[@]}" \
    CARAVAN_ELASTIC=1 PS_HEARTBEAT_INTERVAL=1 PS_HEARTBEAT_TIMEOUT=3 CARAVAN_OP_TIMEOUT=30 \
    BYTEPS_PARTITION_BYTES=4096 REGROUP_STOP_FILE="$logdir/stop" \
    "${cmd[@]}" >"$logdir/$n.log" 2>&1 &
  pid_of[$n]=$!
done

wait_for "worker 1's step 3" 60 grep -q "^step 3 done" "$logdir/w1.log"
ip -n "$switch_ns" link set w1 down || fail "cannot cut worker 1's link"
cut_w1=$(date +%s.%N)
wait_for "the regroup without worker 1" 30 grep -q "(regroup 1)" "$logdir/w0.log"
wait_for "a step of the two workers left" 30 after "$logdir/w0.log" "(regroup 1)" "done as rank 0 of 2"
w1_s=$(awk -v s="$cut_w1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

ip -n "$switch_ns" link set s1 down || fail "cannot cut server 1's link"
cut_s1=$(date +%s.%N)
wait_for "the regroup without server 1" 30 grep -q "(regroup 2)" "$logdir/w0.log"
wait_for "a step on server 0 alone" 30 after "$logdir/w0.log" "(regroup 2)" "done as rank 0 of 2"
s1_s=$(awk -v s="$cut_s1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

ip -n "$switch_ns" link set w1 up && ip -n "$switch_ns" link set s1 up ||
  fail "cannot restore the links"
declare -A rc_of=()
reap() { wait "${pid_of[$1]}"; rc_of[$1]=$?; unset "pid_of[$1]"; }
# The two cut off end first, while the job they were in still runs.
reap w1
reap s1
touch "$logdir/stop"
for n in sched s0 w0 w2; do reap $n; done
for n in sched s0 w0 w2; do
  [ "${rc_of[$n]}" -eq 0 ] || fail "$n (${role[$n]}) exited with status ${rc_of[$n]}"
done
for n in w1 s1; do
  rc=${rc_of[$n]}
  { [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; } ||
    fail "$n (${role[$n]}, cut off) exited with status $rc: want an error of its own, not 0 or the deadline"
done
grep -q "steps checked as rank 0 of 2, regrouped 2 time(s)" "$logdir/w0.log" ||
  fail "worker 0 did not end as rank 0 of 2 after two regroups"
grep -q "steps checked as rank 1 of 2, regrouped 2 time(s)" "$logdir/w2.log" ||
  fail "worker 2 did not end as rank 1 of 2 after two regroups"
grep -q "steps checked" "$logdir/w1.log" && fail "worker 1, cut off, finished its steps"
grep -q "refused this node: this scheduler runs a job of its own" "$logdir/s1.log" ||
  fail "server 1, cut off, was not refused by the scheduler once its link came back"
grep -q "lost worker 1 .*no heartbeat for" "$logdir/sched.log" ||
  fail "the scheduler did not lose worker 1 for its silence"
grep -q "lost server 1 .*no heartbeat for" "$logdir/sched.log" ||
  fail "the scheduler did not lose server 1 for its silence"
echo "netns_link_cut: worker 1's link cut: the other two trained on ${w1_s} s later" \
  "(PS_HEARTBEAT_TIMEOUT=3); server 1's link cut: ${s1_s} s later; every sum exact"
for n in w1 s1; do
  echo "----- ${role[$n]} ${n#?}, cut off, ends with -----"
  grep -E "refused this node|failed" "$logdir/$n.log" | tail -n 1
done
echo "netns_link_cut: OK"
