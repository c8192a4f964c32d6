#!/usr/bin/env bash
# Measures the CPU an idle scheduler and server use: a job of 1 worker and 1
# server in which the worker joins and then does nothing; the scheduler's and
# server's CPU time is sampled over a 10 s window. Target: under 1% each.
set -euo pipefail
build=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
window=10
log=$(mktemp)
trap 'rm -f "$log"; kill $launcher 2>/dev/null || true' EXIT
"$build/bin/caravan-launch" --workers 1 --servers 1 -- "$build/bin/idle_worker" $((window + 4)) >"$log" 2>&1 &
launcher=$!
for _ in $(seq 300); do   # wait up to 30 s for the job to start
  grep -q "idle-worker: joined" "$log" && break
  sleep 0.1
done
grep -q "idle-worker: joined" "$log" || { cat "$log"; echo "idle_cpu: the job did not start"; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A pid_of before
for pid in $(pgrep -P "$launcher"); do
  role=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^DMLC_ROLE=//p')
  case $role in scheduler|server) pid_of[$role]=$pid; before[$role]=$(ticks "$pid") ;; esac
done
sleep $window
hz=$(getconf CLK_TCK)
status=0
for role in scheduler server; do
  used=$(( $(ticks "${pid_of[$role]}") - ${before[$role]} ))
  pct=$(awk -v t="$used" -v hz="$hz" -v w="$window" 'BEGIN { printf "%.2f", 100 * t / hz / w }')
  echo "idle $role: ${pct}% of one core over ${window} s (target < 1%)"
  awk -v p="$pct" 'BEGIN { exit !(p < 1.0) }' || status=1
done
wait $launcher
exit $status
