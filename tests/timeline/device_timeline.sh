#!/usr/bin/env bash
# The timeline of device tensors: 2 workers and 1 server, caravan-bench
# --device cuda; steps 2..4 traced; every partition must also show its copy
# to host and its copy to device (check_timeline.py ... device). Needs an
# NVIDIA GPU: exits 77 (skipped) saying so without one.
# usage: device_timeline.sh CARAVAN_LAUNCH CARAVAN_BENCH CHECK_TIMELINE
set -u
launch=$1 bench=$2 check=$3
nvidia-smi -L >/dev/null 2>&1 || { echo "device_timeline: SKIP: no NVIDIA GPU here (nvidia-smi -L found none)"; exit 77; }
dir=$(mktemp -d /tmp/device_timeline.XXXXXX)
trap 'rm -rf "$dir"' EXIT
BYTEPS_TRACE_ON=1 BYTEPS_TRACE_START_STEP=2 BYTEPS_TRACE_END_STEP=5 BYTEPS_TRACE_DIR=$dir \
  "$launch" --workers 2 --servers 1 --timeout 120 -- \
  "$bench" --device cuda --sizes 4M,16M --iters 6 --warmup 0 --no-baseline || exit 1
python3 "$check" "$dir" 2 1 2 5 device:bench-cuda/
