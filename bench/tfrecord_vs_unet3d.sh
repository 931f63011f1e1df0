#!/usr/bin/env bash
# Benchmark: per-record cost of the TFRecord path. `feedrate run` with computation_time=0 from tmpfs on
#  (a) a Unet3D-shaped npz dataset (the reference: ~140 MB samples),
#  (b) a ResNet-50-shaped TFRecord dataset of about the same total size (~112 KiB records, 1251 per file),
#  (c) a CosmoFlow-shaped TFRecord dataset of about the same size (one ~2.7 MiB record per file, many files),
#  (d) a BERT-shaped TFRecord dataset (2,500-byte records) with CRC verification on: records/s per client core.
# The four run alternately (A B C D, REPEATS times); the table reports medians and the ratios to (a).
# Usage: bench/tfrecord_vs_unet3d.sh [OUT.json]   env: DIR=/dev/shm/feedrate-tfr ACCS=2 EPOCHS=3 REPEATS=3
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${DIR:-/dev/shm/feedrate-tfr}
accs=${ACCS:-2}
epochs=${EPOCHS:-3}
repeats=${REPEATS:-3}
out=${1:-results/$(date -u +%Y-%m-%d)/tfrecord_vs_unet3d.json}
mkdir -p "$(dirname "$out")"
feedrate=build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ~2.3 GiB each: 16 Unet3D files; 20 ResNet-50 files x 1251 records; 850 CosmoFlow files; BERT 8 x 40000 records.
declare -A wl=([unet3d]=unet3d_h100 [resnet50]=resnet50_h100 [cosmoflow]=cosmoflow_h100 [bert]=bert_v100)
declare -A ds=([unet3d]="--param dataset.num_files_train=16"
               [resnet50]="--param dataset.num_files_train=20"
               [cosmoflow]="--param dataset.num_files_train=850"
               [bert]="--param dataset.num_files_train=8 --param dataset.num_samples_per_file=40000")
# Loader-speed runs: no compute; bert's step cap lifted; unet3d batch 2 so each epoch has several steps.
declare -A extra=([unet3d]="--param reader.batch_size=2" [resnet50]="" [cosmoflow]=""
                  [bert]="--param train.total_training_steps=-1")
for k in unet3d resnet50 cosmoflow bert; do
  # shellcheck disable=SC2086
  "$feedrate" datagen -w "${wl[$k]}" --data-dir "$dir/$k" ${ds[$k]} --skip-existing --threads 2 >/dev/null
done
for ((r = 1; r <= repeats; r++)); do
  for k in unet3d resnet50 cosmoflow bert; do
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %U %S' -o "$work/time_${k}_$r" "$feedrate" run -w "${wl[$k]}" --data-dir "$dir/$k" ${ds[$k]} \
      ${extra[$k]} -n "$accs" --param train.computation_time=0 --param "train.epochs=$epochs" \
      --results-dir "$work/run_${k}_$r" > "$work/out_${k}_$r" 2>&1 || [ $? -eq 3 ]  # AU 0 is expected with no compute
  done
done
/usr/bin/python3 - "$work" "$out" "$repeats" "$accs" "$epochs" <<'PY'
import datetime, json, platform, statistics, sys
work, out, repeats, accs, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
MiB = 1 << 20
rows = {}
for k in ["unet3d", "resnet50", "cosmoflow", "bert"]:
    vals = []
    for r in range(1, repeats + 1):
        s = json.load(open(f"{work}/run_{k}_{r}/summary.json"))
        f = s["feedrate"]
        wall, user, sys_ = map(float, open(f"{work}/time_{k}_{r}").read().splitlines()[-1].split())
        samples = f["steps_per_epoch"] * s["epochs"] * s["num_accelerators"] * f["config"]["reader"]["batch_size"]
        vals.append({"mib_per_s": f["read_mib_per_s"], "samples": samples,
                     "samples_per_cpu_s": samples / (user + sys_), "cpu_s": user + sys_,
                     "sample_check": f["sample_check"], "retain": f["retain_batches"], "coalesce": f["coalesce_reads_bytes"]})
    med = lambda key: statistics.median(v[key] for v in vals)
    rows[k] = {"mib_per_s": med("mib_per_s"), "samples_per_cpu_s": med("samples_per_cpu_s"),
               "all_mib_per_s": [v["mib_per_s"] for v in vals], "sample_check": vals[0]["sample_check"],
               "retain_batches": vals[0]["retain"], "coalesce_reads_bytes": vals[0]["coalesce"]}
for k in rows:
    rows[k]["ratio_to_unet3d"] = rows[k]["mib_per_s"] / rows["unet3d"]["mib_per_s"]
doc = {"benchmark": "tfrecord_vs_unet3d", "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
       "command": f"ACCS={accs} EPOCHS={epochs} REPEATS={repeats} bench/tfrecord_vs_unet3d.sh {out}",
       "machine": {"cpus": __import__("os").cpu_count(), "kernel": platform.release()},
       "what": "feedrate run, computation_time=0, tmpfs (page cache), alternated, medians", "rows": rows}
json.dump(doc, open(out, "w"), indent=1)
print(f"{'dataset':10} {'MiB/s':>9} {'ratio':>6} {'samples/CPU-s':>14}  check")
for k, v in rows.items():
    print(f"{k:10} {v['mib_per_s']:9.1f} {v['ratio_to_unet3d']:6.2f} {v['samples_per_cpu_s']:14.0f}  {v['sample_check']}")
print("wrote", out)
PY
