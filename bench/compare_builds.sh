#!/usr/bin/env bash
# Two builds of Caravan on the same machine, measured alternately so that
# the machine's drift falls on both: caravan-bench with 1 worker and 1
# server at 4 KB (p50 latency) and 4 MB (algbw) over van-zmq and van-tcp,
# and the replay benchmark's ResNet-50 step with 2 workers and 2 servers.
# Prints one line per run and, at the end, the medians side by side.
#
#   bash bench/compare_builds.sh OLD_BUILD NEW_BUILD [ROUNDS]
#
# OLD_BUILD and NEW_BUILD are build folders (each with bin/caravan-launch,
# bin/caravan-bench, bin/caravan-replay-bench); ROUNDS (default 3) is how
# many times each pair is run, old then new then new then old...
set -euo pipefail
old=${1:?usage: compare_builds.sh OLD_BUILD NEW_BUILD [ROUNDS]}
new=${2:?usage: compare_builds.sh OLD_BUILD NEW_BUILD [ROUNDS]}
rounds=${3:-3}
for b in "$old" "$new"; do
  for p in caravan-launch caravan-bench caravan-replay-bench; do
    [ -x "$b/bin/$p" ] || { echo "compare_builds.sh: no $b/bin/$p" >&2; exit 2; }
  done
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# caravan-bench's CSV lines ("csv:size_bytes,...", behind the launcher's
# prefix); the columns are found by name in their header.
bench() {  # build van -> "p50_4K_us algbw_4M_GBps"
  local b=$1 van=$2
  CARAVAN_VAN=$van "$b/bin/caravan-launch" --workers 1 --servers 1 -- \
    "$b/bin/caravan-bench" --sizes 4K,4M --iters 300 --warmup 20 --no-baseline --csv 2>&1 |
    sed -n 's/^.*csv://p' |
    awk -F, '$1 == "size_bytes" { for (i = 1; i <= NF; ++i) col[$i] = i; next }
             $1 == 4096 { p50 = $col["p50_us"] }
             $1 == 4194304 { bw = $col["algbw_gbps"] }
             END { if (p50 == "" || bw == "") exit 1; print p50, bw }'
}
replay() {  # build -> the median training step, ms
  local b=$1
  "$b/bin/caravan-launch" --workers 2 --servers 2 -- "$b/bin/caravan-replay-bench" \
    --steps 10 --warmup 2 2>&1 |
    sed -n 's/^.*training step (all tensors) *\([0-9.]*\).*$/\1/p' | head -1
}

for r in $(seq "$rounds"); do
  order="old new"
  [ $((r % 2)) -eq 0 ] && order="new old"
  for which in $order; do
    b=$old
    [ "$which" = new ] && b=$new
    for van in zmq tcp; do
      read -r p50 bw < <(bench "$b" "$van")
      echo "$which $van p50_4K_us $p50 algbw_4M_GBps $bw" | tee -a "$out/runs"
    done
    ms=$(replay "$b")
    echo "$which replay resnet50_step_ms $ms" | tee -a "$out/runs"
  done
done

echo
echo "medians of $rounds rounds (old -> new):"
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for key in "zmq p50_4K_us" "zmq algbw_4M_GBps" "tcp p50_4K_us" "tcp algbw_4M_GBps" "replay resnet50_step_ms"; do
  set -- $key
  o=$(awk -v v="$1" -v k="$2" '$1 == "old" && $2 == v { for (i = 3; i < NF; ++i) if ($i == k) print $(i + 1) }' "$out/runs" | median)
  n=$(awk -v v="$1" -v k="$2" '$1 == "new" && $2 == v { for (i = 3; i < NF; ++i) if ($i == k) print $(i + 1) }' "$out/runs" | median)
  printf '  %-8s %-20s %10s -> %10s  (new/old %s)\n' "$1" "$2" "$o" "$n" \
    "$(awk -v o="$o" -v n="$n" 'BEGIN { if (o > 0) printf "%.2f", n / o; else print "-" }')"
done
