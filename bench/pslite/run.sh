#!/usr/bin/env bash
# bytedance/ps-lite's own benchmark program, tests/test_benchmark.cc (the one
# BytePS's ps-lite README is written around), built unchanged against
# Caravan's ps/ headers and run as that README says (scheduler, servers and
# workers started by hand, DMLC_ENABLE_RDMA unset: TCP) on this host: push,
# pull and push+pull goodput for each size, 1 worker + 1 server and 2 + 2,
# next to a raw TCP stream measured in the same run. With --original, the
# same program built against the original ps-lite runs the same jobs
# between Caravan's, and the table gives the ratio.
#
# usage: bench/pslite/run.sh --source DIR [--original BIN] [--build DIR]
#                            [--sizes LIST] [--shapes LIST] [--modes LIST] [--rdma VALUE]
#   --source DIR    a bytedance/ps-lite checkout (branch byteps)
#   --original BIN  its test_benchmark built against the original ps-lite
#   --sizes LIST    value bytes per key (default 4096,16384,65536,262144,1048576,4194304)
#   --shapes LIST   WORKERSxSERVERS (default 1x1,2x2)
#   --modes LIST    push, pull, pushpull (default all three)
#   --rdma VALUE    DMLC_ENABLE_RDMA for every node, as ps-lite users pick a van
#                   (ucx: van-ucx; default unset: TCP)
# Each job logs the program's goodput every LOG_DURATION rounds (about
# 48 MB a worker); the first line is warm-up, the median of the next four
# is reported, per worker (this 2-core machine varies by a third from one
# line to the next). DMLC_GROUP_SIZE=1 is set: the program reads it
# itself and builds no server without it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$repo/build
source_dir= original= rdma= sizes=4096,16384,65536,262144,1048576,4194304 shapes=1x1,2x2
modes=push,pull,pushpull
while [ $# -gt 0 ]; do
  case $1 in
    --source) source_dir=$2; shift 2 ;;
    --original) original=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --rdma) rdma=$2; shift 2 ;;
    *) echo "bench/pslite/run.sh: unknown option $1 (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
program=$source_dir/tests/test_benchmark.cc
[ -f "$program" ] || { echo "bench/pslite/run.sh: no $program: give --source, a bytedance/ps-lite checkout" >&2; exit 2; }
[ -z "$original" ] || [ -x "$original" ] || { echo "bench/pslite/run.sh: --original $original is not a program" >&2; exit 2; }
[ -f "$build/lib/libcaravan.so" ] || { echo "bench/pslite/run.sh: build Caravan first (bash scripts/build.sh)" >&2; exit 2; }

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
caravan=$work/test_benchmark
g++ -std=c++17 -O2 "$program" -I"$repo/api/include" -L"$build/lib" -lcaravan -pthread \
  -Wl,-rpath,"$build/lib" -o "$caravan"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_job BIN WORKERS SERVERS BYTES MODE -> mean goodput per worker (Gbit/s)
run_job() {
  local bin=$1 w=$2 s=$3 len=$4 mode=$5 port log rounds
  port=$(free_port)
  log=$work/job.log
  rounds=$(( 48 * 1024 * 1024 / (40 * s * len) ))
  [ "$rounds" -ge 1 ] || rounds=1
  pids=()
  export DMLC_NUM_WORKER=$w DMLC_NUM_SERVER=$s DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=$port \
    DMLC_INTERFACE=lo DMLC_GROUP_SIZE=1 LOG_DURATION=$rounds TOTAL_DURATION=$(( 5 * rounds ))
  if [ -n "$rdma" ]; then export DMLC_ENABLE_RDMA=$rdma; else unset DMLC_ENABLE_RDMA; fi
  : >"$log"
  DMLC_ROLE=scheduler "$bin" "$len" 1 "$mode" >>"$log" 2>&1 & pids+=($!)
  for _ in $(seq "$s"); do DMLC_ROLE=server "$bin" "$len" 1 "$mode" >>"$log" 2>&1 & pids+=($!); done
  for _ in $(seq "$w"); do DMLC_ROLE=worker "$bin" "$len" 1 "$mode" >>"$log" 2>&1 & pids+=($!); done
  local failed=0
  for p in "${pids[@]}"; do
    # A job that runs past 120 s is stopped and reported as failed.
    timeout 120 tail --pid="$p" -f /dev/null || failed=1
    wait "$p" || failed=1
  done
  pids=()
  if [ "$failed" = 1 ]; then
    echo "bench/pslite/run.sh: job $bin ${w}w${s}s $len bytes mode $mode failed:" >&2
    tail -20 "$log" >&2
    return 1
  fi
  # "... test_benchmark.cc:391] [0]<tab>Application goodput: X Gbps." from each worker,
  # whose lines Caravan prefixes "pid N]" and the original prints in its own order: drop
  # each worker's first line, the median of the rest over all workers.
  awk '/Application goodput:/ {
         pid = "-"; if (match($0, /pid [0-9]+/)) pid = substr($0, RSTART + 4, RLENGTH - 4)
         match($0, /goodput: [0-9.]+/); v = substr($0, RSTART + 9, RLENGTH - 9)
         if (seen[pid]++ >= (pid == "-" ? '"$w"' : 1)) print v }' "$log" |
    sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "nan"; else printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }' 
}

tcp_before=$("$build/bin/caravan-tcp-stream" 127.0.0.1 2 | grep -o '[0-9.]* Gbit/s' | cut -d' ' -f1)
printf "%-6s %-9s %9s %14s" shape mode bytes "Caravan Gb/s"
[ -z "$original" ] || printf " %15s %7s" "original Gb/s" ratio
printf " %11s\n" "of TCP"
for shape in ${shapes//,/ }; do
  w=${shape%x*} s=${shape#*x}
  for mode_name in ${modes//,/ }; do
    case $mode_name in push) mode=2 ;; pull) mode=3 ;; pushpull) mode=1 ;;
      *) echo "bench/pslite/run.sh: unknown mode $mode_name (push, pull, pushpull)" >&2; exit 2 ;; esac
    for len in ${sizes//,/ }; do
      c=$(run_job "$caravan" "$w" "$s" "$len" "$mode")
      printf "%-6s %-9s %9s %14s" "${w}w${s}s" "$mode_name" "$len" "$c"
      if [ -n "$original" ]; then
        o=$(run_job "$original" "$w" "$s" "$len" "$mode")
        printf " %15s %7s" "$o" "$(awk -v a="$c" -v b="$o" 'BEGIN { printf "%.2fx", a / b }')"
      fi
      printf " %10s%%\n" "$(awk -v a="$c" -v b="$tcp_before" 'BEGIN { printf "%.0f", 100 * a / b }')"
    done
  done
done
tcp_after=$("$build/bin/caravan-tcp-stream" 127.0.0.1 2 | grep -o '[0-9.]* Gbit/s' | cut -d' ' -f1)
echo "raw TCP stream on this host, same run: $tcp_before Gbit/s before, $tcp_after after"
echo "(goodput per worker, as the program prints it: value bytes pushed and/or pulled a second)"
