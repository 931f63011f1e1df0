#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang-14, ASan+UBSan) and runs each for SECONDS (default 30),
# seeded from tests/fuzz/corpus/<target> (and workloads/ for the YAML parser). Prints executions per target and
# in total. Any crash, sanitizer report, leak, timeout (10 s per input) or out-of-memory fails; the input that
# did it is kept as build/fuzz/artifacts/<target>-crash-* (add it to the corpus once fixed). Targets run side by side,
# one per CPU (FUZZ_JOBS overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
targets=(npy npz tfrecord tf_example hdf5_chunk workload parquet)
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target "${targets[@]/#/fuzz_}"  # the targets and what they link, not the whole loader
mkdir -p build/fuzz/artifacts
jobs_at_once="${FUZZ_JOBS:-$(nproc)}"  # targets run side by side, one per CPU
# One target: its own working corpus (the committed seeds stay read-only) and log; the result goes to $t.result.
fuzz_one() {
  local t=$1 work="build/fuzz/corpus-run/$1" log="build/fuzz/$1.log"
  local seeds=("tests/fuzz/corpus/$t")
  [ "$t" = workload ] && seeds+=(workloads)
  rm -rf "$work" && mkdir -p "$work"
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "build/fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="build/fuzz/artifacts/$t-" "$work" "${seeds[@]}" >"$log" 2>&1; then
    echo ok >"build/fuzz/$t.result"
  else
    echo FAILED >"build/fuzz/$t.result"
  fi
}
running=0
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs_at_once" ]; then wait -n; running=$((running - 1)); fi
done
wait
total=0
failed=()
printf '%-18s %12s %8s\n' target executions result
for t in "${targets[@]}"; do
  result=$(cat "build/fuzz/$t.result")
  [ "$result" = ok ] || failed+=("$t")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build/fuzz/$t.log" | tail -1)
  runs=${runs:-0}
  total=$((total + runs))
  printf '%-18s %12s %8s\n' "$t" "$runs" "$result"
done
printf '%-18s %12s\n' total "$total"
if [ ${#failed[@]} -gt 0 ]; then
  for t in "${failed[@]}"; do
    echo "== fuzz_$t failed; the end of its log (build/fuzz/$t.log):" >&2
    tail -40 "build/fuzz/$t.log" >&2
  done
  exit 1
fi
