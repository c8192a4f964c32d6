#!/usr/bin/env bash
# The GPU checks, on a machine with an NVIDIA GPU and a build made with the
# CUDA toolkit (bash scripts/build.sh): the reducer-gpu tests and the reducer
# conformance suite on the device, device tensors through the C API (with
# servers, alone, and two local workers sharing one GPU), CUDA tensors in
# PyTorch (ops and DistributedOptimizer training), then the benchmarks:
# caravan-gpu-bench (reducer-gpu against the device-to-device copy, staging
# copies against cudaMemcpyAsync alone) and caravan-bench --device cuda
# (1 worker + 1 server: device memory against host memory, same run).
# CI has no GPU: there these tests skip, saying why.
# Usage: scripts/test-gpu.sh [build dir]   (CARAVAN_GPU_BENCH=0 skips the benchmarks)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
status=0
nvidia-smi -L || { echo "test-gpu.sh: nvidia-smi found no GPU" >&2; exit 1; }
ctest --test-dir "$build" --output-on-failure -j4 \
  -R 'ReducerGpu|Reducers/.*gpu|DeviceTensors|DeviceApi|Python\.(Cuda|TrainCuda)|Timeline\.DeviceCopies' || status=1
if [ "${CARAVAN_GPU_BENCH:-1}" != 0 ]; then
  "$build/bin/caravan-gpu-bench" || status=1
  "$build/bin/caravan-launch" --workers 1 --servers 1 --timeout 300 -- \
    "$build/bin/caravan-bench" --device cuda --sizes 4M,16M,64M --iters 30 || status=1
fi
exit $status
