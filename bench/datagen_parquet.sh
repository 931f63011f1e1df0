#!/usr/bin/env bash
# Benchmark: `feedrate datagen` of MLPerf Storage v3.0's Parquet workloads (DLRM: 200 dictionary-encoded scalar
# columns; Flux: fixed-size float lists) into tmpfs, against fio writing the same bytes in the same directory with
# the same thread count (the reference: what the file system takes), alternated, medians. With BASELINE=<another
# feedrate binary> that binary's datagen runs in the same rounds too (before/after a change).
# DLRM files are cut to 80 row groups (491,520 rows, ~0.45 GiB each); Flux files are whole (288 rows, ~0.6 GiB).
# Usage: bench/datagen_parquet.sh [OUT.md]   env: FILES=2 THREADS=2 REPEATS=3 BASELINE= DIR=/dev/shm/feedrate-dgpq
set -euo pipefail
cd "$(dirname "$0")/.."
files=${FILES:-2}
threads=${THREADS:-2}
repeats=${REPEATS:-3}
dir=${DIR:-/dev/shm/feedrate-dgpq}
out=${1:-results/$(date -u +%Y-%m-%d)/datagen_parquet.md}
mkdir -p "$(dirname "$out")"
feedrate=$PWD/build/release/cli/feedrate
command -v fio > /dev/null || { echo "bench needs fio (apt-get install fio)" >&2; exit 2; }
[ -x "$feedrate" ] || scripts/build.sh release
baseline=${BASELINE:-}
work=$(mktemp -d)
trap 'rm -rf "$work" "$dir"' EXIT
declare -A extra=([dlrm_b200]="--param dataset.num_samples_per_file=491520" [flux_b200]="")
bins=(new)
[ -n "$baseline" ] && bins+=(baseline)

gen() {  # $1 binary, $2 workload, $3 label: seconds to generate
  local bin=$1 w=$2
  rm -rf "$dir"; mkdir -p "$dir"
  local t0 t1
  t0=$EPOCHREALTIME
  # shellcheck disable=SC2086
  "$bin" datagen -w "$w" --data-dir "$dir/d" --param "dataset.num_files_train=$files" ${extra[$w]} \
    --threads "$threads" > /dev/null
  t1=$EPOCHREALTIME
  du -sb "$dir/d/train" | cut -f1 > "$work/bytes_$w"
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}

for w in dlrm_b200 flux_b200; do
  for ((r = 1; r <= repeats; r++)); do
    for b in "${bins[@]}"; do
      bin=$feedrate
      [ "$b" = baseline ] && bin=$baseline
      gen "$bin" "$w" >> "$work/${w}_$b.s"
    done
    bytes=$(cat "$work/bytes_$w")
    rm -rf "$dir"; mkdir -p "$dir"
    fio --name=w --directory="$dir" --rw=write --bs=1m --numjobs="$threads" --size=$((bytes / threads)) \
      --ioengine=psync --group_reporting --output-format=json --output="$work/fio_${w}_$r.json" > /dev/null
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['jobs'][0]['write']['bw_bytes'])" \
      "$work/fio_${w}_$r.json" >> "$work/${w}_fio.bps"
  done
done

python3 - "$out" "$work" "$files" "$threads" "$repeats" "$baseline" <<'PY'
import datetime, os, platform, statistics, sys
out, work, files, threads, repeats, baseline = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
lines = [f"# `feedrate datagen` of v3.0 Parquet workloads vs fio writes (tmpfs)", "",
         f"Date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC. Machine: {cpu}, {os.cpu_count()} CPUs, "
         f"Linux {platform.release()}.", "",
         f"Command: `FILES={files} THREADS={threads} REPEATS={repeats}" + (f" BASELINE={baseline}" if baseline else "") +
         " bench/datagen_parquet.sh`. fio: psync, 1 MiB writes, the same bytes and threads, same directory; medians of "
         f"{repeats}, rounds alternated.", "",
         "| workload | bytes | " + ("baseline GiB/s | " if baseline else "") + "feedrate GiB/s | fio GiB/s | feedrate / fio |",
         "|---|---|" + ("---|" if baseline else "") + "---|---|---|"]
for w in ("dlrm_b200", "flux_b200"):
    nbytes = int(open(f"{work}/bytes_{w}").read())
    rate = lambda b: nbytes / statistics.median(float(x) for x in open(f"{work}/{w}_{b}.s")) / 2**30
    fio = statistics.median(float(x) for x in open(f"{work}/{w}_fio.bps")) / 2**30
    new = rate("new")
    row = f"| {w} | {nbytes:,} | " + (f"{rate('baseline'):.3f} | " if baseline else "") + f"{new:.3f} | {fio:.2f} | {new / fio:.3f} |"
    lines.append(row)
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
