#!/usr/bin/env bash
# Builds Caravan and runs every test (unit, plugin, and whole jobs of real
# processes over loopback) with CTest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh"
# Tests labelled known_defect reproduce open bugs; they are listed, not run.
known=$(ctest --test-dir "$root/build" -N -L known_defect | sed -n 's/^ *Test *#[0-9]*: //p')
[ -z "$known" ] || echo "test.sh: not run (known defects, see docs and 'ctest -L known_defect'): $known"
ctest --test-dir "$root/build" --output-on-failure -j2 -LE known_defect "$@"
