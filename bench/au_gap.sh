#!/usr/bin/env bash
# Benchmark: where an accelerator's time goes when the storage is free (issue 22 item 3). Full-size Unet3D from
# tmpfs (REAL real files under a hard-link view of N x 7 x STEPS names), 1 epoch of STEPS steps per run, for each
# accelerator count in COUNTS and each variant in VARIANTS (run options, ';'-separated), alternated, REPEATS times;
# each run's steps.csv split into stall (waiting for the batch) and barrier (the emulated all-reduce) time, with
# fio's copy limit (psync, 2 jobs, 1 MiB, the real files) measured first.
# FEEDRATES="<binary> <binary>" runs each variant with each build in turn (an A/B of two builds in one run).
# Usage: bench/au_gap.sh [OUT.txt]
#   env: REAL=56 STEPS=120 COUNTS="2 4" REPEATS=3 VARIANTS="--io-thread-policy idle;--io-thread-policy normal"
#        FEEDRATES=build/release/cli/feedrate
set -euo pipefail
cd "$(dirname "$0")/.."
real=${REAL:-56}; steps=${STEPS:-120}; counts=${COUNTS:-2 4}; repeats=${REPEATS:-3}
variants=${VARIANTS:---io-thread-policy idle;--io-thread-policy normal}
out=${1:-results/$(date -u +%Y-%m-%d)/au_gap.txt}
mkdir -p "$(dirname "$out")"
feedrate=$PWD/build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
feedrates=${FEEDRATES:-$feedrate}
src=/dev/shm/feedrate-unet3d
links=/dev/shm/feedrate-au-gap-links
work=$(mktemp -d)
trap 'rm -rf "$work" "$links"' EXIT
"$feedrate" datagen -w unet3d_h100 --data-dir "$src" --param "dataset.num_files_train=$real" --skip-existing --threads 2 > /dev/null
max=$(echo "$counts" | tr ' ' '\n' | sort -n | tail -1)
names=$((max * 7 * steps))
. bench/lib.sh
hard_link_view "$src" "$real" "$links" "$names"
fio --name=copy --opendir="$src/train" --rw=read --bs=1m --ioengine=psync --numjobs=2 --time_based --runtime=15 \
  --group_reporting --output-format=json --file_service_type=sequential --output="$work/fio.json" > /dev/null
{
  python3 -c "import json; m=json.load(open('$work/fio.json'))['jobs'][0]['read']['bw_bytes']/2**20; print(f'fio {m:.0f} MiB/s = {m/3029.9:.2f} unet3d_h100 (date: $(date -u +%FT%TZ), $(nproc) CPUs, $(uname -r))')"
  IFS=';' read -r -a vs <<< "$variants"
  for ((r = 1; r <= repeats; r++)); do
    for n in $counts; do
      for v in "${vs[@]}"; do
       for fr in $feedrates; do
        d="$work/run"; rm -rf "$d"
        # shellcheck disable=SC2086  # a variant is a list of options
        "$fr" run -w unet3d_h100 --data-dir "$links" --param "dataset.num_files_train=$((n * 7 * steps))" -n "$n" \
          --param train.epochs=1 -q --results-dir "$d" $v > /dev/null 2>&1 || [ $? -eq 3 ]
        label=$v; [ "$feedrates" = "$feedrate" ] || label="$fr $v"
        python3 - "$d" "$n" "$label" <<'PY'
import csv, json, sys
d, n, v = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = json.load(open(d + "/summary.json")); f = s["feedrate"]
rows = [r for r in csv.DictReader(open(d + "/steps.csv")) if r["step"] != "1"]
stall = sum(float(r["stall_seconds"]) for r in rows) / n
barrier = sum(float(r["barrier_seconds"]) for r in rows) / n
print(f"n={n} [{v}] AU {s['metric']['train_au_mean_percentage']:.2f}% stall p50 {f['stall_seconds']['p50'] * 1e3:.2f} ms "
      f"p90 {f['stall_seconds']['p90'] * 1e3:.1f} ms, barrier p50 {f['barrier_seconds']['p50'] * 1e3:.2f} ms "
      f"p90 {f['barrier_seconds']['p90'] * 1e3:.1f} ms; per accelerator (steps 2..) stall {stall:.2f} s barrier "
      f"{barrier:.2f} s; {f['read_mib_per_s']:.0f} MiB/s")
PY
       done
      done
    done
  done
} | tee "$out"
