#!/usr/bin/env bash
# Benchmark (issue 22 item 5): does `feedrate sweep` answer for the storage or for the client's page cache? A disk
# throttled to a known read bandwidth (a blkio/io cgroup) and a client whose page cache is capped below the dataset
# (a memory cgroup), as a storage larger than the clients' memory behaves. The sweep runs with 1-epoch points twice:
# `--cache keep` (each point may read what the last one left cached) and the default (every point starts cold),
# with fio in the same cgroup, on the same files, caches dropped, as the reference bandwidth.
# Needs root and cgroups (v1 blkio+memory or v2 io+memory). Usage: bench/sweep_cache_state.sh [OUT_PREFIX]
# env: DATA=/var/tmp/feedrate-cache-state FILES=192 (32 MiB each) RBPS_MIB=540 MEM_MIB=3072 COMPUTE=0.2 KEEP=1
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/$(date -u +%Y-%m-%d)/sweep_cache_state}
mkdir -p "$(dirname "$out")"
data=${DATA:-/var/tmp/feedrate-cache-state}
files=${FILES:-192}
rbps=$(( ${RBPS_MIB:-540} * 1048576 ))
mem=$(( ${MEM_MIB:-3072} * 1048576 ))
compute=${COMPUTE:-0.2}
feedrate=$PWD/build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
command -v fio >/dev/null || { echo "fio is needed (apt-get install fio)" >&2; exit 2; }
shape=(--param dataset.num_files_train="$files" --param dataset.num_samples_per_file=1
       --param dataset.record_length_bytes=33554432 --param dataset.record_length_bytes_stdev=0
       --param reader.batch_size=1 --param train.epochs=1 --param train.computation_time="$compute")
"$feedrate" datagen -w unet3d_h100 --data-dir "$data" "${shape[@]}" --skip-existing --threads 2 > /dev/null

# The cgroup: read bandwidth of the dataset's disk throttled, memory (page cache included) capped.
. bench/lib.sh
throttled_cgroup "feedrate-bench-$$" "$data" "$rbps" "$mem"
work=$(mktemp -d)
trap 'cleanup_cg; rm -rf "$work"; [ -n "${KEEP:-}" ] || rm -rf "$data"' EXIT
# Runs a command inside the cgroup (a subshell that moves itself in first).
incg() { ( enter "$BASHPID"; exec "$@" ); }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# fio: two psync jobs, each reading half of the files whole in 1 MiB blocks (colon-separated names, which fio
# takes up to 4096 characters: ~190 names each).
mapfile -t all < <(cd "$data/train" && ls | sort)
half=$(( ${#all[@]} / 2 ))
{ printf '[global]\ndirectory=%s\nrw=read\nbs=1M\nioengine=psync\nfile_service_type=sequential\n' "$data/train"
  printf 'invalidate=1\ngroup_reporting=1\n'
  printf '[a]\nfilename=%s\n' "$(IFS=:; echo "${all[*]:0:$half}")"
  printf '[b]\nfilename=%s\n' "$(IFS=:; echo "${all[*]:$half}")"; } > "$work/ref.fio"
drop
incg fio --output-format=json --output="$work/fio.json" "$work/ref.fio" > /dev/null
sweep() {  # name, extra sweep options
  drop
  incg "$feedrate" sweep -w unet3d_h100 --data-dir "$data" "${shape[@]}" --results-dir "$work/$1" "${@:2}" \
    > "$work/$1.log" 2>&1 || true
  cat "$work/$1.log"
}
sweep keep --cache keep
sweep cold
/usr/bin/python3 - "$out" "$work" "$data" "$files" "$rbps" "$mem" "$compute" <<'PY'
import datetime, json, os, platform, sys
out, work, data, files, rbps, mem, compute = sys.argv[1:]
fio = json.load(open(f"{work}/fio.json"))["jobs"][0]["read"]
fio_mib = fio["bw_bytes"] / 1048576
demand = 32 / float(compute)  # MiB/s one accelerator reads at AU 100%
def sweep(name):
    j = json.load(open(f"{work}/{name}/sweep.json"))
    points = []
    for p in j["points"]:
        r = p["runs"][0]
        s = json.load(open(r["results_dir"] + "/summary.json"))["feedrate"]
        points.append({"accelerators": p["accelerators"], "passed": p["passed"], "au_pct": r["au_pct"],
                       "read_mib_per_s": r["read_mib_per_s"], "cache_served": r["cache_served"],
                       "device_gib": (s.get("device_bytes_read") or 0) / 2**30, "loader_gib": s["bytes_read"] / 2**30})
    return {"answer": j["accelerators_supported"], "limit": j["bottleneck"]["limit"],
            "limit_explanation": j["bottleneck"]["explanation"], "cache": j["cache"],
            "validity": j["validity"]["category"], "points": points}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
doc = {"benchmark": "sweep_cache_state", "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
       "command": "bench/sweep_cache_state.sh " + out,
       "machine": {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release()},
       "storage": f"{data}: local disk, reads throttled to {int(rbps) / 1048576:.0f} MiB/s by a cgroup; client memory "
                  f"(page cache included) capped at {int(mem) / 2**30:.1f} GiB; dataset {files} x 32 MiB",
       "fio_reference": {"mib_per_s": fio_mib, "command": "fio psync, 2 jobs, 1 MiB, the dataset's files, caches dropped, same cgroup"},
       "per_accelerator_demand_mib_per_s": demand, "copy_limit_accelerators": fio_mib / demand,
       "keep": sweep("keep"), "cold": sweep("cold")}
json.dump(doc, open(out + ".json", "w"), indent=2)
print(f"fio {fio_mib:.0f} MiB/s = {fio_mib / demand:.2f} accelerators of {demand:.0f} MiB/s")
for name in ("keep", "cold"):
    s = doc[name]
    print(f"{name}: answer {s['answer']} ({s['limit']}, {s['validity']}); cache: {s['cache']['explanation']}")
    for p in s["points"]:
        print(f"  {p['accelerators']:>3}: {'pass' if p['passed'] else 'miss'} AU {p['au_pct']:6.2f}%  "
              f"{p['read_mib_per_s']:6.0f} MiB/s  cache-served {100 * (p['cache_served'] or 0):5.1f}%  "
              f"device {p['device_gib']:.2f} of {p['loader_gib']:.2f} GiB")
PY
