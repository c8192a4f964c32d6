#!/usr/bin/env bash
# usage: scripts/tidy.sh [BUILD_DIR]
#
# clang-tidy (.clang-tidy at the root says which checks, and which not and
# why) over the project's own sources in engine/, api/, plugins/ and tools/,
# as BUILD_DIR (default build/) compiles them: its compile_commands.json,
# which the project's CMakeLists asks CMake for. Left out: tests, CUDA, and
# the CPU reducer's per-instruction-set files (__builtin_cpu_supports
# strings and target pragmas that clang reads differently from g++).
# Prints every finding and exits 1 when there is one. About 4 minutes on
# two cores: not in CI, whose time it would take; run it before changes
# that touch many files.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
command -v clang-tidy >/dev/null || { echo "tidy: no clang-tidy (apt-get install clang-tidy)"; exit 2; }
[ -f "$build/compile_commands.json" ] ||
  { echo "tidy: no $build/compile_commands.json (bash scripts/build.sh makes it)"; exit 2; }
mapfile -t files < <(python3 - "$build/compile_commands.json" "$root" <<'PY'
import json, sys
root = sys.argv[2] + "/"
seen = set()
for e in json.load(open(sys.argv[1])):
    f = e["file"]
    rel = f[len(root):] if f.startswith(root) else ""
    if not rel.split("/")[0] in ("engine", "api", "plugins", "tools"):
        continue
    if rel.endswith(("_test.cc", ".cu")) or rel.startswith("plugins/reducer-cpu/"):
        continue
    if f not in seen:
        seen.add(f)
        print(f)
PY
)
echo "tidy: ${#files[@]} files"
out=$(printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 8 clang-tidy -p "$build" --quiet 2>&1)
findings=$(printf '%s\n' "$out" | grep -E "(warning|error):" | sort -u)
if [ -n "$findings" ]; then
  printf '%s\n' "$out" | grep -v "warnings generated\|^Suppressed\|^Use -header-filter\|NOLINT"
  echo "tidy: $(printf '%s\n' "$findings" | wc -l) finding(s)"
  exit 1
fi
echo "tidy: clean"
