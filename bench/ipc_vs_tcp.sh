#!/usr/bin/env bash
# Shared memory against loopback TCP for a worker and a server on one host:
# the same job (1 worker, 1 server, caravan-bench checking every result) run
# with BYTEPS_ENABLE_IPC=1 and without, alternately, RUNS times each. Prints
# each size's median bandwidth both ways and their ratio; exits 1 when the
# ratio of a size of 1 MiB or more is under the target of 1.5.
# Usage: bench/ipc_vs_tcp.sh [BUILD_DIR] [SIZES] [RUNS]   (defaults: build 4M,64M 3)
set -euo pipefail
build=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
sizes=${2:-4M,64M}
runs=${3:-3}
target=1.5
log=$(mktemp)
rows=$(mktemp)
trap 'rm -f "$log" "$rows"' EXIT
for run in $(seq "$runs"); do
  for ipc in 0 1; do
    if ! BYTEPS_ENABLE_IPC=$ipc "$build/bin/caravan-launch" --workers 1 --servers 1 -- \
        "$build/bin/caravan-bench" --sizes "$sizes" --no-baseline --csv >"$log" 2>&1; then
      cat "$log"
      echo "ipc_vs_tcp: run $run with BYTEPS_ENABLE_IPC=$ipc failed" >&2
      exit 1
    fi
    # csv:size_bytes,rounds,inflight,dtype,algbw_gbps,...
    grep -o 'csv:[0-9].*' "$log" | cut -d, -f1,5 | sed "s/^csv:/$ipc,/" >>"$rows"
  done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }
echo "1 worker + 1 server on this host, caravan-bench, median of $runs alternating runs"
printf "%10s %14s %14s %8s   %s\n" "size" "TCP GB/s" "shm GB/s" "ratio" "range TCP / shm"
status=0
for size in $(cut -d, -f2 "$rows" | sort -nu); do
  tcp=$(awk -F, -v s="$size" '$1 == 0 && $2 == s { print $3 }' "$rows" | median)
  shm=$(awk -F, -v s="$size" '$1 == 1 && $2 == s { print $3 }' "$rows" | median)
  ratio=$(awk -v a="$shm" -v b="$tcp" 'BEGIN { printf "%.2f", a / b }')
  range="$(awk -F, -v s="$size" '$1 == 0 && $2 == s { print $3 }' "$rows" | spread) / $(awk -F, -v s="$size" '$1 == 1 && $2 == s { print $3 }' "$rows" | spread)"
  label=$(awk -v b="$size" 'BEGIN { if (b >= 1048576) printf "%g MiB", b / 1048576; else printf "%g KiB", b / 1024 }')
  # Below 1 MiB a push_pull is one round trip on the van either way: the
  # target is about moving bytes.
  if [ "$size" -lt 1048576 ]; then
    printf "%10s %14.3f %14.3f %7sx   %s (latency-bound: not judged)\n" "$label" "$tcp" "$shm" "$ratio" "$range"
    continue
  fi
  printf "%10s %14.3f %14.3f %7sx   %s\n" "$label" "$tcp" "$shm" "$ratio" "$range"
  awk -v r="$ratio" -v t="$target" 'BEGIN { exit !(r >= t) }' || status=1
done
[ $status -eq 0 ] && echo "target (shared memory >= ${target}x TCP): met" || echo "target (shared memory >= ${target}x TCP): not met"
exit $status
