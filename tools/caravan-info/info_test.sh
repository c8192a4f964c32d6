#!/usr/bin/env bash
# caravan-info on the build tree: every in-tree plugin and its parameters,
# the engine's settings with their values here, a misspelt variable named
# with its likely meaning, and --check on a good and a bad environment.
# Usage: info_test.sh CARAVAN_INFO_BINARY
set -uo pipefail
info=$1
fail() { echo "FAIL: $*"; exit 1; }
clean_env() { env -u DMLC_ROLE -u DMLC_NUM_WORKER -u DMLC_NUM_SERVER -u DMLC_PS_ROOT_URI \
  -u DMLC_PS_ROOT_PORT -u CARAVAN_PLUGIN_PATH "$@"; }

out=$(clean_env BYTEPS_PARTITON_BYTES=1024 CARAVAN_REDUCER_CPU_THREDS=2 BYTEPS_LOG_LEVEL=error \
      CARAVAN_OP_TIMEOUT=77 "$info" 2>&1) || fail "caravan-info exited $?: $out"
for want in "van zmq" "reducer cpu" "van efa" "van verbs" \
            "CARAVAN_REDUCER_CPU_THREADS = unset  [default 1]" \
            "CARAVAN_VAN_ZMQ_IO_THREADS = unset  [default 1]" \
            "CARAVAN_OP_TIMEOUT = '77'  [when unset: 600]" \
            "capabilities: host memory" \
            "BYTEPS_PARTITON_BYTES is set but Caravan reads no such variable; did you mean BYTEPS_PARTITION_BYTES?"; do
  grep -qF -- "$want" <<<"$out" || fail "no '$want' in:
$out"
done
# A started van says whether GPU tensors reach it as they are; van-ucx also
# names the UCX it runs on and whether that UCX has CUDA transports.
grep -qF "device memory: no (GPU tensors are staged through host memory)" <<<"$out" \
  || fail "no van's device memory line in:
$out"
if grep -q "^  van ucx" <<<"$out"; then
  grep -qE "transport ucx \(UCX [0-9.]+, with(out)? CUDA transports\)" <<<"$out" \
    || fail "van ucx does not say its UCX and CUDA transports in:
$out"
fi
echo "ok: plugins, parameters, settings and the misspelt variable"

good="DMLC_ROLE=worker DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=1 DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=9123 DMLC_NODE_HOST=127.0.0.1"
out=$(clean_env $good "$info" --check 2>&1) || fail "--check of a good environment exited $?: $out"
for want in "role worker" "2 worker(s), 1 server(s); scheduler at 127.0.0.1:9123" "van zmq" \
            "address 127.0.0.1" "plugins load: van reducer" "CPUs of local rank 0:"; do
  grep -qF -- "$want" <<<"$out" || fail "no '$want' in --check output:
$out"
done
echo "ok: --check of a good environment"

out=$(clean_env DMLC_ROLE=worker DMLC_NUM_WORKER=abc DMLC_NUM_SERVER=1 DMLC_PS_ROOT_URI=127.0.0.1 \
      DMLC_PS_ROOT_PORT=9123 "$info" --check 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "--check of DMLC_NUM_WORKER=abc exited $rc, expected 2: $out"
grep -qF "would stop: DMLC_NUM_WORKER='abc' is not an integer" <<<"$out" || fail "--check did not name DMLC_NUM_WORKER=abc:
$out"
echo "ok: --check names the variable at fault"

# What stops a node after its variables parse: its address, its plugins,
# its CPUs. --check used to pass each of these.
for bad in "CARAVAN_VAN=nosuch|CARAVAN_VAN=nosuch" "CARAVAN_REDUCER=nosuch|CARAVAN_REDUCER=nosuch" \
           "BYTEPS_VISIBLE_CPU_CORES=garbage|BYTEPS_VISIBLE_CPU_CORES='garbage'" \
           "DMLC_INTERFACE=nosuch0 DMLC_NODE_HOST=|DMLC_INTERFACE"; do
  setting=${bad%%|*} says=${bad#*|}
  out=$(clean_env $good $setting "$info" --check 2>&1)
  rc=$?
  [ $rc -eq 2 ] || fail "--check of $setting exited $rc, expected 2: $out"
  grep -q "would stop: .*$says" <<<"$out" || fail "--check did not name $says:
$out"
done
echo "ok: --check stops on a van, reducer, CPU list or interface the node could not use"

out=$(clean_env DMLC_ROLE=worker DMLC_NUM_WORKER=1 "$info" --check 2>&1) ||
  fail "--check of a lone worker exited $?: $out"
grep -qF "1 worker(s), 0 server(s); scheduler at (none)" <<<"$out" || fail "a lone worker:
$out"
echo "ok: --check of a lone worker needs no scheduler"
