#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ (ASan + UBSan) and
# runs each for SECONDS (default 60), starting from its seed corpus in
# tests/fuzz/corpus/<target>/. Fails on the first crash, leak, sanitizer
# report, broken property or input slower than 10 s, leaving the input under
# build-fuzz/artifacts/. Usage: scripts/fuzz.sh [seconds] [target...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(wire_fuzz control_fuzz kv_fuzz)
case $seconds in
  ''|*[!0-9]*|0) echo "fuzz.sh: seconds must be a positive integer, got '$seconds'" >&2; exit 2 ;;
esac

bash "$root/scripts/install-deps.sh"
build="$root/build-fuzz"
cxx=$(command -v clang++ || command -v clang++-14 || true)
cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cxx" ] || [ -z "$cc" ]; then
  echo "fuzz.sh: clang is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCARAVAN_WERROR=ON \
  -DCARAVAN_FUZZ=ON -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$build" --target "${targets[@]}"

mkdir -p "$build/artifacts"
for t in "${targets[@]}"; do
  seeds="$root/tests/fuzz/corpus/$t"
  # New inputs go to a scratch corpus, so a run never changes the
  # repository's seeds; it carries over between local runs.
  work="$build/corpus/$t"
  mkdir -p "$work"
  echo "fuzz.sh: $t for ${seconds} s"
  if ! "$build/tests/fuzz/$t" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
      >"$build/$t.log" 2>&1; then
    tail -n 60 "$build/$t.log" >&2
    echo "fuzz.sh: $t FAILED; the input is in $build/artifacts/ (replay: $build/tests/fuzz/$t <file>)" >&2
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$build/$t.log" | tr '\n' ' '
  echo
done
echo "fuzz.sh: ${#targets[@]} targets, ${seconds} s each, no crash"
