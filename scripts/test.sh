#!/usr/bin/env bash
# Builds Caravan and runs every test (unit, plugin, and whole jobs of real
# processes over loopback) with CTest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh"
ctest --test-dir "$root/build" --output-on-failure -j2 "$@"
