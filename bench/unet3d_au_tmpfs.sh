#!/usr/bin/env bash
# Benchmark: how many emulated Unet3D accelerators one client keeps at AU >= 90% when the storage is free
# (tmpfs), i.e. where the client itself becomes the limit. Full-size Unet3D files; to give every epoch enough steps
# (MLPerf datasets have ~500 per epoch) without hundreds of GB of RAM, the dataset is made of hard links to a
# smaller set of real files: every sample read still copies its ~140 MB from memory.
# Usage: bench/unet3d_au_tmpfs.sh [OUT.json]   env: REAL=56 STEPS=32 H100="4 5 6" A100="9 10 11" ENGINE=auto
set -euo pipefail
cd "$(dirname "$0")/.."
real=${REAL:-56}
steps=${STEPS:-32}
out=${1:-results/$(date -u +%Y-%m-%d)/unet3d_au_tmpfs.json}
mkdir -p "$(dirname "$out")"
feedrate=build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
src=/dev/shm/feedrate-unet3d
. bench/lib.sh
"$feedrate" datagen -w unet3d_h100 --data-dir "$src" --param "dataset.num_files_train=$real" --skip-existing --threads 2
work=$(mktemp -d)
links=/dev/shm/feedrate-unet3d-links
trap 'rm -rf "$work" "$links"' EXIT
rows=()
for spec in "h100:${H100:-4 5 6}" "a100:${A100:-9 10 11}"; do
  acc=${spec%%:*}
  for n in ${spec#*:}; do
    files=$((n * 7 * steps))
    hard_link_view "$src" "$real" "$links" "$files"
    r="$work/${acc}_$n"
    "$feedrate" run -w "unet3d_$acc" --data-dir "$links" --param "dataset.num_files_train=$files" -n "$n" \
      --param train.epochs=1 --engine "${ENGINE:-auto}" --results-dir "$r" > "$r.log" 2>&1 || [ $? -eq 3 ]
    rows+=("$acc $n $r")
  done
done
/usr/bin/python3 - "$out" "$steps" "$real" "${rows[@]}" <<'PY'
import json, os, platform, sys, datetime
out, steps, real, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
res = []
for row in rows:
    acc, n, d = row.split()
    n = int(n)
    s = json.load(open(f"{d}/summary.json")); m, f = s["metric"], s["feedrate"]
    res.append({"accelerator": acc, "count": n, "au_percentage": m["train_au_mean_percentage"],
                "meets_90": m["train_au_meet_expectation"] == "success", "steps_per_epoch": f["steps_per_epoch"],
                "read_mib_per_s": f["read_mib_per_s"], "cpu_seconds_per_gib": f.get("cpu_seconds_per_gib"),
                "stall_p50_s": f["stall_seconds"]["p50"], "stall_p99_s": f["stall_seconds"]["p99"],
                "engine": f["engine_detail"], "queue_depth": f["queue_depth"],
                "buffer_bytes_per_accelerator": f["buffer_bytes_per_rank"] / n})
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
doc = {"benchmark": "unet3d_au_tmpfs", "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
       "command": "bench/unet3d_au_tmpfs.sh " + out,
       "machine": {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release()},
       "dataset": f"{real} full-size Unet3D files in tmpfs, hard-linked to {steps} steps per epoch per accelerator count",
       "page_cache": "tmpfs: memory serves every byte; this measures the client's limit, not storage",
       "runs": res}
json.dump(doc, open(out, "w"), indent=2)
for r in res:
    print(f"unet3d_{r['accelerator']} x{r['count']:>2}: AU {r['au_percentage']:6.2f}% {'PASS' if r['meets_90'] else 'fail'}  "
          f"{r['read_mib_per_s']:7.0f} MiB/s  {r['cpu_seconds_per_gib'] or 0:.3f} CPU s/GiB  stall p50 {r['stall_p50_s']:.4f} s  "
          f"{r['buffer_bytes_per_accelerator'] / 2**20:.0f} MiB buffers/acc")
print("wrote", out)
PY
