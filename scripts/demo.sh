#!/usr/bin/env bash
# The main job: a local cluster (scheduler, 2 servers, 2 workers) doing
# push_pull over TCP, every result checked, with a table of bandwidth and
# latency against Gloo's ring allreduce among the same workers and a raw TCP
# stream. Extra arguments go to caravan-bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh"
workers=${WORKERS:-2}
servers=${SERVERS:-2}
exec "$root/build/bin/caravan-launch" --workers "$workers" --servers "$servers" -- \
  "$root/build/bin/caravan-bench" "$@"
