#!/usr/bin/env bash
# usage: scripts/soak.sh [SECONDS] [BUILD_DIR]
#
# A soak: a local job (WORKERS=2, SERVERS=2) runs tests/programs/soak_worker
# for SECONDS (default 600): continuous push_pull on a seeded pool of
# tensors of random sizes, a random subset each round, every sum checked.
# Meanwhile the resident memory (VmRSS) of the scheduler, every server and
# every worker is sampled four times a second. After the warm-up (the first
# 20% of the run), no process may grow by 5% or more; the run fails naming
# the process and its figures, or when any process fails or a sum is wrong.
#
# SEED (default 1) picks the pool and the rounds; SOAK_SAMPLES=FILE keeps
# every sample ("milliseconds label kB" lines).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
build=${2:-$root/build}
workers=${WORKERS:-2}
servers=${SERVERS:-2}
seed=${SEED:-1}
warmup_pct=20
limit_pct=5
period=0.25       # seconds between samples
sample_margin_ms=2000
start_deadline=60   # CARAVAN_CONNECT_TIMEOUT's default: the job is up by then or has failed

# Below 20 s the windows compared hold too few samples to judge.
[[ $seconds =~ ^[0-9]+$ ]] && [ "$seconds" -ge 20 ] ||
  { echo "soak: SECONDS must be a whole number >= 20, not '$seconds'"; exit 2; }
for bin in caravan-launch soak_worker; do
  [ -x "$build/bin/$bin" ] || { echo "soak: $build/bin/$bin is missing (build it first)"; exit 2; }
done

# glibc's adaptive mmap threshold keeps freed large buffers in the heap and
# gives them back at its own pace, so RSS moved by 5-25% between windows of
# a healthy run. With a fixed threshold, every buffer of 128 KiB or more goes
# back to the system when freed, and RSS follows what the process holds.
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-131072}

log=$(mktemp /tmp/soak.XXXXXX.log)
samples=${SOAK_SAMPLES:-$(mktemp /tmp/soak.XXXXXX.samples)}
: >"$samples"
launcher=""
cleanup() {
  if [ -n "$launcher" ] && kill -0 "$launcher" 2>/dev/null; then kill -TERM "$launcher"; fi
  rm -f "$log"
  [ -n "${SOAK_SAMPLES:-}" ] || rm -f "$samples"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "soak: FAIL: $*"
  # When a process fails, caravan-launch stops the others and says who
  # failed; give it 10 s to do so before its log is printed.
  for _ in $(seq 100); do
    [ -n "$launcher" ] && kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
  done
  echo "----- job output (last 60 lines) -----"
  tail -n 60 "$log"
  exit 1
}

# The launcher's own deadline ends the job if it outlives the soak by much.
"$build/bin/caravan-launch" --workers "$workers" --servers "$servers" \
  --timeout $((seconds + start_deadline + 60)) -- \
  "$build/bin/soak_worker" "$seconds" "$seed" >"$log" 2>&1 &
launcher=$!

# Time zero is when every worker has joined and begun its rounds.
for _ in $(seq $((start_deadline * 10))); do
  [ "$(grep -c 'soak-worker [0-9]*: joined' "$log")" -eq "$workers" ] && break
  kill -0 "$launcher" 2>/dev/null || fail "the job ended before all $workers workers joined"
  sleep 0.1
done
[ "$(grep -c 'soak-worker [0-9]*: joined' "$log")" -eq "$workers" ] ||
  fail "not all $workers workers joined within ${start_deadline} s"

declare -A label_of=()
for pid in $(pgrep -P "$launcher"); do
  env_of=$(tr '\0' '\n' <"/proc/$pid/environ")
  role=$(sed -n 's/^DMLC_ROLE=//p' <<<"$env_of")
  case $role in
    scheduler) label_of[$pid]="scheduler" ;;
    server) label_of[$pid]="server-$(sed -n 's/^CARAVAN_SERVER_ID=//p' <<<"$env_of")" ;;
    worker) label_of[$pid]="worker-$(sed -n 's/^DMLC_WORKER_ID=//p' <<<"$env_of")" ;;
  esac
done
[ "${#label_of[@]}" -eq $((workers + servers + 1)) ] ||
  fail "found ${#label_of[@]} job processes under caravan-launch," \
    "expected $((workers + servers + 1))"
mapfile -t pids < <(for p in "${!label_of[@]}"; do echo "${label_of[$p]} $p"; done |
  sort | cut -d' ' -f2)
echo "soak: $workers workers, $servers servers, seed $seed, ${seconds} s; sampling VmRSS of" \
  "$(for p in "${pids[@]}"; do printf '%s (pid %s) ' "${label_of[$p]}" "$p"; done)"

