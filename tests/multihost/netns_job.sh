#!/usr/bin/env bash
# usage: netns_job.sh CARAVAN_SERVER SUM_CHECK_WORKER
#
# A job spread over six "hosts": the scheduler, 2 servers and 3 workers each
# in its own network namespace, joined by a Linux bridge that lives in a
# seventh namespace (so nothing is added to the host's own network). Every
# node finds its address through DMLC_INTERFACE=eth1, its veth to the bridge.
# The job runs twice: on plain links, then with every link shaped by
# `tc tbf` to 200 mbit/s in both directions. Every sum must be exact.
#
# Each namespace also holds a decoy interface, eth10, created before eth1 and
# so listed first, with an address nobody can reach: a node that took the
# first interface that is up, or matched DMLC_INTERFACE as a prefix (as
# ps-lite did), would advertise the decoy and the job would fail.
#
# Exits 77 (CTest: skipped) with the reason where namespaces, veths, bridges
# or tbf cannot be set up here.
set -u
server_bin=$1 worker_bin=$2

job_deadline=30       # seconds each node may run, per phase
rate=200mbit
rounds=3              # sum_check_worker rounds per phase
max_elements=131072   # caps the largest tensors at 0.5-1 MiB: about 7 MB per worker per round

skip() { echo "netns_job: SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "creating network namespaces needs root (running as uid $(id -u))"
command -v ip >/dev/null || skip "no 'ip' command (iproute2 is not installed)"
command -v tc >/dev/null || skip "no 'tc' command (iproute2 is not installed)"
for bin in "$server_bin" "$worker_bin"; do
  [ -x "$bin" ] || { echo "netns_job: FAIL: $bin is not an executable"; exit 1; }
done

# The PID keeps names apart from parallel runs; inside a namespace the
# interface names need not be unique.
prefix="cvnj$$"
switch_ns="${prefix}sw"
nodes=(sched s0 s1 w0 w1 w2)
declare -A role=([sched]=scheduler [s0]=server [s1]=server [w0]=worker [w1]=worker [w2]=worker)
declare -A addr=([sched]=10.77.0.1 [s0]=10.77.0.11 [s1]=10.77.0.12
                 [w0]=10.77.0.21 [w1]=10.77.0.22 [w2]=10.77.0.23)
declare -A decoy=([sched]=10.78.0.1 [s0]=10.78.0.11 [s1]=10.78.0.12
                  [w0]=10.78.0.21 [w1]=10.78.0.22 [w2]=10.78.0.23)
ns_of() { echo "${prefix}$1"; }

logdir=$(mktemp -d /tmp/netns_job.XXXXXX)
created_ns=()
declare -A pid_of=()

cleanup() {
  for n in "${!pid_of[@]}"; do kill -KILL "${pid_of[$n]}" 2>/dev/null; done
  # A process left inside a namespace would keep its interfaces alive after
  # the name is gone; every process in these namespaces is one of ours.
  for ns in "${created_ns[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Runs one set-up command under a deadline; a failure means this machine
# cannot host the harness, so the test is skipped with the command's error.
setup() {
  local err
  if ! err=$(timeout 10 "$@" 2>&1); then
    skip "set-up step '$*' failed: ${err:-timed out after 10 s}"
  fi
}

if ! err=$(timeout 10 ip netns add "$switch_ns" 2>&1); then
  skip "'ip netns add' failed: ${err:-timed out after 10 s}"
fi
created_ns+=("$switch_ns")
setup ip -n "$switch_ns" link add br0 type bridge
setup ip -n "$switch_ns" link set br0 up
for n in "${nodes[@]}"; do
  ns=$(ns_of "$n")
  setup ip netns add "$ns"
  created_ns+=("$ns")
  setup ip -n "$ns" link set lo up
  setup ip -n "$ns" link add eth10 type veth peer name eth10p
  setup ip -n "$ns" addr add "${decoy[$n]}/32" dev eth10
  setup ip -n "$ns" link set eth10p up
  setup ip -n "$ns" link set eth10 up
  setup ip -n "$ns" link add eth1 type veth peer name "$n" netns "$switch_ns"
  setup ip -n "$ns" addr add "${addr[$n]}/24" dev eth1
  setup ip -n "$ns" link set eth1 up
  setup ip -n "$switch_ns" link set "$n" master br0
  setup ip -n "$switch_ns" link set "$n" up
done

print_logs() {
  for f in "$logdir"/*.log; do
    [ -e "$f" ] || continue
    echo "----- $(basename "$f" .log) -----"
    cat "$f"
  done
}
fail() {
  echo "netns_job: FAIL: $*"
  print_logs
  exit 1
}

run_job() {  # $1: phase name, used in log names
  local phase=$1 n rc status=0 start
  start=$(date +%s.%N)
  pid_of=()
  for n in "${nodes[@]}"; do
    local cmd=("$server_bin")
    [ "${role[$n]}" = worker ] && cmd=("$worker_bin" "$rounds" "$max_elements")
    timeout -k 5 "$job_deadline" ip netns exec "$(ns_of "$n")" env \
      DMLC_ROLE="${role[$n]}" DMLC_PS_ROOT_URI="${addr[sched]}" DMLC_PS_ROOT_PORT=9000 \
      DMLC_NUM_WORKER=3 DMLC_NUM_SERVER=2 DMLC_INTERFACE=eth1 PS_VERBOSE=1 \
      CARAVAN_CONNECT_TIMEOUT=20 CARAVAN_OP_TIMEOUT=25 \
      "${cmd[@]}" >"$logdir/$phase-$n.log" 2>&1 &
    pid_of[$n]=$!
  done
  # Each node runs under `timeout`, so every wait below ends by
  # job_deadline + 5 s.
  for n in "${nodes[@]}"; do
    wait "${pid_of[$n]}"
    rc=$?
    unset "pid_of[$n]"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "netns_job: $phase: $n (${role[$n]} at ${addr[$n]}) still running after ${job_deadline} s"
      status=1
    elif [ "$rc" -ne 0 ]; then
      echo "netns_job: $phase: $n (${role[$n]} at ${addr[$n]}) exited with status $rc"
      status=1
    fi
  done
  [ "$status" -eq 0 ] || fail "$phase: the job failed"
  for n in "${nodes[@]}"; do
    local log="$logdir/$phase-$n.log"
    case ${role[$n]} in
      worker)
        grep -q "all sums exact" "$log" || fail "$phase: $n did not report exact sums"
        grep -q "joined the job as worker [0-9]* (pid [0-9]* at ${addr[$n]}," "$log" ||
          fail "$phase: $n did not join from its eth1 address ${addr[$n]}" ;;
      server)
        grep -q "joined the job as server [0-9]* (pid [0-9]* at ${addr[$n]}," "$log" ||
          fail "$phase: $n did not join from its eth1 address ${addr[$n]}" ;;
      scheduler)
        for peer in "${nodes[@]}"; do
          [ "$peer" = sched ] && continue
          grep -q "control: connection [0-9]* from ${addr[$peer]}:" "$log" ||
            fail "$phase: the scheduler saw no connection from $peer at ${addr[$peer]}"
        done ;;
    esac
  done
  echo "netns_job: $phase: 3 workers x $rounds rounds over 2 servers, all sums exact" \
    "($(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s)"
}

run_job plain

# Shape both ends of every link, so each direction is limited.
for n in "${nodes[@]}"; do
  setup ip netns exec "$(ns_of "$n")" tc qdisc add dev eth1 root tbf rate "$rate" burst 64kb latency 100ms
  setup ip netns exec "$switch_ns" tc qdisc add dev "$n" root tbf rate "$rate" burst 64kb latency 100ms
done

run_job "tbf-$rate"

# The shaper must have held traffic back, else the second run proved nothing.
for n in s0 s1 w0 w1 w2; do
  stats=$(ip netns exec "$(ns_of "$n")" tc -s qdisc show dev eth1)
  sent=$(awk '/Sent/ { print $2; exit }' <<<"$stats")
  overlimits=$(sed -n 's/.*overlimits \([0-9]*\).*/\1/p' <<<"$stats" | head -n 1)
  echo "netns_job: $n eth1 egress: $sent bytes through tbf $rate, overlimits $overlimits"
  [ "${sent:-0}" -gt 1000000 ] || fail "tbf on $n's eth1 passed only ${sent:-0} bytes: $stats"
  [ "${overlimits:-0}" -gt 0 ] || fail "tbf on $n's eth1 never held a packet back: $stats"
done
echo "netns_job: OK"
