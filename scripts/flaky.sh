#!/usr/bin/env bash
# Runs tests again and again to find the ones that fail only sometimes, and
# prints a table: test, runs, failures. Not run by CI (one pass of the
# integration and Python tests takes about 6 minutes on two cores).
#
#   bash scripts/flaky.sh [-n RUNS] [--hog] [--no-build] [CTEST ARGS...]
#
# -n RUNS     passes of the chosen tests (default 5)
# --hog       one busy loop per core beside the tests for the whole run, as a
#             loaded CI machine would be (stress-ng when installed)
# --no-build  uses build/ as it is
# CTEST ARGS  choose the tests (default: -L 'integration|python'); e.g.
#             -R 'LocalFailure|NodeFailure'
#
# Each failure's output is kept in build/flaky/<time>/<test>.<pass>.log;
# the table is build/flaky/<time>/table.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=5
hog=0
build=1
select=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) runs=$2; shift 2 ;;
    --hog) hog=1; shift ;;
    --no-build) build=0; shift ;;
    *) select+=("$1"); shift ;;
  esac
done
[ ${#select[@]} -gt 0 ] || select=(-L 'integration|python')
case "$runs" in '' | *[!0-9]*) echo "flaky.sh: -n wants a whole number, not '$runs'" >&2; exit 2 ;; esac

[ $build -eq 0 ] || bash "$root/scripts/build.sh"
out="$root/build/flaky/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
if [ $hog -eq 1 ]; then
  cores=$(nproc)
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$cores" --quiet &
    hogs+=($!)
  else
    for _ in $(seq "$cores"); do
      bash -c 'while :; do :; done' &
      hogs+=($!)
    done
  fi
  echo "flaky.sh: $cores busy loop(s) beside the tests"
fi

start=$(date +%s)
for i in $(seq "$runs"); do
  echo "flaky.sh: pass $i of $runs"
  ctest --test-dir "$root/build" -j2 -LE known_defect "${select[@]}" \
    --output-junit "$out/pass$i.xml" >"$out/pass$i.txt" 2>&1 || true
  grep -E 'tests passed|tests failed' "$out/pass$i.txt" | sed 's/^/  /' || true
done
stop_hogs

/usr/bin/python3 - "$out" "$runs" "$hog" "$(($(date +%s) - start))" <<'EOF'
import glob, os, re, sys
import xml.etree.ElementTree as ET

out, runs, hog, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
seen, failed = {}, {}
for path in sorted(glob.glob(os.path.join(out, "pass*.xml"))):
    n = re.search(r"pass(\d+)\.xml$", path).group(1)
    for case in ET.parse(path).getroot().iter("testcase"):
        name, status = case.get("name"), case.get("status")
        if status == "notrun":  # skipped (SKIP_RETURN_CODE) or disabled
            continue
        seen[name] = seen.get(name, 0) + 1
        if status == "fail":
            failed[name] = failed.get(name, 0) + 1
            text = case.findtext("system-out") or ""
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            with open(os.path.join(out, "%s.%s.log" % (safe, n)), "w") as f:
                f.write(text)
lines = ["%d pass(es)%s, %d tests, %d s" % (runs, " with a busy loop per core" if hog else " on a quiet machine",
                                         len(seen), seconds), "",
         "| test | runs | failures |", "|---|---|---|"]
for name in sorted(failed, key=lambda k: (-failed[k], k)):
    lines.append("| %s | %d | %d |" % (name, seen[name], failed[name]))
if not failed:
    lines.append("| (none) | | |")
text = "\n".join(lines)
print(text)
with open(os.path.join(out, "table.md"), "w") as f:
    f.write(text + "\n")
print("\nlogs of each failure and the table: %s" % out)
sys.exit(1 if failed else 0)
EOF
