#!/usr/bin/env bash
# The emulated-cluster benchmark: Caravan against Gloo's ring allreduce over
# the same shaped links, in one invocation (docs/cluster-bench.md).
#
# usage: bench/cluster/run.sh [--hosts N] [--rates 1gbit[,500mbit...]]
#          [--workloads 4M,64M,resnet50,bert-large,mlp,rs64M,ag64M,a2a64M]
#          [--modes dedicated,colocated,mixedK]
#          [--iters N] [--warmup N] [--bin DIR] [--env VAR=VALUE]... [--trace DIR]
#          [--keep-logs DIR] [--sysctl KEY=VALUE]... [--plot FILE.png] [--aligned]
#          [--no-gloo] [--compress key=value,...] [--cpu]
#
# Hosts are network namespaces joined by a Linux bridge that lives in a
# namespace of its own (nothing is added to this machine's network): N
# worker hosts w0.., N server hosts s0.. and a scheduler host. Every host's
# link is shaped with tc tbf to the rate in both directions (on the host's
# side for what it sends, on the bridge's side for what it receives), so a
# host sends and receives at most the rate at once, like a full-duplex NIC.
#
# For each rate and workload it runs, one after the other on the same links:
#   gloo       Gloo's ring allreduce, one rank per worker host (a model's
#              gradients as one fused buffer);
#   dedicated  Caravan, one worker per worker host, one server per server host;
#   colocated  Caravan, a worker and a server on each worker host.
#   mixedK     Caravan, a worker and a server on each worker host and K
#              dedicated server hosts besides, BYTEPS_ENABLE_MIXED_MODE=1:
#              the dedicated servers hold the share x of the bytes that
#              loads every link equally (engine/worker/server_shares.cc).
# Workloads rsNM and agNM reduce-scatter or allgather one tensor of N MiB
# (one equal shard a worker) instead of allreducing it: Gloo's
# reduce-scatter and allgather against Caravan's through the servers (C API
# 1.4); their bounds are the bytes each link must carry, (N-1)/N of the
# tensor per rank for a ring (and colocated servers), the whole tensor from
# each worker for a reduce-scatter through dedicated servers.
# Workload mlp (or mlpW, layers W wide) trains a model instead, issue 34's
# loop (bench/cluster/train.py: 6 x Linear(2048, 2048) with ReLU, batch 8,
# SGD, one torch thread per process) with the interpreter that has torch:
#   gloo       is then torch DistributedDataParallel over gloo;
#   dedicated, colocated   byteps.torch's DistributedOptimizer;
#   <mode>+ddp DistributedDataParallel over init_process_group("caravan");
# MB/s is gradient bytes / step time, so the ratio is one of step rates.
# and prints a table: the median step's algorithm bandwidth (bytes of the
# workload / step time) of each, the ratio, and each one's fraction of its
# link bound. The bounds: with dedicated servers each worker sends and
# receives each byte once (bound = rate); a ring and colocated servers send
# and receive 2(N-1)/N of it (bound = rate * N / (2(N-1))); mixed, the
# busiest link carries x + 2(1-x)(N-1)/N of it (bound = rate / that).
#
# --trace DIR writes, per run, DIR/<rate>-<workload>-<system>.csv: every host
# link's bytes sent and received, sampled every 0.1 s; .links: per host,
# the bytes and how much of the run each direction was near the link rate
# (link_summary.awk); .qdisc: every link's tbf statistics (drops, queue)
# after the run, counted since the links were shaped.
# --aligned starts every step of both systems with a barrier (not timed), so
# the figures leave out the ranks' own start skew.
# --plot FILE.png draws the table as grouped bars (gnuplot, Debian's
# gnuplot-nox): Caravan and Gloo for each rate, workload and servers.
# --compress key=value,... (e.g. byteps_compressor_type=onebit,
# byteps_error_feedback_type=vanilla): each Caravan mode runs again with
# every tensor declared with those compression parameters
# (docs/compression.md), as a row "<mode>+<compressor>" whose last column
# is its speed-up over the same mode uncompressed in this run.
# --cpu samples every thread of every process of each run (/proc, and
# perf's count of system calls where perf runs) and prints, after the
# table, what each role's threads used in the timed steps: user and
# system seconds, ns of CPU per gradient byte (a role's CPU over workers x
# steps x workload bytes, so worker, server and Gloo figures compare),
# core-ms per step, wake-ups (context switches) and system calls per MB
# (bench/cluster/cpu_sample.py). With a model's training (mlp) it first runs
# the same steps with no communication, and each table's "less compute" row
# is the machine's CPU per step less that run's: what communication cost.
# Run it with --rates 100gbit for the CPU-bound case.
# --env VAR=VALUE is given to every Caravan node (try a setting);
# --sysctl KEY=VALUE is set in every host's namespace (try a kernel setting).
#
# Needs root (namespaces); exits 77 saying why where they cannot be made.
# Everything it creates is removed on every exit path.
set -u

