#!/usr/bin/env bash
# usage: netns_job.sh CARAVAN_SERVER SUM_CHECK_WORKER [wrong-interface|mixed]
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
# With `wrong-interface`, the job runs once without DMLC_INTERFACE instead:
# every node advertises its decoy, reaches the scheduler (DMLC_PS_ROOT_URI
# is right) but none can reach another over the van. Start-up must fail
# within CARAVAN_CONNECT_TIMEOUT, every server and worker exiting non-zero
# (no signal) and naming the peer it could not reach over the van.
#
# With `mixed`, server 0 runs on worker 0's host (its namespace) and the
# job runs once, on plain links, with BYTEPS_ENABLE_MIXED_MODE=1: server 1,
# the dedicated one, must hold 40% of the bytes (3 worker hosts beside 1
# server host, engine/worker/server_shares.cc) and every sum stay exact.
#
# Exits 77 (CTest: skipped) with the reason where namespaces, veths, bridges
# or tbf cannot be set up here.
set -u
server_bin=$1 worker_bin=$2 mode=${3:-}

job_deadline=30       # seconds each node may run, per phase
rate=200mbit
rounds=3              # sum_check_worker rounds per phase
max_elements=131072   # caps the largest tensors at 0.5-1 MiB: about 7 MB per worker per round

skip() { echo "netns_job: SKIP: $*"; exit 77; }

source "$(dirname "$0")/../../scripts/lib/netns.sh"
netns_require tc
netns_executables netns_job "$server_bin" "$worker_bin"

# The PID keeps names apart from parallel runs; inside a namespace the
# interface names need not be unique.
prefix="cvnj$$"
netns_job_hosts "$prefix" 10.77.0
declare -A decoy=([sched]=10.78.0.1 [s0]=10.78.0.11 [s1]=10.78.0.12
                  [w0]=10.78.0.21 [w1]=10.78.0.22 [w2]=10.78.0.23)
declare -A home=()  # a node that runs on another's host (namespace)
if [ "$mode" = mixed ]; then
  home[s0]=w0
  addr[s0]=${addr[w0]}
fi
ns_of() { echo "${prefix}${home[$1]:-$1}"; }

netns_logs netns_job

# A set-up step that fails means this machine cannot host the harness: the
# test is skipped with the step's error.
setup() { netns_setup "$@"; }

netns_switch "$switch_ns"
for n in "${nodes[@]}"; do
  [ -n "${home[$n]:-}" ] && continue
  ns=$(ns_of "$n")
  netns_add "$ns"
  setup ip -n "$ns" link add eth10 type veth peer name eth10p
  setup ip -n "$ns" addr add "${decoy[$n]}/32" dev eth10
  setup ip -n "$ns" link set eth10p up
  setup ip -n "$ns" link set eth10 up
  netns_link "$ns" "$switch_ns" "$n" "${addr[$n]}/24"
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

# Starts every node of phase $1 (used in log names), each under a deadline
# of $2 s, workers with the arguments in worker_args, and the variables
# after these two added to the job's.
start_nodes() {
  local phase=$1 deadline=$2 n
  shift 2
  pid_of=()
  for n in "${nodes[@]}"; do
    local cmd=("$server_bin")
    [ "${role[$n]}" = worker ] && cmd=("$worker_bin" "${worker_args[@]}")
    timeout -k 5 "$deadline" ip netns exec "$(ns_of "$n")" env \
      DMLC_ROLE="${role[$n]}" DMLC_PS_ROOT_URI="${addr[sched]}" DMLC_PS_ROOT_PORT=9000 \
      DMLC_NUM_WORKER=3 DMLC_NUM_SERVER=2 PS_VERBOSE=1 "$@" \
      "${cmd[@]}" >"$logdir/$phase-$n.log" 2>&1 &
    pid_of[$n]=$!
  done
}

# Waits for the nodes of phase $1, started with a deadline of $2 s, into
# rc_of, saying which ran past it (and then returning 1). Each runs under
# `timeout`, so this ends by the deadline + 5 s.
declare -A rc_of=()
wait_nodes() {
  local phase=$1 deadline=$2 n late=0
  for n in "${nodes[@]}"; do
    wait "${pid_of[$n]}"
    rc_of[$n]=$?
    unset "pid_of[$n]"
    if [ "${rc_of[$n]}" -eq 124 ] || [ "${rc_of[$n]}" -eq 137 ]; then
      echo "netns_job: $phase: $n (${role[$n]} at ${addr[$n]}) still running after $deadline s"
      late=1
    fi
  done
  return $late
}

