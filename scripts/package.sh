#!/usr/bin/env bash
# Builds Caravan's Debian packages (CPack) into build-packages/ and checks
# them as a user meets them: every .deb is unpacked into an empty root
# (dpkg-deb -x: nothing is installed on this machine), and against that root
# alone it builds an application with find_package(Caravan) and with
# pkg-config, and the example third-party van with find_package(CaravanSDK),
# then runs jobs with the unpacked tools and plugins: the application, the
# application over the third-party van, and byteps.torch from the unpacked
# Python package. Exits non-zero naming the step that failed.
# usage: bash scripts/package.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"
build=$root/build-packages

step() { echo "== package.sh: $*"; }
fail() { echo "package.sh: FAIL: $*" >&2; exit 1; }

step "build for /usr"
# The tests stay configured (the conformance kit, caravan-van-check, is one
# of the tools), but only what the packages hold is built: the libcaravan,
# plugin, tool and benchmark targets, not the tests again. The flags are
# build.sh's, so that ccache gives back its objects (CMakeLists.txt).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCARAVAN_WERROR=ON \
  -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \
  -DCARAVAN_PYTHON_INSTALL_DIR:STRING=lib/python3/dist-packages >/dev/null
targets=$(cmake --build "$build" --target help | sed -n 's/^\(caravan[-a-z]*\): phony$/\1/p' |
          grep -v '^caravan-test-')
# shellcheck disable=SC2086
cmake --build "$build" --target $targets

step "cpack"
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB >cpack.log 2>&1) || { cat "$build/cpack.log"; fail "cpack"; }
for p in libcaravan1 caravan-dev caravan-tools python3-caravan caravan-van-zmq caravan-reducer-cpu; do
  ls "$build/${p}_"*.deb >/dev/null 2>&1 || fail "no $p package (cpack made: $(cd "$build" && ls *.deb))"
done
for deb in "$build"/*.deb; do
  printf '%-44s %s\n' "$(basename "$deb")" \
    "$(dpkg-deb -f "$deb" Depends | cut -c1-100)"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
step "unpack every package into $tmp/root"
for deb in "$build"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
prefix=$tmp/root/usr
# Debian's multiarch folder, as GNUInstallDirs chose it for /usr.
lib=$(cd "$prefix" && dirname "$(find lib -name libcaravan.so.1 | head -n 1)")
[ "$lib" != . ] || fail "no libcaravan.so.1 in the unpacked packages"
for f in $lib/libcaravan.so.1 $lib/libcaravan.so include/caravan/caravan.h include/ps/ps.h \
         $lib/cmake/Caravan/CaravanConfig.cmake $lib/cmake/Caravan/CaravanTargets.cmake \
         $lib/cmake/CaravanSDK/CaravanSDKConfig.cmake $lib/pkgconfig/caravan.pc \
         $lib/caravan/libcaravan-van-zmq.so $lib/caravan/libcaravan-reducer-cpu.so \
         bin/caravan-server bin/caravan-launch bin/caravan-info bin/caravan-van-check bin/bpslaunch \
         lib/python3/dist-packages/byteps/torch/__init__.py; do
  [ -e "$prefix/$f" ] || fail "the unpacked packages lack /usr/$f"
done

step "an application with find_package(Caravan)"
cmake -S "$root/api/examples/app" -B "$tmp/app" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/app.log" \
  || { cat "$tmp/app.log"; fail "configure the application"; }
cmake --build "$tmp/app" >>"$tmp/app.log" || { cat "$tmp/app.log"; fail "build the application"; }

step "the same application with pkg-config"
flags=$(PKG_CONFIG_PATH=$prefix/$lib/pkgconfig pkg-config --cflags --libs caravan) \
  || fail "pkg-config does not know caravan"
cc -std=c99 -o "$tmp/app-pc" "$root/api/examples/app/push_pull.c" $flags -Wl,-rpath,"$prefix/$lib" \
  || fail "cc with pkg-config's flags ($flags)"

step "a job of the unpacked tools and plugins"
for app in "$tmp/app/caravan-app" "$tmp/app-pc"; do
  out=$("$prefix/bin/caravan-launch" --workers 2 --servers 1 -- "$app" 2>&1) \
    || { echo "$out"; fail "the job of $app"; }
  [ "$(grep -c "the sum is right" <<<"$out")" -eq 2 ] || { echo "$out"; fail "$app: not every worker's sum was right"; }
done
# The unpacked library finds its plugins beside itself, not in this machine's /usr.
BYTEPS_LOG_LEVEL=info "$prefix/bin/caravan-launch" --workers 1 --servers 1 -- "$tmp/app-pc" >"$tmp/job.log" 2>&1 \
  || { cat "$tmp/job.log"; fail "the job at log level info"; }
grep -q "loaded van plugin 'zmq'.* from $prefix/$lib/caravan/libcaravan-van-zmq.so" "$tmp/job.log" \
  || { cat "$tmp/job.log"; fail "the van was not loaded from the unpacked packages"; }

step "a third-party van with find_package(CaravanSDK), in a job"
cmake -S "$root/api/examples/van-skeleton" -B "$tmp/van" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/van.log" || { cat "$tmp/van.log"; fail "configure the van"; }
cmake --build "$tmp/van" >>"$tmp/van.log" || { cat "$tmp/van.log"; fail "build the van"; }
CARAVAN_PLUGIN_PATH=$tmp/van DMLC_ENABLE_RDMA=skeleton BYTEPS_LOG_LEVEL=info \
  "$prefix/bin/caravan-launch" --workers 2 --servers 1 -- "$tmp/app/caravan-app" >"$tmp/skeleton.log" 2>&1 \
  || { cat "$tmp/skeleton.log"; fail "the job over the third-party van"; }
grep -q "loaded van plugin 'skeleton'" "$tmp/skeleton.log" || fail "the skeleton van was not loaded"

step "byteps.torch from the unpacked python3-caravan"
python=/usr/bin/python3
if "$python" -c "import torch" 2>/dev/null; then
  # Installed by dpkg, dist-packages is on sys.path; unpacked here, PYTHONPATH says where.
  PYTHONPATH=$prefix/lib/python3/dist-packages DMLC_ROLE=worker DMLC_NUM_WORKER=1 \
    "$prefix/bin/bpslaunch" "$python" -c "
import torch, byteps.torch as bps
bps.init()
t = torch.ones(8)
bps.push_pull(t, name='t', average=False)
assert t.eq(bps.size()).all(), t
print('byteps.torch: push_pull right on', bps.size(), 'worker(s)')
" || fail "byteps.torch from the unpacked package"
else
  echo "package.sh: SKIP the Python check: $python cannot import torch"
fi
echo "package.sh: OK: $(ls "$build"/*.deb | wc -l) packages"