hosts=4 rates=1gbit workloads=4M,64M,resnet50,bert-large modes=dedicated,colocated
iters=5 warmup=1 bin="" trace_dir="" keep_logs="" gloo=1 plot="" aligned=0
extra_env=() sysctls=() compress="" cpu=0
die() { echo "cluster-bench: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=${2:?}; shift ;;
    --rates) rates=${2:?}; shift ;;
    --workloads) workloads=${2:?}; shift ;;
    --modes) modes=${2:?}; shift ;;
    --iters) iters=${2:?}; shift ;;
    --warmup) warmup=${2:?}; shift ;;
    --bin) bin=${2:?}; shift ;;
    --env) [[ ${2:-} == *=* ]] || die "--env wants VAR=VALUE, got '${2:-}'"; extra_env+=("$2"); shift ;;
    --sysctl) [[ ${2:-} == *=* ]] || die "--sysctl wants KEY=VALUE, got '${2:-}'"; sysctls+=("$2"); shift ;;
    --trace) trace_dir=${2:?}; shift ;;
    --keep-logs) keep_logs=${2:?}; shift ;;
    --plot) plot=${2:?}; shift ;;
    --no-gloo) gloo=0 ;;
    --compress) [[ ${2:-} == *=* ]] || die "--compress wants key=value,..., got '${2:-}'"; compress=$2; shift ;;
    --aligned) aligned=1 ;;
    --cpu) cpu=1 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (--help lists them)" ;;
  esac
  shift
done
[[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 2 ] && [ "$hosts" -le 16 ] ||
  die "--hosts '$hosts' is not a count from 2 to 16"
[[ $iters =~ ^[0-9]+$ ]] && [ "$iters" -ge 1 ] || die "--iters '$iters' is not a count of at least 1"
[[ $warmup =~ ^[0-9]+$ ]] || die "--warmup '$warmup' is not a count"
IFS=, read -ra rate_list <<<"$rates"
IFS=, read -ra workload_list <<<"$workloads"
IFS=, read -ra mode_list <<<"$modes"
for m in "${mode_list[@]}"; do
  [ "$m" = dedicated ] || [ "$m" = colocated ] || [[ $m =~ ^mixed[0-9]+$ ]] ||
    die "--modes: '$m' is not dedicated, colocated or mixedK (K dedicated server hosts)"
  if [[ $m =~ ^mixed([0-9]+)$ ]]; then
    [ "${BASH_REMATCH[1]}" -ge 1 ] && [ "${BASH_REMATCH[1]}" -le "$hosts" ] ||
      die "--modes: $m wants 1 to --hosts ($hosts) dedicated server hosts"
  fi
done
# The fraction of the bytes K dedicated servers hold beside N worker hosts
# (dedicated_fraction in engine/worker/server_shares.cc), and the share of a
# worker's bytes the busiest link then carries.
mixed_x() { awk -v n="$1" -v k="$2" 'BEGIN { a = 2 * (n - 1) / n; x = a / (n / k + a - 1)
  if (x > 1) x = 1; if (x < 0) x = 0; printf "%.6f", x }'; }
mixed_load() { awk -v n="$1" -v x="$(mixed_x "$1" "$2")" 'BEGIN { printf "%.6f", x + 2 * (1 - x) * (n - 1) / n }'; }

# Bytes per second of a tc rate (kbit, mbit, gbit or bit).
rate_bytes() {
  awk -v r="$1" 'BEGIN {
    if (match(r, /^[0-9.]+/)) { n = substr(r, 1, RLENGTH); u = substr(r, RLENGTH + 1) } else exit 1
    m = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : (u == "bit") ? 1 : -1
    if (m < 0 || n <= 0) exit 1
    printf "%.0f", n * m / 8 }'
}
for r in "${rate_list[@]}"; do
  rate_bytes "$r" >/dev/null || die "--rates: '$r' is not a tc rate such as 1gbit or 500mbit"
