#!/usr/bin/env bash
# Compression with local groups: 2 machines of BYTEPS_LOCAL_SIZE=2 workers
# (bpslaunch), a scheduler and a server, all on this host. Each machine's
# workers sum in shared memory first and its local rank 0 compresses the
# machine's sum, as BytePS compresses between machines only; training must
# converge as compression_test.py requires (run here for onebit).
# usage: compression_local_groups.sh BIN_DIR PYTHON SCRIPT
set -u
bin=$1 python=$2 script=$3
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
# Port 23971: below the ephemeral range, where other tests' connections take theirs.
export DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=1 DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=23971
export BYTEPS_MIN_COMPRESS_BYTES=4096 CARAVAN_CONNECT_TIMEOUT=60 CARAVAN_OP_TIMEOUT=60
DMLC_ROLE=scheduler "$bin/bpslaunch" >"$tmp/scheduler.log" 2>&1 & pids+=($!)
DMLC_ROLE=server "$bin/bpslaunch" >"$tmp/server.log" 2>&1 & pids+=($!)
status=0
for m in 0 1; do
  DMLC_ROLE=worker DMLC_WORKER_ID=$m BYTEPS_LOCAL_SIZE=2 timeout -k 5 150 \
    "$bin/bpslaunch" "$python" "$script" onebit >"$tmp/machine$m.log" 2>&1 &
  machines[$m]=$!
done
for m in 0 1; do wait "${machines[$m]}" || status=1; done
cat "$tmp"/machine*.log
passed=$(cat "$tmp"/machine*.log | grep -c "compression onebit: all checks passed")
if [ "$status" -ne 0 ] || [ "$passed" -ne 4 ]; then
  echo "FAIL: $passed of 4 workers passed; scheduler and server said:" >&2
  tail -n 20 "$tmp/scheduler.log" "$tmp/server.log" >&2
  exit 1
fi
echo "PASS: 4 workers on 2 machines of 2"
