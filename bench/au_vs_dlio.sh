#!/usr/bin/env bash
# Benchmark: does Feedrate give DLIO's answer on storage throttled to a known bandwidth, and at what client CPU?
# A Unet3D-shaped npz dataset written by `feedrate datagen` on local disk; reads throttled to RBPS_MIB by a cgroup
# (v1 blkio or v2 io) that holds every run, which is also where each run's CPU is counted (cpuacct / cpu.stat: the
# whole process tree — DLIO's ranks and DataLoader workers, Feedrate's threads, mpirun). For each accelerator count
# in COUNTS: a DLIO peer (one MPI rank per accelerator, --bind-to none) and `feedrate run -n N` (one process, once
# per variant in VARIANTS), one epoch each, page cache dropped before every run, alternated (DLIO first on odd
# repeats, last on even). fio (libaio, O_DIRECT, 1 MiB, queue depth 8, every file once, same cgroup) gives the
# throttled bandwidth first. DLIO's start-up (Python, torch and Hydra imports, no training) is measured once per
# count and shown beside its CPU.
# Usage: bench/au_vs_dlio.sh [OUT_PREFIX]   (writes OUT_PREFIX.md and OUT_PREFIX.json; needs root and cgroups)
#   env: PEER=v3 (default: MLPerf Storage v3.0's DLIO, DLIO_local_changes f16fe43 with its configs, against
#        Feedrate's default --rules v3.0, unet3d_b200's config) or PEER=upstream (argonne-lcf DLIO against --rules
#        upstream, unet3d_h100's); DLIO_ENV=the peer's env.sh (default /opt/dlio-v3-peer/env.sh, setting $DLIO3 and
#        $DLIO3_CONFIGS; upstream /opt/dlio-peer/env.sh, setting $DLIO)
#        DATA=/var/tmp/feedrate-au-vs-dlio FILES=480 RECORD=8388608 BATCH=4 COMPUTE=0.2 RBPS_MIB=400
#        COUNTS="1 2 3 4" REPEATS=3 KEEP= (keep the dataset)
#        VARIANTS="" (';'-separated option lists: one Feedrate run per list, e.g. ";--param=feedrate.batches_in_flight=2"
#        compares the defaults with 2 batches in flight in the same run)
set -euo pipefail
cd "$(dirname "$0")/.."
peer=${PEER:-v3}
case "$peer" in
  v3) dlio_env=${DLIO_ENV:-/opt/dlio-v3-peer/env.sh}; rules=v3.0; workload=unet3d_b200 ;;
  upstream) dlio_env=${DLIO_ENV:-/opt/dlio-peer/env.sh}; rules=upstream; workload=unet3d_h100 ;;
  *) echo "PEER must be v3 or upstream, not '$peer'" >&2; exit 2 ;;