done

root=$(cd "$(dirname "$0")/../.." && pwd)
[ -n "$bin" ] || bin=$root/build/bin
server_bin=$bin/caravan-server worker_bin=$bin/caravan-cluster-worker gloo_bin=$bin/caravan-gloo-ring
for b in "$server_bin" "$worker_bin"; do
  [ -x "$b" ] || die "$b is not built (bash scripts/build.sh, or --bin DIR)"
done
if [ "$gloo" = 1 ] && [ ! -x "$gloo_bin" ]; then
  die "$gloo_bin is not built: Gloo was not found at configure time (install libgloo-dev and rebuild, or --no-gloo)"
fi
# A model's training (mlp, mlpW) runs in the interpreter the build found with torch.
mlp_width() { [[ $1 =~ ^mlp([0-9]*)$ ]] && echo "${BASH_REMATCH[1]:-2048}"; }
python=""
for w in "${workload_list[@]}"; do  # the worker's own parser judges a workload
  if [ -n "$(mlp_width "$w")" ]; then
    paths=$bin/../python/caravan/_paths.py
    python=$(sed -n 's/^PYTHON = "\(.*\)"$/\1/p' "$paths" 2>/dev/null)
    [ -n "$python" ] || die "--workloads $w: $paths names no interpreter with torch (install python3-torch and configure again)"
    continue
  fi
  err=$("$worker_bin" --workload "$w" --iters 0 2>&1 | head -n 1 | grep -v "iters must be")
  [ -z "$err" ] || die "--workloads: $err"
done

skip() { echo "cluster-bench: SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "creating network namespaces needs root (running as uid $(id -u))"
command -v ip >/dev/null || skip "no 'ip' command (iproute2 is not installed)"
command -v tc >/dev/null || skip "no 'tc' command (iproute2 is not installed)"

prefix="cvcb$$"
switch_ns="${prefix}sw"
host_names=(sch)
declare -A addr=([sch]=10.79.0.1)
for ((i = 0; i < hosts; i++)); do
  host_names+=("w$i" "s$i")
  addr[w$i]=10.79.0.$((10 + i))
  addr[s$i]=10.79.0.$((40 + i))
done
ns_of() { echo "${prefix}$1"; }

work=$(mktemp -d /tmp/cluster-bench.XXXXXX)
source "$root/scripts/lib/netns.sh"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  netns_remove_all
  if [ -n "$keep_logs" ]; then mkdir -p "$keep_logs" && cp -r "$work"/. "$keep_logs"/; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

setup() { netns_setup "$@"; }
netns_switch "$switch_ns"
for h in "${host_names[@]}"; do
  netns_host "$(ns_of "$h")" "$switch_ns" "$h" "${addr[$h]}/24"
  for kv in "${sysctls[@]}"; do setup ip netns exec "$(ns_of "$h")" sysctl -q -w "$kv"; done
done

# Shapes every link to rate $1, both directions. burst: what the link
# carries in 2 ms, at least one 64 KiB GSO packet (with 0.5 ms, the
# shaper's timer on a busy 2-core machine held a ring to half the rate). The host side's queue
# (50 ms at the rate) stands for a NIC, which pushes back on the sockets
# rather than dropping; the bridge side's (5 ms) for a switch port's buffer,
# where incast overflows as it does in a real switch.
shape() {
  local rate=$1 bps burst host_limit port_limit h
  bps=$(rate_bytes "$rate")
  burst=$(( bps / 500 > 65536 ? bps / 500 : 65536 ))
  host_limit=$(( bps / 20 > 4 * burst ? bps / 20 : 4 * burst ))
  port_limit=$(( bps / 200 > 2 * burst ? bps / 200 : 2 * burst ))
  for h in "${host_names[@]}"; do
    setup ip netns exec "$(ns_of "$h")" tc qdisc replace dev eth1 root tbf rate "$rate" burst "$burst" limit "$host_limit"
    setup ip netns exec "$switch_ns" tc qdisc replace dev "$h" root tbf rate "$rate" burst "$burst" limit "$port_limit"
  done
}

# Samples every host link's counters (seen from the bridge side: what the
# bridge port receives is what the host sent) into $1 until killed.
start_sampler() {
  ip netns exec "$switch_ns" bash -c '
    echo "time_s,host,sent_bytes,received_bytes"
    while :; do
      t=$(date +%s.%N)
      while read -r line; do
        set -- ${line/:/ }
        case $1 in br0|lo|Inter-|face) continue ;; esac
        echo "$t,$1,$2,${10}"
      done < <(tail -n +3 /proc/net/dev)
      sleep 0.1
    done' >"$1" 2>/dev/null &
  sampler=$!
  pids+=("$sampler")
}
stop_sampler() { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; }

