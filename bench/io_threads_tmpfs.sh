#!/usr/bin/env bash
# Benchmark: how many I/O threads a client needs when every read is a copy (tmpfs), against fio in the same run.
# Full-size unet3d_ACC with N accelerators (past the copy limit, so the reads decide AU) from a hard-link view over
# REAL real files; for each round, each --io-threads value in THREADS is run once (alternated, so the host's drift
# falls on all of them), fio (psync, 2 jobs, 1 MiB, the same files) before every run and after the last.
# Usage: bench/io_threads_tmpfs.sh [OUT_PREFIX]
#   env: ACC=a100 N=8 REAL=56 STEPS=40 ROUNDS=3 THREADS="2 8" POLICY=idle FEEDRATE=<binary>
set -euo pipefail
cd "$(dirname "$0")/.."
acc=${ACC:-a100}; n=${N:-8}; real=${REAL:-56}; steps=${STEPS:-40}; rounds=${ROUNDS:-3}; threads=${THREADS:-2 8}
out=${1:-results/$(date -u +%Y-%m-%d)/io_threads_tmpfs}
mkdir -p "$(dirname "$out")"
feedrate=${FEEDRATE:-$PWD/build/release/cli/feedrate}
[ -x "$feedrate" ] || scripts/build.sh release
command -v fio > /dev/null || { echo "bench needs fio (apt-get install fio)" >&2; exit 2; }
src=/dev/shm/feedrate-unet3d
links=/dev/shm/feedrate-iot-links
work=$(mktemp -d)
trap 'rm -rf "$work" "$links"' EXIT
"$feedrate" datagen -w "unet3d_$acc" --data-dir "$src" --param "dataset.num_files_train=$real" --skip-existing \
  --threads 2 > /dev/null
batch=$("$feedrate" workloads --json | python3 -c "import json,sys; print([w for w in json.load(sys.stdin) if w['name']=='unet3d_$acc'][0]['batch_size'])")
names=$((n * batch * steps + 64))
. bench/lib.sh
hard_link_view "$src" "$real" "$links" "$names"
k=0
fio_run() {
  fio --name=copy --opendir="$src/train" --rw=read --bs=1m --ioengine=psync --numjobs=2 --time_based --runtime=10 \
    --group_reporting --output-format=json --file_service_type=sequential --output="$work/fio_$1.json" > /dev/null
}
for ((r = 1; r <= rounds; r++)); do
  for t in $threads; do
    k=$((k + 1))
    fio_run "$k"
    "$feedrate" run -w "unet3d_$acc" -n "$n" --data-dir "$links" --param "dataset.num_files_train=$names" \
      --param train.epochs=1 --param "train.total_training_steps=$steps" --io-threads "$t" \
      --io-thread-policy "${POLICY:-idle}" --results-dir "$work/run_$k" > "$work/run_$k.log" 2>&1 || true
    echo "$k $t" >> "$work/runs"
  done
done
fio_run $((k + 1))
/usr/bin/python3 - "$out" "$work" "$acc" "$n" "$steps" "$real" "${POLICY:-idle}" <<'PY'
import datetime, json, os, platform, statistics, sys
out, work, acc, n, steps, real, policy = sys.argv[1:]
fio = lambda k: json.load(open(f"{work}/fio_{k}.json"))["jobs"][0]["read"]["bw_bytes"] / 2**20
rows, by = [], {}
for line in open(f"{work}/runs"):
    k, t = map(int, line.split())
    s = json.load(open(f"{work}/run_{k}/summary.json"))
    f = s["feedrate"]
    around = min(fio(k), fio(k + 1))
    mib = f["read_mib_per_s"]
    rows.append({"run": k, "io_threads": t, "au_pct": s["metric"]["train_au_mean_percentage"], "read_mib_per_s": mib,
                 "cpu_seconds_per_gib": f["cpu_seconds_per_gib"], "fio_mib_per_s_around": [fio(k), fio(k + 1)],
                 "ratio_to_lower_fio": mib / around})
    by.setdefault(t, []).append(mib / around)
doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "machine": platform.node(),
       "cpus": os.cpu_count(), "workload": f"unet3d_{acc}", "accelerators": int(n), "steps": int(steps),
       "real_files": int(real), "io_thread_policy": policy, "runs": rows,
       "median_ratio_to_fio": {str(t): statistics.median(v) for t, v in by.items()}}
json.dump(doc, open(out + ".json", "w"), indent=2)
for r in rows:
    print(f"run {r['run']}: {r['io_threads']} I/O threads: AU {r['au_pct']:.2f}%, {r['read_mib_per_s']:.0f} MiB/s, "
          f"{r['cpu_seconds_per_gib']:.3f} CPU s/GiB; fio {r['fio_mib_per_s_around'][0]:.0f} / "
          f"{r['fio_mib_per_s_around'][1]:.0f}: {r['ratio_to_lower_fio']:.2f}x the lower")
for t, v in by.items():
    print(f"{t} I/O threads: median {statistics.median(v):.2f}x fio over {len(v)} runs")
PY
