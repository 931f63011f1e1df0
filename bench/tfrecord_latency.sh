#!/usr/bin/env bash
# Benchmark: TensorFlow's TFRecord stream where every request waits (tests/latencyfs: each open and read delayed by
# DELAY ms, direct_io). Feedrate alone: TensorFlow is not in Debian, so DLIO's TFReader cannot run beside it here
# (run bench/au_vs_dlio_latency.sh's way with your own TensorFlow install to compare). Two shapes, ResNet-50's
# (many records a file, batch 400, read_threads 8) and CosmoFlow's (one 2.7 MB record a file, batch 1, read_threads
# 4), each with the default access pattern (dlio: TensorFlow's stream replayed) and coalesced (the storage's best
# case); per run the AU, the requests one epoch made (a 2-epoch run's less a 1-epoch run's), the most in flight
# (from training's start), and the AU the stream arithmetic gives: an accelerator's S streams each read a file in
# (1 open + its fills + 2 reads at the end) round trips, S = read_threads where files hold many records, 3 x
# read_threads where each file is one record (the interleave's prefetched files read too).
# Usage: bench/tfrecord_latency.sh [OUT_PREFIX]   (writes OUT_PREFIX.md; needs root for FUSE)
#   env: DELAYS="20 2" COUNTS="1 4" WORK=/var/tmp/feedrate-tf-latency
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
delays=${DELAYS:-20 2}; counts=${COUNTS:-1 4}; work=${WORK:-/var/tmp/feedrate-tf-latency}
out=${1:-results/$(date -u +%Y-%m-%d)/tfrecord_latency}
case "$out" in -*) echo "OUT_PREFIX must not start with '-': $out" >&2; exit 2 ;; esac
mkdir -p "$(dirname "$out")" "$work/mnt"
feedrate=$PWD/build/release/cli/feedrate
latencyfs=$PWD/build/release/tests/latencyfs
[ -x "$feedrate" ] && [ -x "$latencyfs" ] || scripts/build.sh release
mnt="$work/mnt"
trap 'latencyfs_unmount "$mnt"' EXIT
stats() { latencyfs_counts "$mnt"; }
max_count=0; for n in $counts; do [ "$n" -gt "$max_count" ] && max_count=$n; done
# shape NAME WORKLOAD SPF RECORD BATCH THREADS STEPS COMPUTE
# (steps enough that the batches in flight at the start, read during the first step, are a small part of the epoch)
shapes=("resnet50 resnet50_h100 64 114660 400 8 12 0.224" "cosmoflow cosmoflow_h100 1 2828486 1 4 200 0.0035")
commit=$(git rev-parse --short HEAD); dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo " (with uncommitted changes)" || true)
{
  echo "# TFRecord stream on latencyfs (Feedrate alone; TensorFlow not installable here)"
  echo
  echo "Command: \`DELAYS=\"$delays\" COUNTS=\"$counts\" bench/tfrecord_latency.sh $out\`; $(date -u +%Y-%m-%dT%H:%MZ);"
  echo "Feedrate $commit$dirty; $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); $(uname -r)."
  echo
  echo "| shape | delay ms | accelerators | pattern | AU % | arithmetic AU % | opens / epoch | reads / epoch | most in flight |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$out.md"
for shape in "${shapes[@]}"; do
  read -r name wl spf record batch threads steps compute <<< "$shape"
  files=$(( (steps * batch * max_count + spf - 1) / spf ))
  data="$work/$name"
  params="--param dataset.num_files_train=$files --param dataset.num_samples_per_file=$spf --param dataset.record_length_bytes=$record --param dataset.record_length_bytes_stdev=0"
  [ -f "$data/.done-$files" ] || { rm -rf "$data"; "$feedrate" datagen -w "$wl" --data-dir "$data" $params > /dev/null; touch "$data/.done-$files"; }
  for delay in $delays; do
    latencyfs_mount "$data" "$mnt" "$work/latencyfs.log" "$delay"
    for n in $counts; do
      nfiles=$(( (steps * batch * n + spf - 1) / spf ))
      for pattern in dlio coalesced; do
        run_args=(run -w "$wl" --data-dir "$mnt" -n "$n" --param "dataset.num_files_train=$nfiles" --param "dataset.num_samples_per_file=$spf"
                  --param "dataset.record_length_bytes=$record" --param dataset.record_length_bytes_stdev=0
                  --param "reader.batch_size=$batch" --param "reader.read_threads=$threads" --param "train.computation_time=$compute"
                  --param "feedrate.access_pattern=$pattern")
        read -r o0 r0 _ <<< "$(stats)"
        # (the most in flight from training's start: the stats are read, which restarts it, at training_start)
        set +e
        "$feedrate" "${run_args[@]}" --param train.epochs=1 --json-events --results-dir "$work/r1" 2> "$work/r1.log" |
          while IFS= read -r line; do case "$line" in *'"event":"training_start"'*) stats > /dev/null ;; esac; done
        rc=${PIPESTATUS[0]}
        set -e
        [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { cat "$work/r1.log" >&2; exit 2; }
        read -r o1 r1 inflight <<< "$(stats)"
        "$feedrate" "${run_args[@]}" --param train.epochs=2 --results-dir "$work/r2" > "$work/r2.log" 2>&1 || [ $? -eq 3 ]
        read -r o2 r2 _ <<< "$(stats)"
        row=$(python3 - "$work/r1/summary.json" "$n" "$spf" "$record" "$batch" "$threads" "$compute" "$delay" \
                        "$((o2 - o1 - (o1 - o0)))" "$((r2 - r1 - (r1 - r0)))" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
n, spf, record, batch, threads = (int(x) for x in sys.argv[2:7])
compute, delay = float(sys.argv[7]), float(sys.argv[8]) / 1000
opens, reads = int(sys.argv[9]), int(sys.argv[10])
f = s["feedrate"]
framed = record + 16
size = spf * framed
fills = -(-size // (256 << 10))
trips = 1 + fills + (2 if size % (256 << 10) else 1)
streams = threads if spf > 1 else 3 * threads
records_per_s = streams * spf / (trips * delay)
arith = min(100.0, 100 * records_per_s * compute / batch)
print(f"{f['access_pattern']} | {s['metric']['train_au_mean_percentage']:.1f} | {arith:.1f} | {opens // 1} | {reads} ")
PY
)
        echo "| $name | $delay | $n | $row | $inflight |" >> "$out.md"
      done
    done
  done
done
latencyfs_unmount "$mnt"
cat "$out.md"