# The tbf statistics (sent, dropped, overlimits, backlog) of every link.
qdisc_stats() {
  local h
  for h in "${host_names[@]}"; do
    echo "# $h egress (host side)"
    ip netns exec "$(ns_of "$h")" tc -s qdisc show dev eth1
    echo "# $h ingress (bridge side)"
    ip netns exec "$switch_ns" tc -s qdisc show dev "$h"
  done
}

# Starts "$@" in host $1's namespace with its output in $2, under deadline.
start_in() {
  local h=$1 log=$2
  shift 2
  timeout -k 5 "$deadline" ip netns exec "$(ns_of "$h")" "$@" >"$log" 2>&1 &
  pids+=($!)
  started+=($!)
}

# Waits for what start_in started; returns 1 naming each that failed.
wait_started() {
  local what=$1 p rc status=0
  for p in "${started[@]}"; do
    wait "$p"
    rc=$?
    if [ "$rc" -ne 0 ]; then
      [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "cluster-bench: $what: a process was still running after $deadline s" >&2
      status=1
    fi
  done
  started=()
  return $status
}

# Prints the result line's field $2 from the logs matching $1.
result_field() {
  local line
  line=$(grep -h "cluster-bench result:" $1 2>/dev/null | head -n 1)
  [ -n "$line" ] || return 1
  sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$line"
}

fail_run() {
  echo "cluster-bench: FAIL: $1; the logs:" >&2
  for f in $2; do echo "----- $f -----" >&2; tail -n 30 "$f" >&2; done
  exit 1
}

# The training loop of workload $1 (bench/cluster/train.py) with API $2.
train_cmd() {
  echo env PYTHONPATH="$bin/../python" "$python" "$root/bench/cluster/train.py" --api "$2" \
    --width "$(mlp_width "$1")" --iters "$iters" --warmup "$warmup" --label "$1"
}

# The training loop of workload $2 with API $3 as torch ranks, one per
# worker host, with the variables torchrun sets; prints MB/s. API none is
# the same steps with no communication: what the machine spends on
# computation alone (--cpu: its core-ms per step).
run_torch_ranks() {  # $1 tag, $2 workload, $3 API
  local i
  started=()
  for ((i = 0; i < hosts; i++)); do
    start_in "w$i" "$work/$1-w$i.log" env RANK="$i" WORLD_SIZE="$hosts" LOCAL_RANK=0 \
      LOCAL_WORLD_SIZE=1 MASTER_ADDR="${addr[w0]}" MASTER_PORT=29500 GLOO_SOCKET_IFNAME=eth1 \
      $(train_cmd "$2" "$3")
  done
  wait_started "$1" || fail_run "$1 failed" "$work/$1-*.log"
  result_field "$work/$1-*.log" MBps || fail_run "$1 printed no result" "$work/$1-*.log"
}

run_gloo() {  # $1 rate, $2 workload; prints MB/s
  local tag=$1-$2-gloo store=$work/store-$1-$2 i
  mkdir -p "$store"
  started=()
  if [ -n "$(mlp_width "$2")" ]; then  # torch DDP over gloo
    run_torch_ranks "$tag" "$2" ddp
    return
  fi
  for ((i = 0; i < hosts; i++)); do
    start_in "w$i" "$work/$tag-w$i.log" "$gloo_bin" --rank "$i" --size "$hosts" --store "$store" \
      --iface eth1 --timeout "$deadline" --workload "$2" --iters "$iters" --warmup "$warmup" \
      --aligned "$aligned"
  done
  wait_started "$tag" || fail_run "$tag failed" "$work/$tag-*.log"
  result_field "$work/$tag-*.log" MBps || fail_run "$tag printed no result" "$work/$tag-*.log"
}

run_caravan() {  # $1 rate, $2 workload, $3 mode[+compressed|+ddp]; prints MB/s
  local tag=$1-$2-$3 i server_host mode=${3%+*} worker_args=() worker_cmd
  [ "$3" = "$mode+compressed" ] && worker_args=(--compress "$compress")
  worker_cmd=("$worker_bin" --workload "$2" --iters "$iters" --warmup "$warmup" --aligned "$aligned")
  if [ -n "$(mlp_width "$2")" ]; then
    worker_cmd=($(train_cmd "$2" byteps))
    # torch's env:// store is served by rank 0, on w0, not at the scheduler's
    # host (where caravan.torch.distributed would point MASTER_ADDR).
    [ "$3" = "$mode+ddp" ] && worker_cmd=(env MASTER_ADDR="${addr[w0]}" MASTER_PORT=29500
                                          $(train_cmd "$2" caravan))
  fi
  local servers=$hosts dedicated=0 mixed=()
  if [[ $mode =~ ^mixed([0-9]+)$ ]]; then
    dedicated=${BASH_REMATCH[1]} servers=$((hosts + dedicated)) mixed=(BYTEPS_ENABLE_MIXED_MODE=1)
  fi
  local job=(env DMLC_PS_ROOT_URI="${addr[sch]}" DMLC_PS_ROOT_PORT=9100 DMLC_NUM_WORKER="$hosts"
             DMLC_NUM_SERVER="$servers" DMLC_INTERFACE=eth1 CARAVAN_OP_TIMEOUT="$deadline"
             "${mixed[@]}" "${extra_env[@]}")
  started=()
  start_in sch "$work/$tag-sch.log" "${job[@]}" DMLC_ROLE=scheduler "$server_bin"
  for ((i = 0; i < hosts; i++)); do
    server_host=s$i
    [ "$mode" = dedicated ] || server_host=w$i
    start_in "$server_host" "$work/$tag-server$i.log" "${job[@]}" DMLC_ROLE=server "$server_bin"
    start_in "w$i" "$work/$tag-worker$i.log" "${job[@]}" DMLC_ROLE=worker DMLC_WORKER_ID="$i" \
      "${worker_cmd[@]}" "${worker_args[@]}"
  done
  for ((i = 0; i < dedicated; i++)); do
    start_in "s$i" "$work/$tag-server$((hosts + i)).log" "${job[@]}" DMLC_ROLE=server "$server_bin"
  done
  wait_started "$tag" || fail_run "$tag failed" "$work/$tag-*.log"
  result_field "$work/$tag-worker*.log" MBps || fail_run "$tag printed no result" "$work/$tag-*.log"
}

# --cpu: samples the run's processes until cpu_report; the report goes to
# $work/cpu-reports, printed after the table.
start_cpu() {
  mkdir -p "$work/cpu-$1"
  mkfifo "$work/cpu-$1/ready"
  python3 "$root/bench/cluster/cpu_sample.py" record "$work/cpu-$1" $$ "$server_bin" \
    "$worker_bin" "$gloo_bin" ${python:+"$python"} &
  cpu_sampler=$!
  pids+=("$cpu_sampler")
  # A short run can end before a sampler still starting has looked once:
  # the run starts when the sampler says, through the fifo, that it has.
  local said=""
  read -r -t 10 said <"$work/cpu-$1/ready" || true
  [ "$said" = ready ] || fail_run "$1: the --cpu sampler did not start within 10 s" ""
}
cpu_report() {  # $1 tag, $2 the logs with the result line
  kill -TERM "$cpu_sampler" 2>/dev/null
  wait "$cpu_sampler" 2>/dev/null
  local f
  for f in window_start window_end prep_cpu_s iters bytes workers; do
    local "$f=$(result_field "$2" "$f")"
  done
  python3 "$root/bench/cluster/cpu_sample.py" report "$work/cpu-$1" \
    --window "$window_start" "$window_end" --steps "$iters" --bytes "$bytes" \
    --workers "$workers" --prep-cpu "$prep_cpu_s" --title "$1" \
    ${compute_ms:+--compute-step-ms "$compute_ms"} >"$work/cpu-$1.txt" ||
    fail_run "$1: --cpu measured nothing" "$2"
  cat "$work/cpu-$1.txt" >>"$work/cpu-reports"
  echo >>"$work/cpu-reports"
}

# Runs one system, with the samplers and the queue statistics when asked.
measure() {  # $1 rate, $2 workload, $3 system (gloo|dedicated|colocated)
  local tag=$1-$2-$3 mbps
  [ -n "$trace_dir" ] && start_sampler "$trace_dir/$tag.csv"
  [ "$cpu" = 1 ] && start_cpu "$tag"
  case $3 in
    gloo) mbps=$(run_gloo "$1" "$2") ;;
    compute) mbps=$(run_torch_ranks "$tag" "$2" none) ;;
    *) mbps=$(run_caravan "$1" "$2" "$3") ;;
  esac
  local rc=$?
  if [ "$cpu" = 1 ] && [ $rc -eq 0 ]; then
    local logs="$work/$tag-worker*.log" compute_ms=""
    [ "$3" = gloo ] || [ "$3" = compute ] && logs="$work/$tag-w*.log"
    [ -f "$work/compute-ms-$1-$2" ] && compute_ms=$(cat "$work/compute-ms-$1-$2")
    cpu_report "$tag" "$logs"
  fi
  if [ -n "$trace_dir" ]; then
    stop_sampler
    qdisc_stats >"$trace_dir/$tag.qdisc"
    awk -F, -v rate_bytes="$(rate_bytes "$1")" -f "$root/bench/cluster/link_summary.awk" \
      "$trace_dir/$tag.csv" >"$trace_dir/$tag.links"
  fi
  [ $rc -eq 0 ] || exit 1
  echo "$mbps"
}

