#!/usr/bin/env bash
# Benchmark: what DLIO's own client costs where the storage costs nothing. DLIO upstream and Feedrate on the
# throttled-disk benchmark's shape (bench/au_vs_dlio.sh: Unet3D-shaped npz, 8 MiB samples, batch 4, 0.2 s compute,
# DLIO's 4 DataLoader workers per rank) read from tmpfs, where every read is a copy: the AU either loses here is
# the client's (its processes, hand-offs and CPU), not the storage's. Per accelerator count: both AUs, and DLIO's
# `load` (its wait for each batch, from {rank}_output.json) in step 1 and summed over the later steps.
# Usage: bench/dlio_client_cost.sh [OUT_PREFIX]   (writes OUT_PREFIX.md)
#   env: DLIO_ENV=/opt/dlio-peer/env.sh COUNTS="1 2 3 4" DATA=/dev/shm/feedrate-client-cost FILES=480 RECORD=8388608
#        BATCH=4 COMPUTE=0.2 KEEP= (keep the dataset)
set -euo pipefail
cd "$(dirname "$0")/.."
dlio_env=${DLIO_ENV:-/opt/dlio-peer/env.sh}
counts=${COUNTS:-1 2 3 4}; data=${DATA:-/dev/shm/feedrate-client-cost}
files=${FILES:-480}; record=${RECORD:-8388608}; batch=${BATCH:-4}; compute=${COMPUTE:-0.2}
out=${1:-results/$(date -u +%Y-%m-%d)/dlio_client_cost}
case "$out" in -*) echo "OUT_PREFIX must not start with '-': $out" >&2; exit 2 ;; esac
mkdir -p "$(dirname "$out")"
feedrate=$PWD/build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
[ -f "$dlio_env" ] || { echo "no DLIO at $dlio_env (set DLIO_ENV)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$dlio_env"
shape=(dataset.num_files_train="$files" dataset.num_samples_per_file=1 dataset.record_length_bytes="$record"
       dataset.record_length_bytes_stdev=0 reader.batch_size="$batch" train.epochs=1 train.computation_time="$compute")
"$feedrate" datagen -w unet3d_h100 --data-dir "$data" "${shape[@]/#/--param=}" --skip-existing --threads 2 > /dev/null
mkdir -p "$data/valid"  # DLIO lists it even with no evaluation
work=$(mktemp -d)
trap 'rm -rf "$work"; [ -n "${KEEP:-}" ] || rm -rf "$data"' EXIT
for n in $counts; do
  # shellcheck disable=SC2086  # $DLIO is a command line (python3 -m ...), split on purpose
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" -x PYTHONPATH -x DFTRACER_ENABLE \
    $DLIO workload=unet3d_h100 ++workload.workflow.generate_data=False ++workload.workflow.train=True \
    ++workload.workflow.checkpoint=False ++workload.dataset.data_folder="$data" "${shape[@]/#/++workload.}" \
    hydra.run.dir="$work/dlio$n" ++workload.output.folder="$work/dlio$n" > "$work/dlio$n.log" 2>&1 ||
    { echo "DLIO at $n ranks failed:" >&2; tail -20 "$work/dlio$n.log" >&2; exit 1; }
  "$feedrate" run -w unet3d_h100 --data-dir "$data" "${shape[@]/#/--param=}" --param=workflow.checkpoint=False \
    --param=feedrate.access_pattern=dlio -n "$n" --results-dir "$work/fr$n" -q > "$work/fr$n.log" 2>&1 ||
    [ $? -eq 3 ] || { echo "Feedrate at $n failed:" >&2; tail -20 "$work/fr$n.log" >&2; exit 1; }
done
rm -rf /tmp/pymp-* 2>/dev/null || true
commit=$(git rev-parse --short HEAD); dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo " (with uncommitted changes)" || true)
python3 - "$work" "$out.md" "$counts" "Feedrate $commit$dirty; $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); $(uname -r); $(date -u +%Y-%m-%dT%H:%MZ)" <<'PY'
import json, glob, sys
work, out, counts, machine = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4]
rows = ["# DLIO's client cost where the storage costs nothing (tmpfs)", "",
        f"Command: `COUNTS=\"{' '.join(counts)}\" bench/dlio_client_cost.sh`; {machine}.", "",
        "| accelerators | DLIO AU % | Feedrate AU % | Feedrate - DLIO (points) | DLIO load, step 1 (s) | DLIO load, later steps (s, sum; ms a step) |",
        "|---|---|---|---|---|---|"]
for n in counts:
    dl = json.load(open(f"{work}/dlio{n}/summary.json"))["metric"]["train_au_mean_percentage"]
    fr = json.load(open(f"{work}/fr{n}/summary.json"))["metric"]["train_au_mean_percentage"]
    first, rest, steps = [], [], 0
    for f in sorted(glob.glob(f"{work}/dlio{n}/*_output.json")):
        load = json.load(open(f))["1"]["load"]
        if isinstance(load, dict):
            load = list(load.values())[0]
        first.append(load[0]); rest.append(sum(load[1:])); steps = len(load) - 1
    r = sum(rest) / len(rest)
    rows.append(f"| {n} | {dl:.2f} | {fr:.2f} | {fr - dl:+.2f} | {sum(first) / len(first):.3f} | {r:.3f}; {1000 * r / max(1, steps):.1f} |")
open(out, "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
