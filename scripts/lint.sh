#!/usr/bin/env bash
# The format and lint checks CI runs (docs/testing.md):
#  1. every C++ line changed since the format baseline is formatted as .clang-format says (git clang-format; the
#     code before the baseline is left as it was written);
#  2. clang-tidy's bug-prone and performance checks (.clang-tidy) on the C++ sources changed in the last 20 commits
#     (the 6 most recent: clang-tidy parses each ~5-10 s), with a compile database without precompiled headers
#     (build/tidy, configured here).
# Exits 1 with the diff or the findings. LINT_FILES="a.cpp b.cpp" checks those files with clang-tidy instead.
set -euo pipefail
cd "$(dirname "$0")/.."
FORMAT_BASE=9e58fbb  # the commit before .clang-format: lines changed after it must be formatted
status=0

if git cat-file -e "$FORMAT_BASE^{commit}" 2>/dev/null; then base=$FORMAT_BASE
elif git rev-parse -q --verify HEAD~1 >/dev/null; then
  echo "lint: the format baseline $FORMAT_BASE is not in this clone: checking the lines the last commit changed"
  base=HEAD~1
else
  base=""
  echo "lint: no history in this clone: the format check has nothing to compare"
fi
if [ -n "$base" ]; then
  out=$(git clang-format-14 --binary clang-format-14 --extensions cpp,h --diff "$base" HEAD -- cli emulator loader datagen tests bench 2>&1) || {
    echo "lint: lines changed since $base are not formatted as .clang-format says (fix: git clang-format-14 $base):"
    echo "$out"
    status=1
  }
  [ $status -eq 0 ] && echo "lint: format: every line changed since $base is formatted"
fi

if [ -n "${LINT_FILES:-}" ]; then
  files=$LINT_FILES
else
  files=$(git log -20 --name-only --pretty=format: -- '*.cpp' | awk 'NF && !seen[$0]++' |
            grep -v -e '^tests/fixtures/' -e '^tests/fuzz/' | while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done |
            awk 'NR <= 6')
fi
if [ -n "$files" ]; then
  cmake -S . -B build/tidy -DFEEDRATE_PCH=OFF >/dev/null
  # shellcheck disable=SC2086
  if ! printf '%s\n' $files | xargs -P "$(nproc)" -n 1 clang-tidy-14 -p build/tidy --quiet >build/tidy/findings.txt 2>&1; then
    grep -E "(warning|error):" build/tidy/findings.txt || cat build/tidy/findings.txt
    echo "lint: clang-tidy found the above in: $(echo $files)"
    status=1
  else
    echo "lint: clang-tidy: $(echo "$files" | wc -w) recently changed file(s) clean"
  fi
fi
exit $status
