#!/usr/bin/env bash
# Configures and builds Caravan into build/ (Ninja, ccache when present).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCARAVAN_WERROR=ON >/dev/null
cmake --build "$root/build"
