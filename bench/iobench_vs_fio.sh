#!/usr/bin/env bash
# Benchmark: `feedrate iobench` against fio on the same file, O_DIRECT random reads with io_uring, for
# bs in {4k, 128k, 1m} x qd in {1, 32}, one thread; the two alternate (A B A B A B) per cell; medians and ratios.
# Usage: bench/iobench_vs_fio.sh [OUT.json]   env: DIR=/var/tmp/feedrate-iobench SIZE=2g RUNTIME=3 REPEATS=3
#        BS="4k 128k 1m" QD="1 32" RW=randread
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${DIR:-/var/tmp/feedrate-iobench}
size=${SIZE:-2g}
runtime=${RUNTIME:-3}
repeats=${REPEATS:-3}
rw=${RW:-randread}
out=${1:-results/$(date -u +%Y-%m-%d)/iobench_vs_fio.json}
mkdir -p "$(dirname "$out")"
feedrate=build/release/cli/feedrate
command -v fio >/dev/null || { echo "fio is required: apt-get install fio" >&2; exit 2; }
[ -x "$feedrate" ] || scripts/build.sh release
mkdir -p "$dir"
file="$dir/bench.dat"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Lay the file down once (sequential 1 MiB writes), so both tools read real blocks.
"$feedrate" iobench --path "$file" --rw write --bs 1m --qd 8 --size "$size" --runtime 60 --results-dir "$work/lay" >/dev/null
cells=()
for bs in ${BS:-4k 128k 1m}; do
  for qd in ${QD:-1 32}; do
    for ((k = 1; k <= repeats; k++)); do
      "$feedrate" iobench --path "$file" --rw "$rw" --bs "$bs" --qd "$qd" --threads 1 --direct --size "$size" \
        --runtime "$runtime" --results-dir "$work/fr_${bs}_${qd}_$k" >/dev/null
      /usr/bin/time -f '%e %U %S' -o "$work/fiotime_${bs}_${qd}_$k" fio --name=cell --filename="$file" --size="$size" \
        --rw="$rw" --bs="$bs" --iodepth="$qd" --ioengine=io_uring --direct=1 --runtime="$runtime" --time_based \
        --output-format=json --output="$work/fio_${bs}_${qd}_$k.json" >/dev/null
    done
    cells+=("$bs:$qd")
  done
done
/usr/bin/python3 - "$work" "$out" "$repeats" "$rw" "$file" "$size" "$runtime" "${cells[@]}" <<'PY'
import datetime, json, os, platform, statistics, sys
work, out, repeats, rw, path, size, runtime, cells = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8:]
GiB, MiB = 1 << 30, 1 << 20
rows = []
for cell in cells:
    bs, qd = cell.split(":")
    fr, fi = [], []
    for k in range(1, repeats + 1):
        c = json.load(open(f"{work}/fr_{bs}_{qd}_{k}/iobench.json"))["cells"][0]
        fr.append(c)
        j = json.load(open(f"{work}/fio_{bs}_{qd}_{k}.json"))["jobs"][0]["read"]
        _, u, s = map(float, open(f"{work}/fiotime_{bs}_{qd}_{k}").read().splitlines()[-1].split())
        fi.append({"mib_per_s": j["bw_bytes"] / MiB, "iops": j["iops"],
                   "lat_p50_us": j["lat_ns"]["percentile"]["50.000000"] / 1000 if "percentile" in j["lat_ns"] else
                                 j["clat_ns"]["percentile"]["50.000000"] / 1000,
                   "clat_p99_us": j["clat_ns"]["percentile"]["99.000000"] / 1000,
                   "cpu_s_per_gib": (u + s) / (j["io_bytes"] / GiB)})
    med = lambda xs, key: statistics.median(x[key] for x in xs)
    row = {"bs": bs, "qd": int(qd),
           "feedrate_mib_per_s": med(fr, "mib_per_s"), "fio_mib_per_s": med(fi, "mib_per_s"),
           "feedrate_iops": med(fr, "iops"), "fio_iops": med(fi, "iops"),
           "feedrate_lat_p50_us": statistics.median(x["lat_us"]["p50"] for x in fr),
           "feedrate_lat_p99_us": statistics.median(x["lat_us"]["p99"] for x in fr),
           "fio_clat_p99_us": med(fi, "clat_p99_us"),
           "feedrate_cpu_s_per_gib": med(fr, "cpu_s_per_gib"), "fio_cpu_s_per_gib": med(fi, "cpu_s_per_gib"),
           "all_feedrate_mib_per_s": [x["mib_per_s"] for x in fr], "all_fio_mib_per_s": [x["mib_per_s"] for x in fi]}
    row["ratio"] = row["feedrate_mib_per_s"] / row["fio_mib_per_s"]
    rows.append(row)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
doc = {"benchmark": "iobench_vs_fio", "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
       "command": f"RW={rw} SIZE={size} RUNTIME={runtime} REPEATS={repeats} bench/iobench_vs_fio.sh {out}",
       "what": f"feedrate iobench --rw {rw} --direct --threads 1 vs fio --rw={rw} --ioengine=io_uring --direct=1 "
               "--iodepth=<qd> on the same file; alternated, medians",
       "machine": {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release()}, "file": path, "cells": rows}
json.dump(doc, open(out, "w"), indent=2)
print(f"{'bs':>5} {'qd':>3} {'feedrate MiB/s':>15} {'fio MiB/s':>10} {'ratio':>6} {'fr p99 us':>10} {'fio clat p99':>12} {'fr CPU s/GiB':>12} {'fio CPU s/GiB':>13}")
for r in rows:
    print(f"{r['bs']:>5} {r['qd']:>3} {r['feedrate_mib_per_s']:>15.1f} {r['fio_mib_per_s']:>10.1f} {r['ratio']:>6.2f} "
          f"{r['feedrate_lat_p99_us']:>10.1f} {r['fio_clat_p99_us']:>12.1f} {r['feedrate_cpu_s_per_gib']:>12.3f} {r['fio_cpu_s_per_gib']:>13.3f}")
print("wrote", out)
PY
