#!/usr/bin/env bash
# Benchmark: `feedrate sweep` answers (accelerators supported at AU >= 90%) for full-size Unet3D, from tmpfs
# (the client's own limit: unet3d_h100, unet3d_a100) and with O_DIRECT from the local disk (the storage's limit:
# unet3d_v100, unet3d_a100), each with the storage ceiling iobench measured and the sweep's bottleneck verdict.
# 56 real files per location; the dataset is hard links to them (every sample still reads its ~140 MB), with
# train.total_training_steps capping each run at STEPS steps so that small and large counts take similar time.
# Usage: bench/sweep_unet3d.sh [OUT_PREFIX]   env: REAL=56 STEPS=32 DISK=/var/tmp/feedrate-sweep PARTS="tmpfs odirect"
set -euo pipefail
cd "$(dirname "$0")/.."
real=${REAL:-56}
steps=${STEPS:-32}
out=${1:-results/$(date -u +%Y-%m-%d)/sweep_unet3d}
disk=${DISK:-/var/tmp/feedrate-sweep}
feedrate=build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
mkdir -p "$(dirname "$out")"
links=4096  # names: enough for 16 accelerators x 7 x 32 steps and more
. bench/lib.sh
make_links() { hard_link_view "$1" "$real" "$2" "$links"; }  # $1: $real real files under train/, $2: the view
work=$(mktemp -d)  # every run's results; only sweep.json and the console output are kept (OUT_PREFIX_*)
trap 'rm -rf /dev/shm/feedrate-sweep-links "$disk/links" "$work"' EXIT
common=(--param "dataset.num_files_train=$links" --param train.epochs=1 --param "train.total_training_steps=$steps" --ceiling)

parts=${PARTS:-tmpfs odirect}
if [[ " $parts " == *" tmpfs "* ]]; then
"$feedrate" datagen -w unet3d_h100 --data-dir /dev/shm/feedrate-unet3d --param "dataset.num_files_train=$real" --skip-existing --threads 2
make_links /dev/shm/feedrate-unet3d /dev/shm/feedrate-sweep-links
for acc in h100 a100; do
  "$feedrate" sweep -w "unet3d_$acc" --data-dir /dev/shm/feedrate-sweep-links "${common[@]}" --min 2 \
    --results-dir "$work/tmpfs_$acc" | tee "${out}_tmpfs_$acc.txt" || [ "${PIPESTATUS[0]}" -eq 3 ]
  cp "$work/tmpfs_$acc/sweep.json" "${out}_tmpfs_$acc.json"
done
rm -rf /dev/shm/feedrate-sweep-links
fi

if [[ " $parts " == *" odirect "* ]]; then
"$feedrate" datagen -w unet3d_h100 --data-dir "$disk/real" --param "dataset.num_files_train=$real" --skip-existing --threads 2 --fsync
make_links "$disk/real" "$disk/links"
for acc in v100 a100; do
  "$feedrate" sweep -w "unet3d_$acc" --data-dir "$disk/links" "${common[@]}" --odirect \
    --results-dir "$work/odirect_$acc" | tee "${out}_odirect_$acc.txt" || [ "${PIPESTATUS[0]}" -eq 3 ]
  cp "$work/odirect_$acc/sweep.json" "${out}_odirect_$acc.json"
done
fi
{ date -u +%Y-%m-%dT%H:%M:%SZ; uname -r; nproc; grep -m1 "model name" /proc/cpuinfo; free -g | head -2; } > "${out}_machine.txt"
echo "results: ${out}_*.{json,txt} (one sweep.json and console log per sweep, machine facts)"
