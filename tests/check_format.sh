#!/usr/bin/env bash
# The tree is as clang-format leaves it (.clang-format at the root; the
# public headers under api/include are left as released, see
# api/include/.clang-format). Lists every file that is not, with the command
# that formats it. Other clang-format majors than the one CI installs (14,
# Debian 12's) lay some lines out differently: with another, or none, the
# check is skipped, saying so.
#   check_format.sh SOURCE_DIR
set -euo pipefail
root=${1:?usage: check_format.sh SOURCE_DIR}
want=14
if ! command -v clang-format >/dev/null; then
  echo "skipped: clang-format is not installed (bash scripts/install-deps.sh installs it)"
  exit 77
fi
major=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$major" != "$want" ]; then
  echo "skipped: clang-format $major here; the tree is laid out by clang-format $want"
  exit 77
fi
cd "$root"
if [ -d .git ] || git rev-parse --git-dir >/dev/null 2>&1; then
  files=$(git ls-files '*.c' '*.cc' '*.h' '*.hpp' '*.cu' '*.cuh')
else
  files=$(find . -path ./build -prune -o -path './build-*' -prune -o \
    \( -name '*.c' -o -name '*.cc' -o -name '*.h' -o -name '*.hpp' -o -name '*.cu' \
    -o -name '*.cuh' \) -print | sed 's|^\./||')
fi
bad=()
for f in $files; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not as clang-format lays it out: %s\n' "${bad[@]}"
  echo "format them with: clang-format -i ${bad[*]}"
  exit 1
fi
echo "$(echo "$files" | wc -w) files, all as clang-format $want lays them out"