[ -n "$trace_dir" ] && mkdir -p "$trace_dir"
if [ -n "$plot" ]; then
  command -v gnuplot >/dev/null || die "--plot: gnuplot not found (apt-get install gnuplot-nox)"
  : >"$work/plot.dat"
fi
n=$hosts
ring_share=$(awk -v n="$n" 'BEGIN { printf "%.6f", n / (2 * (n - 1)) }')
echo "cluster-bench: $n worker hosts, $n server hosts (dedicated) or servers on the worker hosts" \
  "(colocated); median of $iters iterations after $warmup warm-up; MB/s = workload bytes / step time"
compressor=""
if [ -n "$compress" ]; then
  compressor=$(tr ',' '\n' <<<"$compress" | sed -n 's/^byteps_compressor_type=//p')
  echo "cluster-bench: compressed rows: every tensor declared with $compress"
fi
printf "%-8s %-11s %-17s %12s %12s %7s %14s %12s %s\n" rate workload servers "caravan MB/s" \
  "gloo MB/s" ratio "caravan/bound" "gloo/bound" "${compress:+vs uncompressed}"
for rate in "${rate_list[@]}"; do
  shape "$rate"
  bps=$(rate_bytes "$rate")
  for w in "${workload_list[@]}"; do
    # Deadline: 8x the time a ring at the link rate would take, plus start-up.
    case $w in  # the workload's bytes (bench/model_layers.h for the models)
      resnet50) wb=102228128 ;;
      bert-large) wb=1340567552 ;;
      mlp*) wb=$(( 6 * ($(mlp_width "$w") + 1) * $(mlp_width "$w") * 4 )) ;;
      rs*|ag*) t=${w:2}; wb=$(( ${t%M} * 1048576 )) ;;
      a2a*) t=${w:3}; wb=$(( ${t%M} * 1048576 )) ;;
      *) wb=$(( ${w%M} * 1048576 )) ;;
    esac
    # A ring's reduce-scatter or allgather sends and receives (N-1)/N of the
    # tensor per rank, as do colocated servers holding each worker's shard
    # on its host; dedicated servers' allgather too, but their reduce-scatter
    # sends the whole tensor from each worker (caravan.h). An all-to-all
    # sends and receives (N-1)/N per rank too, its blocks relayed by a
    # server on the receiver's host or, dedicated, by one off both hosts.
    gloo_bound=$(awk -v b="$bps" -v s="$ring_share" 'BEGIN { print b * s }')
    sharded=""
    case $w in rs*|ag*|a2a*) sharded=${w:0:2}
      gloo_bound=$(awk -v b="$bps" -v n="$n" 'BEGIN { print b * n / (n - 1) }') ;;
    esac
    deadline=$(awk -v b="$wb" -v r="$bps" -v k="$((iters + warmup))" 'BEGIN { printf "%d", 60 + 8 * k * 2 * b / r }')
    [ -n "$(mlp_width "$w")" ] && deadline=$((deadline + 20 * (iters + warmup)))  # the model's compute
    gloo_mbps=""
    if [ "$cpu" = 1 ] && [ -n "$(mlp_width "$w")" ]; then
      measure "$rate" "$w" compute >/dev/null || exit 1
      awk '$1 == "machine" && $2 == "all" { print $8 }' "$work/cpu-$rate-$w-compute.txt" \
        >"$work/compute-ms-$rate-$w"
    fi
    if [ "$gloo" = 1 ]; then gloo_mbps=$(measure "$rate" "$w" gloo) || exit 1; fi
    for m in "${mode_list[@]}"; do
      bound=$bps
      [ "$m" = colocated ] && bound=$(awk -v b="$bps" -v s="$ring_share" 'BEGIN { print b * s }')
      [[ $m =~ ^mixed([0-9]+)$ ]] &&
        bound=$(awk -v b="$bps" -v l="$(mixed_load "$n" "${BASH_REMATCH[1]}")" 'BEGIN { print b / l }')
      if [ -n "$sharded" ]; then
        [[ $m =~ ^mixed ]] && die "--workloads $w: mixed modes are for allreduces"
        [ "$m" = colocated ] || [ "$sharded" != rs ] && bound=$gloo_bound
      fi
      plain=""
      train_ddp=""
      [ -n "$(mlp_width "$w")" ] && train_ddp=1
      for variant in "$m" ${compress:+"$m+compressed"} ${train_ddp:+"$m+ddp"}; do
        mbps=$(measure "$rate" "$w" "$variant") || exit 1
        label=$m
        [ "$variant" = "$m+compressed" ] && label="$m+$compressor"
        [ "$variant" = "$m+ddp" ] && label="$m+ddp"
        awk -v r="$rate" -v w="$w" -v m="$label" -v c="$mbps" -v g="$gloo_mbps" -v b="$bound" \
          -v p="$plain" -v gb="$gloo_bound" 'BEGIN {
            vs = (p == "") ? "" : sprintf("%.2fx", c / p)
            if (g == "") printf "%-8s %-11s %-17s %12.1f %12s %7s %14.2f %12s %s\n", r, w, m, c, "-", "-", c * 1e6 / b, "-", vs
            else printf "%-8s %-11s %-17s %12.1f %12.1f %7.2f %14.2f %12.2f %s\n", r, w, m, c, g, c / g, c * 1e6 / b, g * 1e6 / gb, vs }'
        [ -n "$plot" ] && echo "\"$w $label${rate_list[1]:+ $rate}\" $mbps ${gloo_mbps:-0}" >>"$work/plot.dat"
        [ "$variant" = "$m" ] && [ -n "$compress" ] && plain=$mbps  # what compression is held to
      done
    done
  done
done

if [ "$cpu" = 1 ] && [ -f "$work/cpu-reports" ]; then
  echo
  cat "$work/cpu-reports"
fi

if [ -n "$plot" ]; then
  gnuplot <<EOF || die "--plot: gnuplot failed"
set terminal pngcairo size 1000,560 noenhanced
set output "$plot"
set title "Caravan against Gloo's ring allreduce: $n worker hosts, ${rates} links, median of $iters steps"
set ylabel "MB/s (workload bytes / step time)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.6
set grid ytics
set yrange [0:*]
set xtics rotate by -20
plot "$work/plot.dat" using 2:xtic(1) title "Caravan", "" using 3 title "Gloo ring"
EOF
  head -c 8 "$plot" | od -An -c | grep -q "P   N   G" || die "--plot: gnuplot wrote no PNG to $plot"
  echo "chart: $plot"
fi
