#!/usr/bin/env bash
# The vendor SDK end to end, as a vendor meets it: install Caravan, build the
# example van out of tree against the install, run the conformance kit on
# it, and run a job that picks it by DMLC_ENABLE_RDMA=skeleton; then the
# same for the example compressor (api/examples/compressor-skeleton), which
# a job picks per tensor by byteps_compressor_type=bf16.
# Needs a complete build (cmake --install installs every target).
# usage: out_of_tree_van.sh BUILD_DIR SOURCE_DIR CMAKE GENERATOR WORKER COMPRESSED_WORKER
set -euo pipefail
build=$1 src=$2 cmake=$3 generator=$4 worker=$5 compressed_worker=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

step "install to $prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }
for f in lib/libcaravan.so bin/caravan-server bin/caravan-launch bin/caravan-van-check \
         lib/caravan/libcaravan-van-zmq.so lib/caravan/libcaravan-reducer-cpu.so \
         include/caravan/caravan.h include/caravan/plugin/van_v1.h \
         include/caravan/plugin/van_v2_cxx.hpp include/ps/ps.h \
         lib/cmake/CaravanSDK/CaravanSDKConfig.cmake lib/cmake/CaravanSDK/plugin_exports.map; do
  [ -e "$prefix/$f" ] || fail "the install lacks $f"
done

# Builds api/examples/$1 against the install into $tmp/$1; checks that
# $tmp/$1/$2, the plugin file, exports nothing but its entry.
build_example() {
  step "build api/examples/$1 against the install"
  "$cmake" -S "$src/api/examples/$1" -B "$tmp/$1" -G "$generator" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$tmp/configure-$1.log" \
    || { cat "$tmp/configure-$1.log"; fail "configure $1"; }
  "$cmake" --build "$tmp/$1" -j 2 || fail "build $1"
  local exports
  exports=$(nm -D --defined-only "$tmp/$1/$2" | awk '{print $3}')
  [ "$exports" = caravan_plugin_entry ] || fail "$1 exports more than its entry: $exports"
}

build_example van-skeleton libcaravan-van-skeleton.so
so=$tmp/van-skeleton/libcaravan-van-skeleton.so

step "conformance kit (installed) on the skeleton"
"$prefix/bin/caravan-van-check" --van "$so" --gtest_brief=1 \
  --gtest_filter='Loading*:VanPair*:Timeouts*' || fail "caravan-van-check"

step "a job with DMLC_ENABLE_RDMA=skeleton"
CARAVAN_PLUGIN_PATH=$tmp/van-skeleton DMLC_ENABLE_RDMA=skeleton BYTEPS_LOG_LEVEL=info \
  DMLC_NODE_HOST=127.0.0.1 CARAVAN_CONNECT_TIMEOUT=30 CARAVAN_OP_TIMEOUT=60 \
  "$prefix/bin/caravan-launch" --workers 2 --servers 2 -- "$worker" 1 100000 > "$tmp/job.log" 2>&1 \
  || { cat "$tmp/job.log"; fail "the job over the skeleton van"; }
# The example is what vendors copy: it speaks the current van ABI, 2.
grep -q "loaded van plugin 'skeleton' .* (ABI 2\.[0-9]*) from $so" "$tmp/job.log" \
  || { cat "$tmp/job.log"; fail "DMLC_ENABLE_RDMA=skeleton did not load $so as an ABI 2 van"; }
grep -c "loaded van plugin 'skeleton'" "$tmp/job.log" | sed 's/^/processes on the skeleton van: /'

build_example compressor-skeleton libcaravan-compressor-bf16.so
cso=$tmp/compressor-skeleton/libcaravan-compressor-bf16.so

step "conformance kit (installed) on the compressor"
"$prefix/bin/caravan-compressor-check" --compressor "$cso" --gtest_brief=1 || fail "caravan-compressor-check"

step "a job with byteps_compressor_type=bf16"
CARAVAN_PLUGIN_PATH=$tmp/compressor-skeleton BYTEPS_LOG_LEVEL=info \
  DMLC_NODE_HOST=127.0.0.1 CARAVAN_CONNECT_TIMEOUT=30 CARAVAN_OP_TIMEOUT=60 \
  "$prefix/bin/caravan-launch" --workers 2 --servers 1 -- "$compressed_worker" plugin bf16 \
  > "$tmp/cjob.log" 2>&1 || { cat "$tmp/cjob.log"; fail "the job with the bf16 compressor"; }
grep -q "loaded compressor plugin 'bf16'.* from $cso" "$tmp/cjob.log" \
  || { cat "$tmp/cjob.log"; fail "byteps_compressor_type=bf16 did not load $cso"; }
grep "results rounded" "$tmp/cjob.log"
echo "PASS"
