#!/usr/bin/env bash
# Benchmark: what each of Feedrate's instruments costs the figure it measures (issue 22). Full-size Unet3D from
# tmpfs (the storage is free, so the client is the limit and any instrument cost shows), the same binary with every
# instrument off, with the defaults (residency sampling, a time series each second, live progress), and with each
# optional one alone (--json-events, --verify); A/B alternated, REPEATS times, at COUNTS accelerators (each
# instrument alone at SOLO_COUNT). fio (psync, 2 jobs, whole files) reads the same files in the same run for the copy
# limit: fio MiB/s / one accelerator's demand (`feedrate workloads`). The dataset is hard links to REAL real files
# (every sample still copies its ~140 MB from memory), except for --verify, whose content depends on each file's
# name: it runs on the real files with one accelerator, epochs enough for STEPS steps, against "off" the same way.
# Usage: bench/instrument_price.sh [OUT_PREFIX]
#   env: REAL=56 STEPS=120 COUNTS="1 2 5 10" REPEATS=2 SOLO_COUNT=<largest of COUNTS> ACC=h100 FIO=fio
#        PARTS="scaling solo verify" (defaults vs off at COUNTS; each instrument alone at SOLO_COUNT; --verify)
set -euo pipefail
cd "$(dirname "$0")/.."
real=${REAL:-56}
steps=${STEPS:-120}
counts=${COUNTS:-1 2 5 10}
repeats=${REPEATS:-2}
acc=${ACC:-h100}
solo=${SOLO_COUNT:-$(echo "$counts" | tr ' ' '\n' | sort -n | tail -1)}
out=${1:-results/$(date -u +%Y-%m-%d)/instrument_price}
mkdir -p "$(dirname "$out")"
feedrate=build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
command -v "${FIO:-fio}" > /dev/null || { echo "bench needs fio (apt-get install fio)" >&2; exit 2; }
src=/dev/shm/feedrate-unet3d-verifiable
links=/dev/shm/feedrate-instrument-links
work=$(mktemp -d)
trap 'rm -rf "$work" "$links"' EXIT
"$feedrate" datagen -w unet3d_h100 --data-dir "$src" --param "dataset.num_files_train=$real" --skip-existing \
  --threads 2 --content verifiable > /dev/null

max=$(echo "$counts $solo" | tr ' ' '\n' | sort -n | tail -1)
files=$((max * 7 * steps))
. bench/lib.sh
hard_link_view "$src" "$real" "$links" "$files"
"$feedrate" workloads --json > "$work/workloads.json"

fio_limit() {  # whole-file sequential reads of the real files, 2 psync jobs: the memory-copy limit of this client
  "${FIO:-fio}" --name=copy --opendir="$src/train" --rw=read --bs=1m --ioengine=psync \
    --numjobs=2 --time_based --runtime=15 --group_reporting --output-format=json --file_service_type=sequential \
    --output="$work/fio_$1.json" > /dev/null
}

declare -A variant=(
  [off]="--residency off --timeseries-interval 0 -q"
  [defaults]=""
  [residency]="--residency sample --timeseries-interval 0 -q"
  [timeseries]="--residency off --timeseries-interval 1 -q"
  [progress]="--residency off --timeseries-interval 0"
  [json_events]="--residency off --timeseries-interval 0 --json-events"
  [verify_0.1]="--residency off --timeseries-interval 0 -q --verify 0.1"
  [verify_1]="--residency off --timeseries-interval 0 -q --verify 1"
  [verify_off]="--residency off --timeseries-interval 0 -q"
)
rows=()
run_one() {  # $1 variant, $2 count, $3 repeat
  local r="$work/$1_$2_$3"
  # shellcheck disable=SC2086
  "$feedrate" run -w "unet3d_$acc" --data-dir "$links" --param "dataset.num_files_train=$((7 * $2 * steps))" \
    -n "$2" --param train.epochs=1 --results-dir "$r" ${variant[$1]} > "$r.log" 2>&1 || [ $? -eq 3 ]
  rows+=("$1 $2 $3 $r")
}
run_real() {  # $1 variant, $2 repeat: one accelerator on the real files (8 steps per epoch), STEPS steps in all
  local r="$work/$1_1_$2"
  # shellcheck disable=SC2086
  "$feedrate" run -w "unet3d_$acc" --data-dir "$src" --param "dataset.num_files_train=$real" -n 1 \
    --param train.epochs=$(((steps * 7 + real - 1) / real)) --results-dir "$r" ${variant[$1]} > "$r.log" 2>&1 || [ $? -eq 3 ]
  rows+=("$1 1 $2 $r")
}