# Samples stop shortly before SECONDS: then the workers leave and memory is
# freed, which would hide growth rather than show it; the workers' clocks
# started a little before ours. /proc is read with bash builtins, so the
# sampler forks nothing but its sleep.
t0_us=${EPOCHREALTIME/./}
end_us=$((t0_us + seconds * 1000000 - sample_margin_ms * 1000))
# A line of progress every SOAK_PROGRESS_S seconds (default 60), so a long
# soak shows it is alive and how its memory goes.
progress_us=$(( ${SOAK_PROGRESS_S:-60} * 1000000 ))
next_progress_us=$((t0_us + progress_us))
while :; do
  now_us=${EPOCHREALTIME/./}
  [ "$now_us" -lt "$end_us" ] || break
  progress=""
  for pid in "${pids[@]}"; do
    # One read of the whole file: read line by line, /proc regenerates the
    # text between reads, and a line that changed length (State: R or S)
    # shifts the rest.
    rss="" status_lines=()
    mapfile -t status_lines <"/proc/$pid/status" 2>/dev/null || true
    for line in "${status_lines[@]}"; do
      [[ $line =~ ^VmRSS:[[:space:]]+([0-9]+) ]] && { rss=${BASH_REMATCH[1]}; break; }
    done
    elapsed_ms=$(( (now_us - t0_us) / 1000 ))
    [ -n "$rss" ] ||
      fail "${label_of[$pid]} (pid $pid) exited during the soak, at $((elapsed_ms / 1000)) s"
    echo "$elapsed_ms ${label_of[$pid]} $rss" >>"$samples"
    progress+=" ${label_of[$pid]} ${rss} kB;"
  done
  if [ "$now_us" -ge "$next_progress_us" ]; then
    echo "soak: $(( (now_us - t0_us) / 1000000 )) s of ${seconds} s, VmRSS:${progress%;}"
    next_progress_us=$((next_progress_us + progress_us))
  fi
  sleep "$period"
done

# The launcher exits by its own --timeout at the latest.
rc=0
wait "$launcher" || rc=$?
launcher=""
[ "$rc" -eq 0 ] || fail "the job exited with status $rc"
[ "$(grep -c 'soak-worker [0-9]*: .*all sums exact' "$log")" -eq "$workers" ] ||
  fail "not every worker reported exact sums"
grep 'soak-worker [0-9]*: .*all sums exact' "$log"

# RSS rises and falls by several MB with the tensors in flight. The floor,
# the 10th percentile of a window's samples, is what a process holds when
# little is in flight: memory never given back raises it. Growth is the
# floor of the last 20% of the run against the floor of the 20% right after
# the warm-up.
awk -v total="$((seconds * 1000 - sample_margin_ms))" -v warm_pct="$warmup_pct" \
  -v limit="$limit_pct" '
  function floor_of(p, w,   n, i, j, v, a) {
    n = count[p, w]
    for (i = 1; i <= n; ++i) {
      v = kb[p, w, i]
      for (j = i - 1; j >= 1 && a[j] > v; --j) a[j + 1] = a[j]
      a[j + 1] = v
    }
    return a[int(n / 10) + 1]
  }
  { t = $1; p = $2
    if (!(p in first)) { first[p] = $3; order[++n] = p }
    if (t < total * warm_pct / 100) next
    if (!(p in peak) || $3 > peak[p]) peak[p] = $3
    if (t < total * 2 * warm_pct / 100) w = "early"
    else if (t >= total * (100 - warm_pct) / 100) w = "late"
    else next
    kb[p, w, ++count[p, w]] = $3 }
  END {
    printf "%-10s %10s %14s %14s %14s %8s\n",
           "process", "first kB", "start kB", "end kB", "peak kB", "growth"
    status = 0
    for (i = 1; i <= n; ++i) {
      p = order[i]
      if (count[p, "early"] < 10 || count[p, "late"] < 10) {
        printf "soak: FAIL: too few samples of %s to judge (%d after the warm-up, %d at the end)\n",
               p, count[p, "early"], count[p, "late"]
        status = 1
        continue
      }
      start = floor_of(p, "early"); end = floor_of(p, "late")
      g = 100 * (end - start) / start
      printf "%-10s %10d %14d %14d %14d %7.2f%%\n", p, first[p], start, end, peak[p], g
      if (g >= limit) {
        printf "soak: FAIL: %s grew %.2f%% after the warm-up: its RSS floor went from %d kB" \
               " to %d kB (limit %d%%)\n", p, g, start, end, limit
        status = 1
      }
    }
    printf "(first: at time zero; start, end: the floor, the 10th percentile of RSS, over" \
           " %d%%-%d%% and %d%%-100%% of the run; peak: the most after the warm-up)\n",
           warm_pct, 2 * warm_pct, 100 - warm_pct
    exit status
  }' "$samples" || exit 1
echo "soak: OK: no process grew ${limit_pct}% or more after the ${warmup_pct}% warm-up"
