#!/usr/bin/env bash
# Benchmark: how fast `feedrate run` reads full-size Unet3D files with computation_time=0 (pure loader speed),
# against fio reading the same files with the same block size and thread count, in the same run.
# Usage: bench/unet3d_tmpfs.sh [OUT.json]   (env: FILES=56 DIR=/dev/shm/feedrate-unet3d ACCS="1 2 4" EPOCHS=3)
# Writes OUT.json (default results/<date>_unet3d_tmpfs.json) and prints a table. Needs fio (apt-get install fio).
set -euo pipefail
cd "$(dirname "$0")/.."
files=${FILES:-56}
dir=${DIR:-/dev/shm/feedrate-unet3d}
accs=${ACCS:-"1 2 4"}
epochs=${EPOCHS:-3}
out=${1:-results/$(date -u +%Y-%m-%d)_unet3d_tmpfs.json}
feedrate=build/release/cli/feedrate
command -v fio >/dev/null || { echo "fio is required: apt-get install fio" >&2; exit 2; }
[ -x "$feedrate" ] || scripts/build.sh release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ds=(--param "dataset.num_files_train=$files")
"$feedrate" datagen -w unet3d_h100 --data-dir "$dir" "${ds[@]}" --skip-existing --threads 2
runs=()
for n in $accs; do
  /usr/bin/time -f '%e %U %S' -o "$work/time_$n" "$feedrate" run -w unet3d_h100 --data-dir "$dir" "${ds[@]}" -n "$n" \
    --param train.computation_time=0 --param "train.epochs=$epochs" --results-dir "$work/run_$n" > "$work/out_$n" 2>&1 || \
    [ $? -eq 3 ]  # AU 0 with no compute is the expected verdict
  runs+=("$n")
  threads=$((4 * n))
  /usr/bin/time -f '%e %U %S' -o "$work/fiotime_$n" fio --name=unet3d --opendir="$dir/train" --rw=read --bs=1M --ioengine=psync --numjobs="$threads" \
      --mem=mmap --iomem_align=4096 --file_service_type=sequential --invalidate=0 \
      --group_reporting --output-format=json --output="$work/fio_$n.json" >/dev/null
done

/usr/bin/python3 - "$work" "$out" "$dir" "$files" "$epochs" "${runs[@]}" <<'PY'
import json, os, platform, subprocess, sys, datetime
work, out, data_dir, files, epochs, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:]
GiB, MiB = 1 << 30, 1 << 20
def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
fs = subprocess.run(["df", "-T", data_dir], capture_output=True, text=True).stdout.splitlines()[-1].split()[1]
rows = []
for n in runs:
    s = json.load(open(f"{work}/run_{n}/summary.json"))
    f = s["feedrate"]
    # The last line of /usr/bin/time's output (a first line notes a non-zero exit status).
    wall, usr, sys_ = map(float, open(f"{work}/time_{n}").read().splitlines()[-1].split())
    _, fusr, fsys = map(float, open(f"{work}/fiotime_{n}").read().splitlines()[-1].split())
    fj = json.load(open(f"{work}/fio_{n}.json"))
    job = fj["jobs"][0]
    fio_bytes = job["read"]["io_bytes"]
    fio_secs = job["read"]["runtime"] / 1000.0
    fio_mib = fio_bytes / MiB / fio_secs
    fio_cpu_s = fusr + fsys  # all of fio's processes, from wait4's rusage
    rows.append({
        "accelerators": int(n), "io_threads": f["io_threads_per_rank"],
        "feedrate_delivered_samples_per_s": f["delivered_samples_per_s"],
        "feedrate_dlio_samples_per_s": s["metric"]["train_throughput_mean_samples_per_second"],
        "feedrate_read_mib_per_s": f["read_mib_per_s"],
        "feedrate_bytes_read": f["bytes_read"],
        "feedrate_cpu_seconds": usr + sys_,
        "feedrate_cpu_seconds_per_gib": (usr + sys_) / (f["bytes_read"] / GiB),
        "feedrate_wall_seconds": wall,
        "fio_read_mib_per_s": fio_mib,
        "fio_cpu_seconds_per_gib": fio_cpu_s / (fio_bytes / GiB),
        "ratio_feedrate_to_fio": f["read_mib_per_s"] / fio_mib,
    })
result = {
    "benchmark": "unet3d_tmpfs",
    "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
    "command": "bench/unet3d_tmpfs.sh " + out,
    "what": "feedrate run -w unet3d_h100 --param train.computation_time=0 (posix engine, pread of 1 MiB transfers, "
            "file opened per sample) vs fio --rw=read --bs=1M --ioengine=psync --numjobs=<same threads> --mem=mmap "
            "--iomem_align=4096 --file_service_type=sequential --invalidate=0 on the same files (page-aligned buffers "
            "like Feedrate's; fio's default malloc buffers copy from tmpfs at about 0.6x the speed)",
    "machine": {"host": platform.node(), "cpu": cpu_model(), "cpus": os.cpu_count(),
                "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GiB, 1),
                "kernel": platform.release(), "data_fs": fs},
    "dataset": {"dir": data_dir, "files": files, "epochs": epochs,
                "bytes": sum(os.path.getsize(os.path.join(data_dir, "train", x)) for x in os.listdir(os.path.join(data_dir, "train")))},
    "page_cache": "tmpfs: every byte is served from memory (this measures the client, not a device)",
    "runs": rows,
}
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
json.dump(result, open(out, "w"), indent=2)
print(f"{'acc':>3} {'thr':>3} {'samples/s':>10} {'read MiB/s':>11} {'fio MiB/s':>10} {'ratio':>6} {'CPU s/GiB':>9} {'fio CPU s/GiB':>13}")
for r in rows:
    print(f"{r['accelerators']:>3} {r['io_threads']:>3} {r['feedrate_delivered_samples_per_s']:>10.1f} {r['feedrate_read_mib_per_s']:>11.0f} "
          f"{r['fio_read_mib_per_s']:>10.0f} {r['ratio_feedrate_to_fio']:>6.2f} {r['feedrate_cpu_seconds_per_gib']:>9.3f} {r['fio_cpu_seconds_per_gib']:>13.3f}")
print("wrote", out)
PY