parts=" ${PARTS:-scaling solo verify} "
fio_limit before
for ((rep = 1; rep <= repeats; rep++)); do
  [[ $parts == *" scaling "* ]] && for n in $counts; do  # A/B alternated: off, defaults (then the reverse order on the next repeat)
    if ((rep % 2)); then run_one off "$n" "$rep"; run_one defaults "$n" "$rep"
    else run_one defaults "$n" "$rep"; run_one off "$n" "$rep"; fi
  done
  [[ $parts == *" solo "* ]] && for v in residency timeseries progress json_events; do
    run_one "$v" "$solo" "$rep"
    run_one off "$solo" "solo$rep$v"  # its own "off" next to it, in its own directory
  done
  [[ $parts == *" verify "* ]] && for v in verify_0.1 verify_1; do
    run_real "$v" "$rep"
    run_real verify_off "$rep$v"
  done
done
fio_limit after

/usr/bin/python3 - "$out" "$steps" "$real" "$acc" "$work" "${rows[@]}" <<'PY'
import datetime, json, os, platform, statistics, sys
out, steps, real, acc, work, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
fio = {}
for when in ("before", "after"):
    j = json.load(open(f"{work}/fio_{when}.json"))
    fio[when] = j["jobs"][0]["read"]["bw_bytes"] / 2**20
runs = []
for row in rows:
    v, n, rep, d = row.split()
    s = json.load(open(f"{d}/summary.json")); m, f = s["metric"], s["feedrate"]
    runs.append({"variant": v, "count": int(n), "repeat": rep, "au_percentage": m["train_au_mean_percentage"],
                 "read_mib_per_s": f["read_mib_per_s"], "stall_p50_s": f["stall_seconds"]["p50"],
                 "stall_p99_s": f["stall_seconds"]["p99"], "cpu_seconds_per_gib": f.get("cpu_seconds_per_gib"),
                 "residency_probe": f.get("residency_probe")})
demand = next(w["mib_per_s_per_accelerator"] for w in json.load(open(f"{work}/workloads.json")) if w["name"] == f"unet3d_{acc}")
def mean(v, n, key):
    xs = [r[key] for r in runs if r["variant"] == v and r["count"] == n]
    return statistics.mean(xs) if xs else None, xs
table = []
for n in sorted({r["count"] for r in runs}):
    for v in ("defaults", "residency", "timeseries", "progress", "json_events", "verify_0.1", "verify_1"):
        on, on_xs = mean(v, n, "au_percentage")
        if on is None:
            continue
        base = "verify_off" if v.startswith("verify") else "off"
        off, off_xs = mean(base, n, "au_percentage")
        mib_on, _ = mean(v, n, "read_mib_per_s"); mib_off, _ = mean(base, n, "read_mib_per_s")
        table.append({"count": n, "variant": v, "au_on": on, "au_off": off, "au_cost_points": off - on,
                      "au_on_runs": on_xs, "au_off_runs": off_xs, "mib_per_s_on": mib_on, "mib_per_s_off": mib_off})
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
doc = {"benchmark": "instrument_price", "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
       "command": "bench/instrument_price.sh " + out,
       "machine": {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release()},
       "workload": f"unet3d_{acc}, {steps} steps per epoch, 1 epoch, full-size files from tmpfs ({real} real files, hard links)",
       "served_by": "tmpfs (memory): every byte copied from the page cache; the client is the limit",
       "fio_psync_2jobs_mib_per_s": fio, "demand_mib_per_s_per_accelerator": demand,
       "copy_limit_accelerators": {k: v / demand for k, v in fio.items()}, "table": table, "runs": runs}
json.dump(doc, open(out + ".json", "w"), indent=2)
for t in table:
    print(f"x{t['count']:>2} {t['variant']:<12} AU on {t['au_on']:6.2f}%  off {t['au_off']:6.2f}%  cost {t['au_cost_points']:+5.2f} pts"
          f"  ({t['mib_per_s_on']:7.0f} vs {t['mib_per_s_off']:7.0f} MiB/s)")
print(f"fio psync 2 jobs: {fio['before']:.0f} MiB/s before, {fio['after']:.0f} MiB/s after: copy limit "
      f"{fio['before'] / demand:.1f} / {fio['after'] / demand:.1f} unet3d_{acc} ({demand:.0f} MiB/s each)")
print("wrote", out + ".json")
PY
