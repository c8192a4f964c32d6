#!/usr/bin/env bash
# The installed Python layer: cmake --install into a fresh prefix, then the
# packages from there must find the installed libcaravan and caravan-server
# (no LD_LIBRARY_PATH, no build tree), and the installed bpslaunch must run.
# usage: install_test.sh BUILD_DIR CMAKE PYTHON
set -euo pipefail
build=$1 cmake=$2 python=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }
pkg=$(dirname "$(find "$prefix" -path '*/caravan/_paths.py' | head -n 1)")
[ -n "$pkg" ] || fail "the install has no caravan/_paths.py"
site=$(dirname "$pkg")
echo "packages installed in $site"
for f in caravan/torch/__init__.py caravan/launch.py byteps/torch/__init__.py \
         byteps/torch/parallel/__init__.py; do
  [ -f "$site/$f" ] || fail "the install lacks $site/$f"
done
[ -x "$prefix/bin/bpslaunch" ] || fail "the install lacks bin/bpslaunch"

unset LD_LIBRARY_PATH CARAVAN_LIBRARY
cd "$tmp"  # away from the source and build trees
PYTHONPATH=$site "$python" - "$prefix" <<'PY'
import os, sys
prefix = os.path.realpath(sys.argv[1])
import caravan, caravan._capi as capi, caravan.launch as launch
import byteps.torch as bps, caravan.torch
lib = os.path.realpath(capi.library_path())
assert lib.startswith(prefix + "/"), "the installed package uses %s, not the install's library" % lib
capi.library()  # loads it
server = os.path.realpath(launch.find_server())
assert server == os.path.join(prefix, "bin", "caravan-server"), server
assert bps.push_pull is caravan.torch.push_pull
print("installed packages use", lib, "and", server)
PY
# bpslaunch finds its own packages, without PYTHONPATH.
out=$(DMLC_ROLE=worker BYTEPS_LOCAL_SIZE=2 "$prefix/bin/bpslaunch" "$python" -c \
      'import os; print("local rank", os.environ["BYTEPS_LOCAL_RANK"])' 2>&1) \
  || fail "installed bpslaunch: $out"
echo "$out"
grep -q '^\[worker local_rank=1\] local rank 1$' <<<"$out" || fail "installed bpslaunch did not start local rank 1"
echo "install test passed"
