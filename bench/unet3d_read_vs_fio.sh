#!/usr/bin/env bash
# Benchmark: how fast `feedrate run` reads full-size Unet3D files with computation_time=0 (pure loader speed),
# against fio reading the same files with the same block size and thread count, in the same run.
# Buffered (default; e.g. from tmpfs): fio --ioengine=psync. ODIRECT=1: feedrate --odirect against
# fio --direct=1 --ioengine=io_uring --fixedbufs with feedrate's queue depth.
# Usage: bench/unet3d_read_vs_fio.sh [OUT.json]
#   env: FILES=56 DIR=/dev/shm/feedrate-unet3d ACCS="1 2 4" EPOCHS=3 REPEATS=3 ENGINE=auto ODIRECT=0
# Feedrate and fio run alternately (A B A B A B) for each accelerator count; the table reports medians.
# Writes OUT.json and prints a table. Needs fio (apt-get install fio).
set -euo pipefail
cd "$(dirname "$0")/.."
files=${FILES:-56}
dir=${DIR:-/dev/shm/feedrate-unet3d}
accs=${ACCS:-"1 2 4"}
epochs=${EPOCHS:-3}
odirect=${ODIRECT:-0}
out=${1:-results/$(date -u +%Y-%m-%d)/unet3d_$([ "$odirect" = 1 ] && echo odirect || echo buffered).json}
mkdir -p "$(dirname "$out")"
feedrate=build/release/cli/feedrate
command -v fio >/dev/null || { echo "fio is required: apt-get install fio" >&2; exit 2; }
[ -x "$feedrate" ] || scripts/build.sh release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ds=(--param "dataset.num_files_train=$files")
"$feedrate" datagen -w unet3d_h100 --data-dir "$dir" "${ds[@]}" --skip-existing --threads 2
repeats=${REPEATS:-3}
runs=()
for n in $accs; do
  for ((k = 1; k <= repeats; k++)); do
    /usr/bin/time -f '%e %U %S' -o "$work/time_${n}_$k" "$feedrate" run -w unet3d_h100 --data-dir "$dir" "${ds[@]}" \
      -n "$n" --engine "${ENGINE:-auto}" $([ "$odirect" = 1 ] && echo --odirect) --param train.computation_time=0 \
      --param "train.epochs=$epochs" \
      --results-dir "$work/run_${n}_$k" \
      > "$work/out_${n}_$k" 2>&1 || [ $? -eq 3 ]  # AU 0 with no compute is the expected verdict
    # fio gets exactly as many threads (and, with O_DIRECT, reads in flight per thread) as Feedrate used.
    read -r threads qd < <(/usr/bin/python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['feedrate']; \
print(f['io_threads_per_rank'], f['queue_depth'])" "$work/run_${n}_$k/summary.json")
    if [ "$odirect" = 1 ]; then
      fio_io=(--ioengine=io_uring --iodepth="$qd" --direct=1 --fixedbufs)
    else
      fio_io=(--ioengine=psync --invalidate=0)
    fi
    # Like Feedrate's threads, fio's jobs split the files between them (round-robin), so both read every byte of
    # the dataset once; with --opendir every job would read every file.
    jobfile="$work/fio_${n}_$k.fio"
    printf '[global]\nrw=read\nbs=1M\nmem=mmap\niomem_align=4096\nfile_service_type=sequential\nruntime=60\n' > "$jobfile"
    mapfile -t all_files < <(ls "$dir/train"/*.npz)
    for ((j = 0; j < threads; j++)); do
      list=()
      for ((f = j; f < ${#all_files[@]}; f += threads)); do list+=("${all_files[f]}"); done
      [ ${#list[@]} -gt 0 ] && printf '[job%d]\nfilename=%s\n' "$j" "$(IFS=:; echo "${list[*]}")" >> "$jobfile"
    done
    /usr/bin/time -f '%e %U %S' -o "$work/fiotime_${n}_$k" fio "${fio_io[@]}" --group_reporting --output-format=json \
      --output="$work/fio_${n}_$k.json" "$jobfile" >/dev/null
  done
  runs+=("$n")
done

/usr/bin/python3 - "$work" "$out" "$dir" "$files" "$epochs" "$repeats" "$odirect" "${runs[@]}" <<'PY'
import json, os, platform, statistics, subprocess, sys, datetime
work, out, data_dir, files, epochs, repeats, odirect, runs = (sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                                              int(sys.argv[5]), int(sys.argv[6]), sys.argv[7] == "1",
                                                              sys.argv[8:])
GiB, MiB = 1 << 30, 1 << 20
def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
fs = subprocess.run(["df", "-T", data_dir], capture_output=True, text=True).stdout.splitlines()[-1].split()[1]
def one(n, k):
    s = json.load(open(f"{work}/run_{n}_{k}/summary.json"))
    f = s["feedrate"]
    # The last line of /usr/bin/time's output (a first line notes a non-zero exit status).
    wall, usr, sys_ = map(float, open(f"{work}/time_{n}_{k}").read().splitlines()[-1].split())
    _, fusr, fsys = map(float, open(f"{work}/fiotime_{n}_{k}").read().splitlines()[-1].split())
    job = json.load(open(f"{work}/fio_{n}_{k}.json"))["jobs"][0]
    fio_bytes, fio_secs = job["read"]["io_bytes"], job["read"]["runtime"] / 1000.0
    return {"io_threads": f["io_threads_per_rank"], "engine": f["engine_detail"],
            "feedrate_delivered_samples_per_s": f["delivered_samples_per_s"],
            "feedrate_read_mib_per_s": f["read_mib_per_s"],
            "feedrate_cpu_seconds_per_gib": (usr + sys_) / (f["bytes_read"] / GiB),
            "fio_read_mib_per_s": fio_bytes / MiB / fio_secs,
            "fio_cpu_seconds_per_gib": (fusr + fsys) / (fio_bytes / GiB)}
rows = []
for n in runs:
    reps = [one(n, k) for k in range(1, repeats + 1)]
    med = lambda key: statistics.median(r[key] for r in reps)
    row = {"accelerators": int(n), "io_threads": reps[0]["io_threads"], "engine": reps[0]["engine"], "repeats": repeats}
    for key in ("feedrate_delivered_samples_per_s", "feedrate_read_mib_per_s", "feedrate_cpu_seconds_per_gib",
                "fio_read_mib_per_s", "fio_cpu_seconds_per_gib"):
        row[key] = med(key)
    row["ratio_feedrate_to_fio"] = row["feedrate_read_mib_per_s"] / row["fio_read_mib_per_s"]
    row["ratio_cpu_per_gib"] = row["feedrate_cpu_seconds_per_gib"] / row["fio_cpu_seconds_per_gib"]
    row["all"] = reps
    rows.append(row)
result = {
    "benchmark": "unet3d_read_vs_fio",
    "odirect": odirect,
    "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
    "command": ("ODIRECT=1 " if odirect else "") + f"FILES={files} DIR={data_dir} EPOCHS={epochs} bench/unet3d_read_vs_fio.sh " + out,
    "what": "medians of A/B-alternated runs: feedrate run -w unet3d_h100 --param train.computation_time=0 (default "
            "engine, 1 MiB transfers, file opened per sample" + (", --odirect" if odirect else "") + ") vs fio --rw=read "
            "--bs=1M with <same threads> jobs splitting the files round-robin (each byte read once, like Feedrate), "
            "mem=mmap iomem_align=4096 file_service_type=sequential " +
            ("--ioengine=io_uring --iodepth=<same queue depth> --direct=1 --fixedbufs" if odirect else
             "--ioengine=psync --invalidate=0 (page-aligned buffers like Feedrate's; fio's default malloc buffers copy "
             "from tmpfs at about 0.6x the speed)") + " on the same files",
    "machine": {"host": platform.node(), "cpu": cpu_model(), "cpus": os.cpu_count(),
                "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GiB, 1),
                "kernel": platform.release(), "data_fs": fs},
    "dataset": {"dir": data_dir, "files": files, "epochs": epochs,
                "bytes": sum(os.path.getsize(os.path.join(data_dir, "train", x)) for x in os.listdir(os.path.join(data_dir, "train")))},
    "page_cache": ("O_DIRECT on both sides: the page cache is bypassed" if odirect else
                   "buffered reads: on tmpfs every byte is served from memory (this measures the client, not a device)"),
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
