#!/usr/bin/env bash
# Benchmark: `feedrate datagen --fsync` against fio sequential writes of the same bytes, same thread count, same
# directory, every file fsynced (fio --end_fsync=1), so both measure the device, not the page cache. Formats:
# Unet3D-shaped npz and ResNet-50-shaped TFRecord (each ~2.3 GiB), the same write size on both sides (datagen
# --write-size, fio --bs). Alternated (A B A B ...), medians.
# Usage: bench/datagen_vs_fio.sh [OUT.json]   env: DIR=/var/tmp/feedrate-datagen THREADS=2 REPEATS=3 BS=256k
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${DIR:-/var/tmp/feedrate-datagen}
threads=${THREADS:-2}
repeats=${REPEATS:-3}
bs=${BS:-256k}
bs_bytes=$(numfmt --from=iec "${bs^^}")
out=${1:-results/$(date -u +%Y-%m-%d)/datagen_vs_fio.json}
mkdir -p "$(dirname "$out")"
feedrate=build/release/cli/feedrate
command -v fio >/dev/null || { echo "fio is required: apt-get install fio" >&2; exit 2; }
[ -x "$feedrate" ] || scripts/build.sh release
work=$(mktemp -d)
trap 'rm -rf "$work" "$dir"' EXIT
declare -A wl=([npz]=unet3d_h100 [tfrecord]=resnet50_h100)
declare -A ds=([npz]="--param dataset.num_files_train=16" [tfrecord]="--param dataset.num_files_train=20")
for ((r = 1; r <= repeats; r++)); do
  for k in npz tfrecord; do
    rm -rf "$dir"; mkdir -p "$dir"; sync
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %U %S' -o "$work/fr_${k}_$r" "$feedrate" datagen -w "${wl[$k]}" --data-dir "$dir/d" ${ds[$k]} \
      --threads "$threads" --fsync --write-size "$bs_bytes" > "$work/fr_${k}_$r.out"
    bytes=$(du -sb "$dir/d" | cut -f1)
    rm -rf "$dir"; mkdir -p "$dir"; sync
    fio --name=w --directory="$dir" --rw=write --bs="$bs" --numjobs="$threads" --size=$((bytes / threads)) \
      --ioengine=psync --end_fsync=1 --group_reporting --output-format=json --output="$work/fio_${k}_$r.json" >/dev/null
    echo "$bytes" > "$work/bytes_${k}_$r"
  done
done
rm -rf "$dir"
/usr/bin/python3 - "$work" "$out" "$repeats" "$threads" "$bs" <<'PY'
import datetime, json, os, platform, re, statistics, sys
work, out, repeats, threads, bs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
MiB = 1 << 20
rows = {}
for k in ["npz", "tfrecord"]:
    fr, frw, fi = [], [], []
    for r in range(1, repeats + 1):
        b = int(open(f"{work}/bytes_{k}_{r}").read())
        wall = float(open(f"{work}/fr_{k}_{r}").read().splitlines()[-1].split()[0])
        frw.append(b / MiB / wall)  # whole process wall time: MPI start, planning, writing, fsync
        gen = float(re.search(r" in ([0-9.]+) s ", open(f"{work}/fr_{k}_{r}.out").read()).group(1))
        fr.append(b / MiB / gen)  # datagen's own timing: writing and fsync (like fio's job runtime)
        j = json.load(open(f"{work}/fio_{k}_{r}.json"))["jobs"][0]["write"]
        fi.append(j["bw_bytes"] / MiB)
    rows[k] = {"feedrate_mib_per_s": statistics.median(fr), "fio_mib_per_s": statistics.median(fi),
               "feedrate_process_wall_mib_per_s": statistics.median(frw),
               "all_feedrate": fr, "all_feedrate_process_wall": frw, "all_fio": fi}
    rows[k]["ratio"] = rows[k]["feedrate_mib_per_s"] / rows[k]["fio_mib_per_s"]
doc = {"benchmark": "datagen_vs_fio", "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
       "command": f"THREADS={threads} REPEATS={repeats} BS={bs} bench/datagen_vs_fio.sh {out}",
       "machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
       "what": f"feedrate datagen --fsync --write-size {bs} vs fio --rw=write --bs={bs} --end_fsync=1, same bytes/threads/dir",
       "rows": rows}
json.dump(doc, open(out, "w"), indent=1)
print(f"{'format':9} {'feedrate MiB/s':>15} {'(process wall)':>15} {'fio MiB/s':>10} {'ratio':>6}")
for k, v in rows.items():
    print(f"{k:9} {v['feedrate_mib_per_s']:15.1f} {v['feedrate_process_wall_mib_per_s']:15.1f} {v['fio_mib_per_s']:10.1f} {v['ratio']:6.2f}")
print("wrote", out)
PY
