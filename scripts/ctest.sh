#!/usr/bin/env bash
# Runs one preset's test suite (scripts/ctest.sh [release|asan|tsan] [ctest args...]) and fails it when a test was
# skipped without an entry in tests/skip-allowlist.txt; prints every skip with its reason (scripts/check-skips.py).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
shift || true
junit="$PWD/build/$preset/junit.xml"
rm -f "$junit"
status=0
ctest --preset "$preset" -j2 --output-junit "$junit" "$@" || status=$?
if [ -f "$junit" ]; then
  python3 scripts/check-skips.py "$junit" tests/skip-allowlist.txt || status=1
else
  echo "ctest wrote no $junit" >&2
  status=1
fi
exit $status
