#!/usr/bin/env bash
# usage: scripts/elastic-chaos.sh [KILLS] [BUILD_DIR]
#
# Chaos for CARAVAN_ELASTIC=1 (docs/elastic.md), not in CI: a job of
# WORKERS=3 workers and SERVERS=2 servers runs tests/programs/regroup_worker
# (every sum of every step checked exactly against the workers in the job
# at that moment). KILLS times (default 50), after a pause of PAUSE seconds
# (default 1; pacing, not synchronisation), a random live worker, server or
# the scheduler (VICTIMS=workers: workers only) is killed with SIGKILL and
# a new one started with the job's variables: a worker or server joins at
# a regroup, a scheduler takes the job over from the nodes' reports. A
# server or the scheduler is killed only once the last worker and server
# started have joined (their logs say so), so the job always keeps a
# server and no node is on its way in; after a scheduler's kill the next
# waits until the new one has taken the job over. Then a stop file ends the run; every live
# worker, server and the scheduler must exit 0, and every killed process
# must have died of SIGKILL, not of an error. Exits 0 when all held;
# otherwise names who failed and keeps the logs. SEED (default 1) picks the
# victims.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kills=${1:-50}
build=${2:-$root/build}
workers=${WORKERS:-3}
servers=${SERVERS:-2}
pause=${PAUSE:-1}
victims=${VICTIMS:-all}
RANDOM=${SEED:-1}
[[ $victims =~ ^(all|workers)$ ]] || { echo "elastic-chaos: VICTIMS must be all or workers, not '$victims'"; exit 2; }
[[ $kills =~ ^[0-9]+$ ]] || { echo "elastic-chaos: KILLS must be a whole number, not '$kills'"; exit 2; }
for bin in caravan-server regroup_worker; do
  [ -x "$build/bin/$bin" ] || { echo "elastic-chaos: $build/bin/$bin is missing (build it first)"; exit 2; }
done

dir=$(mktemp -d /tmp/elastic-chaos.XXXXXX)
port=$((10000 + RANDOM % 20000))
export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=$port DMLC_NUM_WORKER=$workers
export DMLC_NUM_SERVER=$servers DMLC_NODE_HOST=127.0.0.1 CARAVAN_ELASTIC=1
export BYTEPS_PARTITION_BYTES=4096 REGROUP_STOP_FILE=$dir/stop
pids=() names=()
start() {  # start NAME ROLE [VAR=VALUE...] -- COMMAND...
  local name=$1 role=$2
  shift 2
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  env DMLC_ROLE="$role" "${vars[@]}" "$@" > "$dir/$name.log" 2>&1 &
  pids+=($!) names+=("$name")
}
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

start scheduler0 scheduler PS_VERBOSE=1 -- "$build/bin/caravan-server"
live=()  # the slots in pids of the live workers, servers and scheduler
[ "$victims" = all ] && live+=(0)
for ((s = 0; s < servers; ++s)); do
  # PS_VERBOSE=1: a server's log says when it joined.
  start "server$s" server CARAVAN_SERVER_ID=$s PS_VERBOSE=1 -- "$build/bin/caravan-server"
  [ "$victims" = all ] && live+=($((${#pids[@]} - 1)))
done
for ((w = 0; w < workers; ++w)); do
  start "worker$w" worker DMLC_WORKER_ID=$w -- "$build/bin/regroup_worker" 100000000
  live+=($((${#pids[@]} - 1)))
done
killed=()
next=$workers next_server=$servers last_server=server$((servers - 1)) next_scheduler=1
# joined NAME PATTERN: NAME's log matches PATTERN within 60 s, else the run fails.
joined() {
  for ((t = 0; t < 600; ++t)); do
    grep -q "$2" "$dir/$1.log" && return 0
    sleep 0.1
  done
  echo "elastic-chaos: $1 did not say '$2' in 60 s; see $dir/$1.log"
  exit 1
}
for ((k = 1; k <= kills; ++k)); do
  sleep "$pause"
  victim_slot=$((RANDOM % ${#live[@]}))
  victim=${live[$victim_slot]}
  if [[ ${names[$victim]} != worker* ]]; then
    # The server and worker started last must be in the job before a
    # server or the scheduler goes.
    joined "$last_server" "joined the job as server"
    joined "worker$((next - 1))" "^at step"
  fi
  if ! kill -0 "${pids[$victim]}" 2>/dev/null; then
    rc=0
    wait "${pids[$victim]}" || rc=$?
    echo "elastic-chaos: ${names[$victim]} ended (status $rc) before kill $k; see" \
      "$dir/${names[$victim]}.log"
    trap - EXIT; cleanup; exit 1
  fi
  kill -9 "${pids[$victim]}"
  killed+=("$victim")
  if [[ ${names[$victim]} == scheduler* ]]; then
    new=scheduler$next_scheduler next_scheduler=$((next_scheduler + 1))
    start "$new" scheduler PS_VERBOSE=1 -- "$build/bin/caravan-server"
    joined "$new" "took the job over"
  elif [[ ${names[$victim]} == server* ]]; then
    new=server$next_server last_server=$new next_server=$((next_server + 1))
    start "$new" server PS_VERBOSE=1 -- "$build/bin/caravan-server"
  else
    new=worker$next next=$((next + 1))
    start "$new" worker -- "$build/bin/regroup_worker" 100000000
  fi
  live[$victim_slot]=$((${#pids[@]} - 1))
  echo "elastic-chaos: kill $k: ${names[$victim]}; started $new" | tee -a "$dir/kills"
done
# The last worker and server started must have joined before the run ends.
joined "worker$((next - 1))" "^at step"
joined "$last_server" "joined the job as server"
touch "$dir/stop"
failed=()
for ((i = 0; i < ${#pids[@]}; ++i)); do
  rc=0
  wait "${pids[$i]}" || rc=$?
  is_killed=0
  for v in "${killed[@]}"; do [ "$v" = "$i" ] && is_killed=1; done
  if [ $is_killed = 1 ]; then
    [ $rc = 137 ] || failed+=("${names[$i]} exited $rc before it was killed")
  elif [ $rc != 0 ]; then
    failed+=("${names[$i]} exited $rc")
  fi
done
trap - EXIT
if [ ${#failed[@]} -gt 0 ]; then
  printf 'elastic-chaos: FAILED: %s\n' "${failed[@]}"
  echo "elastic-chaos: logs in $dir"
  exit 1
fi
steps=$(grep -ho "regroup_worker: [0-9]* steps checked as rank [0-9]* of [0-9]*, regrouped [0-9]*" \
  "$dir"/worker*.log | sort)
echo "$steps"
echo "elastic-chaos: $kills kills ($(grep -c 'kill .*: server' "$dir/kills" || true) of servers," \
  "$(grep -c 'kill .*: scheduler' "$dir/kills" || true) of the scheduler)," \
  "each followed by a new process of its role; every sum exact, every process ended as" \
  "expected (logs: $dir)"
