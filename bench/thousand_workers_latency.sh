#!/usr/bin/env bash
# Benchmark: issue 35's "256 accelerators x 4 DataLoader workers against a 50 ms-per-request store" on this client.
# Feedrate alone: DLIO would need 256 MPI ranks and 1,024 worker processes, which no 2-CPU client runs (the 1-8
# accelerator comparison with DLIO is bench/au_vs_dlio_latency.sh). tests/latencyfs delays every open and read by
# DELAY ms (direct_io); npz samples of RECORD bytes, batch 1, read_threads THREADS, COMPUTE s a step (small enough
# that every worker always has a sample to read: the storage is the limit), one epoch of STEPS steps per
# accelerator. Per accelerator count: the most requests in flight the file system saw in training, its requests a
# sample, the AU and the AU the arithmetic allows (min(1, compute x workers / (batch x requests a sample x delay))),
# and the client CPU (user + system of the whole process, bash's time) as a share of the client's CPUs over the run's
# wall time.
# Usage: bench/thousand_workers_latency.sh [OUT_PREFIX]   (writes OUT_PREFIX.md; needs root for FUSE)
#   env: COUNTS="64 256" DELAY=50 RECORD=8192 THREADS=4 STEPS=8 COMPUTE=0.05 WORK=/var/tmp/feedrate-thousand
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
counts=${COUNTS:-64 256}; delay=${DELAY:-50}; record=${RECORD:-8192}; threads=${THREADS:-4}; steps=${STEPS:-8}
compute=${COMPUTE:-0.05}; work=${WORK:-/var/tmp/feedrate-thousand}
out=${1:-results/$(date -u +%Y-%m-%d)/thousand_workers_latency}
case "$out" in -*) echo "OUT_PREFIX must not start with '-': $out" >&2; exit 2 ;; esac
mkdir -p "$(dirname "$out")" "$work/mnt"
feedrate=$PWD/build/release/cli/feedrate
latencyfs=$PWD/build/release/tests/latencyfs
[ -x "$feedrate" ] && [ -x "$latencyfs" ] || scripts/build.sh release
mnt="$work/mnt"
trap 'latencyfs_unmount "$mnt"' EXIT
max_count=0; for n in $counts; do [ "$n" -gt "$max_count" ] && max_count=$n; done
files=$(( steps * max_count ))
shape=(--param=dataset.format=npz --param=dataset.num_samples_per_file=1 --param=dataset.record_length_bytes="$record"
       --param=dataset.record_length_bytes_stdev=0)
have=$( (find "$work/data/train" -maxdepth 1 -type f 2>/dev/null || true) | wc -l)
if [ "$have" -ne "$files" ]; then
  rm -rf "$work/data"
  "$feedrate" datagen -w unet3d_h100 --data-dir "$work/data" --param=dataset.num_files_train="$files" "${shape[@]}" > /dev/null
fi
commit=$(git rev-parse --short HEAD); dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo " (with uncommitted changes)" || true)
{
  echo "# 256 accelerators x 4 workers where every request waits (Feedrate alone)"
  echo
  echo "- command: \`COUNTS=\"$counts\" DELAY=$delay RECORD=$record THREADS=$threads STEPS=$steps COMPUTE=$compute bench/thousand_workers_latency.sh $out\`"
  echo "- machine: $(nproc) CPUs, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r); date $(date -u +%Y-%m-%dT%H:%MZ); Feedrate $commit$dirty"
  echo "- storage: tests/latencyfs over local disk, every open and read delayed $delay ms, direct_io (no page cache); $files npz files of $record bytes"
  echo "- run: \`feedrate run -w unet3d_h100 -n N\`, the default access pattern (DLIO's npz reader calls), batch 1, read_threads $threads, compute $compute s a step, one epoch of $steps steps per accelerator"
  echo "- in flight: the most open/read requests the file system held at once during training; requests a sample: training's opens + reads over its samples; wall and CPU: the whole run (set-up's indexing included); CPU share: user + system over (wall x CPUs)"
  echo
  echo "| accelerators | workers | most in flight | requests a sample | AU % | arithmetic AU % | wall s | client CPU s | CPU share |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$out.md"
for n in $counts; do
  latencyfs_mount "$work/data" "$mnt" "$work/latencyfs.log" "$delay"
  res="$work/r$n"; rm -rf "$res" "$res.train_start"
  t0=$(date +%s.%N)
  # The file system's counters at the run's training_start event (set-up done; reading them restarts max_in_flight),
  # so the requests and the most in flight are training's.
  cpu=$( { TIMEFORMAT='%U %S'; time { { "$feedrate" run -w unet3d_h100 --data-dir "$mnt" --param=dataset.num_files_train=$(( steps * n )) \
        "${shape[@]}" --param=reader.batch_size=1 --param=reader.read_threads="$threads" --param=train.epochs=1 \
        --param=train.computation_time="$compute" -n "$n" --results-dir "$res" --json-events 2>&1 || [ $? -eq 3 ]; } |
        while IFS= read -r line; do
          case "$line" in *'"event":"training_start"'*) latencyfs_counts "$mnt" > "$res.train_start" ;; esac; echo "$line"; done > "$res.log"; }; } 2>&1 )
  t1=$(date +%s.%N)
  read -r o1 r1 inflight < <(latencyfs_counts "$mnt")
  read -r o0 r0 _ < "$res.train_start"
  au=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]+'/summary.json'))['metric']['train_au_mean_percentage'], 2))" "$res")
  python3 - "$n" "$threads" "$inflight" "$o0" "$r0" "$o1" "$r1" "$au" "$compute" "$delay" "$t0" "$t1" "$cpu" "$steps" "$(nproc)" >> "$out.md" <<'PY'
import sys
n, thr, inflight, o0, r0, o1, r1 = (int(x) for x in sys.argv[1:8])
au, compute, delay, t0, t1 = (float(x) for x in sys.argv[8:13])
user, system = (float(x) for x in sys.argv[13].split())
steps, cpus = int(sys.argv[14]), int(sys.argv[15])
samples = n * steps
per_sample = (o1 + r1 - o0 - r0) / samples
arith = 100 * min(1.0, compute * thr / (1 * per_sample * delay / 1000))
wall = t1 - t0
print(f"| {n} | {n * thr} | {inflight} | {per_sample:.1f} | {au:.2f} | {arith:.1f} | {wall:.1f} | {user + system:.2f} | {100 * (user + system) / (wall * cpus):.1f}% |")
PY
  tail -1 "$out.md"
done
