#!/usr/bin/env bash
# Benchmark (issue 20, goal 1): a RetinaNet-shaped dataset of 1,170,301 small JPEG files on the local disk.
#   datagen: files per second writing the dataset, and for REF files (200,000) against fio creating and writing as
#            many files of the same size with the same parallelism (2 jobs) in a fresh folder of the same file system,
#            one after the other: the file system's create rate (fio cannot hold a million files' state; and ext4's
#            rate depends on its recent deletions, so only the same-run pair compares);
#   run:     process start to the first step (summary setup_seconds, the --json-events training_start event),
#            caches dropped first, against `ls -f` listing the same folder with caches dropped (goal: <= 3x), with
#            1 rank and with 4 ranks; every rank's peak RSS (/usr/bin/time; goal: <= 150 MiB) and the paths it kept.
# Needs root (drop_caches), fio, /usr/bin/time. Usage: bench/million_files.sh [OUT]   env: DIR=/var/tmp/feedrate-1m
#   FILES=1170301 REF=200000 RANKS="1 4" KEEP=1 (keep the dataset afterwards) REUSE=1 (a dataset left by KEEP=1)
#   FEEDRATE=path/to/feedrate (another build, e.g. an earlier commit, against the same dataset); REF=0: no datagen pair
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/$(date -u +%Y-%m-%d)/million_files}
dir=${DIR:-/var/tmp/feedrate-1m}
files=${FILES:-1170301}
feedrate=${FEEDRATE:-build/release/cli/feedrate}
[ -x "$feedrate" ] || scripts/build.sh release
for tool in "${FIO:-fio}" /usr/bin/time; do command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 2; }; done
mkdir -p "$(dirname "$out")"
params=(--param "dataset.num_files_train=$files" --param dataset.record_length_bytes=64)
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
log="${out}.log"
: > "$log"

ref=${REF:-200000}
if [ "${REUSE:-0}" != 1 ] || [ ! -d "$dir/train" ]; then
  rm -rf "$dir"
  t0=$(now)
  "$feedrate" datagen -w retinanet_b200 --data-dir "$dir" "${params[@]}" --threads 2 | tee -a "$log"
  t1=$(now)
  echo "datagen, the whole dataset: $(python3 -c "print(f'{$files / ($t1 - $t0):.0f}')") files/s" | tee -a "$log"
fi
size=$(stat -c %s "$dir/train/$(ls -f "$dir/train" | grep -m1 jpeg)")
if [ "$ref" -gt 0 ]; then  # (REF=0: the set-up runs only)
rm -rf "$dir-fio" "$dir-ref"
mkdir -p "$dir-fio"
t2=$(now)
"${FIO:-fio}" --name=create --directory="$dir-fio" --numjobs=2 --nrfiles=$((ref / 2)) --filesize="$size" --bs="$size" \
  --rw=write --ioengine=psync --openfiles=1 --file_service_type=sequential --create_on_open=1 --group_reporting \
  > "$out.fio_create.txt"
t3=$(now)
"$feedrate" datagen -w retinanet_b200 --data-dir "$dir-ref" --param "dataset.num_files_train=$ref" \
  --param dataset.record_length_bytes=64 --threads 2 > /dev/null
t4=$(now)
rm -rf "$dir-fio" "$dir-ref"
echo "$ref files: fio create+write $(python3 -c "print(f'{$ref / ($t3 - $t2):.0f}')") files/s ($size-byte files)," \
     "datagen $(python3 -c "print(f'{$ref / ($t4 - $t3):.0f}')") files/s: $(python3 -c "print(f'{($t3 - $t2) / ($t4 - $t3):.2f}')") x fio" | tee -a "$log"
fi

for ranks in ${RANKS:-1 4}; do
  drop
  s=$(now); n=$(ls -f "$dir/train" | wc -l); e=$(now)
  echo "ranks $ranks: ls -f (cold) $n entries in $(python3 -c "print(f'{$e - $s:.2f}')") s" | tee -a "$log"
  drop
  if [ "$ranks" -gt 1 ]; then
    mpirun --allow-run-as-root --oversubscribe -np "$ranks" /usr/bin/time -f "rank peak RSS %M KiB" "$feedrate" run -w retinanet_b200 \
      --data-dir "$dir" "${params[@]}" --param train.total_training_steps=2 --param train.epochs=1 --json-events \
      --results-dir "$out.run$ranks" 2>&1 | grep -E "training_start|peak RSS" | tee -a "$log"
  else
    /usr/bin/time -f "rank peak RSS %M KiB" "$feedrate" run -w retinanet_b200 --data-dir "$dir" "${params[@]}" \
      --param train.total_training_steps=2 --param train.epochs=1 --json-events --results-dir "$out.run$ranks" 2>&1 |
      grep -E "training_start|peak RSS" | tee -a "$log"
  fi
  python3 -c "import json,sys; [print(f'rank {r[\"rank\"]}: paths kept {r[\"files_held\"]} ({r[\"file_list_bytes\"] / 2**20:.1f} MiB)') for r in json.load(open(sys.argv[1]))['feedrate'].get('setup_per_rank', [])]" \
    "$out.run$ranks/summary.json" | tee -a "$log"
  rm -rf "$out.run$ranks"
done
{ date -u +%Y-%m-%dT%H:%M:%SZ; uname -r; nproc; grep -m1 "model name" /proc/cpuinfo; free -g | head -2; df -hT "$(dirname "$dir")" | tail -1; "${FIO:-fio}" --version; } > "${out}_machine.txt"
[ "${KEEP:-0}" = 1 ] || rm -rf "$dir"
echo "results: $log, ${out}_machine.txt"