esac
data=${DATA:-/var/tmp/feedrate-au-vs-dlio}
files=${FILES:-480}; record=${RECORD:-8388608}; batch=${BATCH:-4}; compute=${COMPUTE:-0.2}
rbps=$(( ${RBPS_MIB:-400} * 1048576 ))
counts=${COUNTS:-1 2 3 4}; repeats=${REPEATS:-3}
IFS=';' read -r -a variants <<< "${VARIANTS:-}"; [ ${#variants[@]} -gt 0 ] || variants=("")
out=${1:-results/$(date -u +%Y-%m-%d)/au_vs_dlio}
mkdir -p "$(dirname "$out")"
feedrate=$PWD/build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
[ -f "$dlio_env" ] || { echo "no DLIO at $dlio_env (set DLIO_ENV; ../shared/peers/dlio/install.sh installs it)" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is needed (apt-get install fio)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$dlio_env"
if [ "$peer" = v3 ]; then dlio_cmd=$DLIO3; config_dir=(--config-dir="$DLIO3_CONFIGS"); else dlio_cmd=$DLIO; config_dir=(); fi
shape=(dataset.num_files_train="$files" dataset.num_samples_per_file=1 dataset.record_length_bytes="$record"
       dataset.record_length_bytes_stdev=0 reader.batch_size="$batch" train.epochs=1
       train.computation_time="$compute")
"$feedrate" datagen -w unet3d_h100 --data-dir "$data" "${shape[@]/#/--param=}" --skip-existing --threads 2 > /dev/null
mkdir -p "$data/valid"  # DLIO lists it even with no evaluation

# The cgroup: the dataset disk's reads throttled; CPU counted.
. bench/lib.sh
throttled_cgroup "feedrate-au-vs-dlio-$$" "$data" "$rbps"
work=$(mktemp -d)
trap 'cleanup_cg; rm -rf "$work"; [ -n "${KEEP:-}" ] || rm -rf "$data"' EXIT
incg() { ( enter "$BASHPID"; "$@" ); }  # a subshell that moves itself in first
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# measured NAME CMD...: runs CMD in the cgroup, caches dropped first; writes NAME.cpu (CPU ns, wall s, exit status).
measured() {
  local name=$1 c0 t0 rc=0; shift
  drop; c0=$(cpu_ns); t0=$(date +%s.%N)
  incg "$@" > "$work/$name.log" 2>&1 || rc=$?
  echo "$(( $(cpu_ns) - c0 )) $(echo "$(date +%s.%N) - $t0" | bc) $rc" > "$work/$name.cpu"
  # Feedrate's 3 is a measurement (AU below the bar); anything else ends the benchmark with the run's own words.
  if [ "$rc" -ne 0 ] && ! { [ "$rc" -eq 3 ] && [[ $name == fr* ]]; }; then
    echo "$name exited $rc:" >&2; tail -20 "$work/$name.log" >&2; exit 1
  fi
}

# O_DIRECT, so every file is read once from the device whatever the page cache holds.
measured fio fio --name=ref --opendir="$data/train" --rw=read --bs=1m --ioengine=libaio --iodepth=8 --direct=1 \
  --file_service_type=sequential --output-format=json --output="$work/fio.json"

dlio() {  # N OUT [extra overrides]: DLIO upstream, N ranks, one epoch of the shape
  local n=$1 o=$2; shift 2
  mkdir -p "$o"
  # shellcheck disable=SC2086  # $DLIO is a command line (python3 -m ...), split on purpose
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" -x PYTHONPATH -x DFTRACER_ENABLE \
    $dlio_cmd workload=$workload ++workload.workflow.generate_data=False ++workload.workflow.train=True \
    ++workload.workflow.checkpoint=False ++workload.dataset.data_folder="$data" "${shape[@]/#/++workload.}" \
    ++hydra.run.dir="$o" ++workload.output.folder="$o" "$@" "${config_dir[@]}"
}
feedrate_run() {  # N OUT [options]: Feedrate, N accelerators in one process, the same shape
  local n=$1 o=$2; shift 2
  "$feedrate" run -w $workload --rules $rules --data-dir "$data" -n "$n" "${shape[@]/#/--param=}" -q --results-dir "$o" "$@"
}
for n in $counts; do
  measured "dlio_start_$n" dlio "$n" "$work/dlio_start_$n" ++workload.workflow.train=False
done
# One run list per repeat: DLIO and every Feedrate variant, reversed on even repeats.
runs=(dlio); for ((v = 0; v < ${#variants[@]}; v++)); do runs+=("fr$v"); done
for ((r = 1; r <= repeats; r++)); do
  for n in $counts; do
    order=("${runs[@]}"); ((r % 2)) || mapfile -t order < <(printf '%s\n' "${runs[@]}" | tac)
    for run in "${order[@]}"; do
      if [ "$run" = dlio ]; then measured "dlio_${n}_$r" dlio "$n" "$work/dlio_${n}_$r"; continue; fi
      read -r -a extra <<< "${variants[${run#fr}]}"
      measured "${run}_${n}_$r" feedrate_run "$n" "$work/${run}_${n}_$r" "${extra[@]}"
    done
  done
done

PEER_NAME="$peer ($rules, Feedrate -w $workload --rules $rules)" /usr/bin/python3 - "$out" "$work" "$data" "$files" "$record" "$batch" "$compute" "$rbps" "$counts" "$repeats" \
  "$(printf '%s\n' "${variants[@]}")" <<'PY'
import datetime, json, os, platform, statistics, sys
out, work, data = sys.argv[1:4]
files, record, batch = map(int, sys.argv[4:7]); compute = float(sys.argv[7]); rbps = int(sys.argv[8])
counts = [int(c) for c in sys.argv[9].split()]; repeats = int(sys.argv[10])
variants = sys.argv[11].split("\n") if sys.argv[11] else [""]
def cpu(name):
    ns, wall, rc = open(f"{work}/{name}.cpu").read().split()
    return int(ns) / 1e9, float(wall), int(rc)
def dlio(n, r):
    c, wall, rc = cpu(f"dlio_{n}_{r}")
    m = json.load(open(f"{work}/dlio_{n}_{r}/summary.json"))["metric"]
    return {"au_pct": m["train_au_mean_percentage"], "mib_per_s": m["train_io_mean_MB_per_second"],
            "cpu_s": c, "wall_s": wall, "exit": rc}
def feedrate(v, n, r):
    c, wall, rc = cpu(f"fr{v}_{n}_{r}")
    s = json.load(open(f"{work}/fr{v}_{n}_{r}/summary.json"))
    f = s["feedrate"]
    return {"au_pct": s["metric"]["train_au_mean_percentage"], "mib_per_s": f["read_mib_per_s"], "cpu_s": c,
            "wall_s": wall, "exit": rc, "device_gib": (f.get("device_bytes_read") or 0) / 2**30,
            "read_gib": f["bytes_read"] / 2**30, "batches_in_flight": f.get("batches_in_flight_per_accelerator")}
def mean(runs, key):
    return statistics.mean(x[key] for x in runs)
fio = json.load(open(f"{work}/fio.json"))["jobs"][0]["read"]["bw_bytes"] / 2**20
demand = batch * record / 2**20 / compute
rows = []
for n in counts:
    d = [dlio(n, r) for r in range(1, repeats + 1)]
    row = {"accelerators": n, "offered_mib_per_s": n * demand, "dlio": d, "au_dlio": mean(d, "au_pct"),
           "dlio_startup_cpu_s": cpu(f"dlio_start_{n}")[0], "feedrate": []}
    for v, opts in enumerate(variants):
        f = [feedrate(v, n, r) for r in range(1, repeats + 1)]
        row["feedrate"].append({"options": opts, "runs": f, "au": mean(f, "au_pct"),
                                "au_diff_points": mean(f, "au_pct") - row["au_dlio"],
                                "cpu_ratio": mean(d, "cpu_s") / mean(f, "cpu_s"),
                                "cpu_ratio_without_dlio_startup": (mean(d, "cpu_s") - row["dlio_startup_cpu_s"]) / mean(f, "cpu_s")})
    rows.append(row)
def answer(aus):
    ok = [n for n, au in aus if au >= 90.0]
    return max(ok) if ok else 0
cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
date = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")
doc = {"benchmark": "au_vs_dlio", "date": date + " UTC", "command": "bench/au_vs_dlio.sh " + out,
       "machine": {"cpu": cpu_model, "cpus": os.cpu_count(), "kernel": platform.release()},
       "storage": f"{data}: local disk (ext4 on a virtio disk), reads throttled to {rbps / 2**20:.0f} MiB/s by a cgroup, "
                  "page cache dropped before every run",
       "shape": {"files": files, "record_bytes": record, "batch": batch, "computation_time": compute,
                 "per_accelerator_demand_mib_per_s": demand},
       "fio_mib_per_s": fio, "answer_dlio": answer([(r["accelerators"], r["au_dlio"]) for r in rows]),
       "answer_feedrate": [answer([(r["accelerators"], r["feedrate"][v]["au"]) for r in rows]) for v in range(len(variants))],
       "variants": variants, "rows": rows}
json.dump(doc, open(out + ".json", "w"), indent=2)
names = [f"Feedrate {v or '(defaults)'}" for v in variants]
lines = [f"# Feedrate vs DLIO on storage throttled to {rbps / 2**20:.0f} MiB/s (Unet3D-shaped npz)", "",
         f"Date: {date} UTC. Machine: {os.cpu_count()} CPUs ({cpu_model}), Linux {platform.release()}.",
         f"Command: `PEER={os.environ.get('PEER_NAME', '').split()[0]} bench/au_vs_dlio.sh {out}` (FILES={files} RECORD={record} BATCH={batch} COMPUTE={compute} "
         f"RBPS_MIB={rbps // 2**20} COUNTS=\"{sys.argv[9]}\" REPEATS={repeats} VARIANTS=\"{';'.join(variants)}\").",
         f"Served by: {doc['storage']}. fio (libaio, O_DIRECT, 1 MiB, depth 8, the dataset once) in the same cgroup: "
         f"**{fio:.0f} MiB/s** = {fio / demand:.2f} accelerators of {demand:.0f} MiB/s each (batch {batch} x "
         f"{record / 2**20:.0f} MiB every {compute} s).",
         f"DLIO: {os.environ.get('PEER_NAME', 'upstream')}, one MPI rank per accelerator, 4 DataLoader workers each, `--bind-to none`. "
         "Feedrate: `feedrate run -n N`, one process. One epoch per run, alternated (reversed on even repeats); AU is "
         "each tool's own summary.json (train_au_mean_percentage); CPU is the cgroup's (every process of the run, "
         "start-up included), DLIO's start-up alone (imports, no training) in brackets; figures are means of the repeats.",
         "", "| accelerators | offered MiB/s | run | AU each repeat | AU mean | vs DLIO (points) | MiB/s | CPU s | DLIO CPU / this (without its start-up) |",
         "|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    d = r["dlio"]
    lines.append(f"| {r['accelerators']} | {r['offered_mib_per_s']:.0f} | DLIO | "
                 f"{', '.join('%.2f' % x['au_pct'] for x in d)} | {r['au_dlio']:.2f} | | {mean(d, 'mib_per_s'):.0f} | "
                 f"{mean(d, 'cpu_s'):.1f} ({r['dlio_startup_cpu_s']:.1f}) | |")
    for name, f in zip(names, r["feedrate"]):
        lines.append(f"| | | {name} | {', '.join('%.2f' % x['au_pct'] for x in f['runs'])} | {f['au']:.2f} | "
                     f"{f['au_diff_points']:+.2f} | {mean(f['runs'], 'mib_per_s'):.0f} | {mean(f['runs'], 'cpu_s'):.1f} | "
                     f"{f['cpu_ratio']:.1f}x ({f['cpu_ratio_without_dlio_startup']:.1f}x) |")
lines += ["", f"Answer (most accelerators at AU >= 90%, mean of repeats): DLIO **{doc['answer_dlio']}**; "
          + "; ".join(f"{name} **{a}**" for name, a in zip(names, doc["answer_feedrate"])) + "."]
for v, name in enumerate(names):
    fr = [x for r in rows for x in r["feedrate"][v]["runs"]]
    lines.append(f"{name}: largest AU difference from DLIO {max(abs(r['feedrate'][v]['au_diff_points']) for r in rows):.2f} "
                 f"points; batches in flight per accelerator {sorted({x['batches_in_flight'] for x in fr}, key=str)}; "
                 f"bytes from the device (its `device_bytes_read`) {sum(x['device_gib'] for x in fr):.1f} of "
                 f"{sum(x['read_gib'] for x in fr):.1f} GiB read.")
open(out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