run_job() {  # $1: phase name, used in log names
  local phase=$1 n rc status=0 start
  start=$(date +%s.%N)
  worker_args=("$rounds" "$max_elements")
  start_nodes "$phase" "$job_deadline" DMLC_INTERFACE=eth1 CARAVAN_CONNECT_TIMEOUT=20 \
    CARAVAN_OP_TIMEOUT=25 "${job_env[@]}"
  wait_nodes "$phase" "$job_deadline" || status=1
  for n in "${nodes[@]}"; do
    rc=${rc_of[$n]}
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then
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
        # BYTEPS_PARTITION_BYTES is unset: a job across hosts takes small partitions.
        grep -q "partitions of at most 131072 bytes (BYTEPS_PARTITION_BYTES is not set; the job's servers and workers span $span_hosts hosts)" "$log" ||
          fail "$phase: $n did not choose the multi-host partition size"
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

# Nodes advertise their decoys. Each is given a deadline well past the
# start-up one, so a start-up that passes (and then waits for a push_pull
# that cannot arrive) shows up as "still running".
run_wrong_interface_job() {
  local connect_timeout=5 deadline=25 n rc status=0 start elapsed log
  start=$(date +%s.%N)
  worker_args=(1 1024)
  start_nodes wrong-interface "$deadline" CARAVAN_CONNECT_TIMEOUT=$connect_timeout \
    CARAVAN_OP_TIMEOUT=600
  wait_nodes wrong-interface "$deadline" || status=1
  for n in "${nodes[@]}"; do
    rc=${rc_of[$n]}
    if [ "$rc" -eq 0 ] || { [ "$rc" -gt 128 ] && [ "$rc" -ne 137 ]; }; then
      echo "netns_job: wrong-interface: $n (${role[$n]}) exited with status $rc (want 1..128)"
      status=1
    fi
  done
  elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  [ "$status" -eq 0 ] || fail "wrong-interface: start-up did not fail cleanly"
  # Start-up (process start, registration) plus the probe's deadline.
  awk -v e="$elapsed" -v l="$((connect_timeout + 8))" 'BEGIN { exit !(e <= l) }' ||
    fail "wrong-interface: the job took $elapsed s to fail, CARAVAN_CONNECT_TIMEOUT is $connect_timeout s"
  local hinted=0
  for n in "${nodes[@]}"; do
    [ "${role[$n]}" = scheduler ] && continue
    log="$logdir/wrong-interface-$n.log"
    grep -q "joined the job" "$log" && fail "wrong-interface: $n passed start-up"
    grep -q "over the van from .*${decoy_prefix}\|cannot reach .*${decoy_prefix}.* over the van" "$log" ||
      fail "wrong-interface: $n did not name a peer it could not reach over the van"
    grep -q "DMLC_INTERFACE" "$log" && hinted=1
  done
  [ "$hinted" -eq 1 ] || fail "wrong-interface: no node pointed at DMLC_INTERFACE"
  echo "netns_job: wrong-interface: every node advertised its decoy; start-up failed in" \
    "$elapsed s (CARAVAN_CONNECT_TIMEOUT=$connect_timeout), each naming an unreachable peer"
  echo "----- a worker's account -----"
  grep -h "over the van" "$logdir/wrong-interface-w0.log"
}

if [ "$mode" = wrong-interface ]; then
  decoy_prefix=10.78.0.
  run_wrong_interface_job
  echo "netns_job: OK"
  exit 0
fi

job_env=() span_hosts=5
if [ "$mode" = mixed ]; then
  job_env=(BYTEPS_ENABLE_MIXED_MODE=1) span_hosts=4
  run_job mixed
  summary="mixed mode: dedicated servers (1) hold 40% of the bytes, servers on the 3 worker hosts (1) 60%"
  grep -qF "$summary" "$logdir"/mixed-w*.log || fail "mixed: no worker said '$summary'"
  echo "netns_job: mixed: $summary"
  echo "netns_job: OK"
  exit 0
fi

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
