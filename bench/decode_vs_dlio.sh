#!/usr/bin/env bash
# Benchmark (issue 20, decode goal): client CPU seconds per decoded sample, Feedrate vs DLIO, on the same
# RetinaNet-shaped JPEG files (retinanet_b200's record_length_bytes) from tmpfs, no compute. DLIO upstream decodes
# each image with PIL (np.asarray(Image.open(f)), its image reader); `feedrate run` with feedrate.decode=true
# decodes it with libjpeg-turbo on its I/O threads; Feedrate with decode off is the read-only cost beside them.
# Each tool runs E1 and E2 epochs; CPU per sample = the difference in process-tree CPU (user+sys, /usr/bin/time)
# over the difference in samples, so start-up (Python, torch and Hydra imports; Feedrate's setup) cancels out.
# Runs alternate (DLIO, Feedrate decode, Feedrate read) REPEATS times; medians are reported.
# Usage: bench/decode_vs_dlio.sh [OUT.md]
#   env: DLIO_ENV=/opt/dlio-peer/env.sh (DLIO's install: ../shared/peers/dlio/install.sh, or your own; it must set
#        $DLIO and PYTHONPATH)  DIR=/dev/shm/feedrate-jpeg  FILES=960  E1=1 E2=3  REPEATS=3  THREADS=1
set -euo pipefail
cd "$(dirname "$0")/.."
dlio_env=${DLIO_ENV:-/opt/dlio-peer/env.sh}
dir=${DIR:-/dev/shm/feedrate-jpeg}
files=${FILES:-960}
e1=${E1:-1}
e2=${E2:-3}
repeats=${REPEATS:-3}
threads=${THREADS:-1}
out=${1:-results/$(date -u +%Y-%m-%d)/decode_vs_dlio.md}
mkdir -p "$(dirname "$out")"
feedrate=build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
[ -f "$dlio_env" ] || { echo "no DLIO at $dlio_env (set DLIO_ENV)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$dlio_env"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
record=322957  # retinanet_b200 (mlcommons/storage v3.0)
"$feedrate" datagen -w retinanet_b200 --data-dir "$dir" --param "dataset.num_files_train=$files" --skip-existing \
  --threads 2 >/dev/null

# One DLIO run of E epochs: one rank, THREADS DataLoader workers, batch 24 (retinanet's), no compute.
dlio_run() {
  local e=$1 o=$2
  mkdir -p "$o"
  # shellcheck disable=SC2086  # $DLIO is a command line (python3 -m ...), split on purpose
  /usr/bin/time -f '%e %U %S' -o "$o/time" mpirun --allow-run-as-root --oversubscribe --bind-to none -np 1 \
    -x PYTHONPATH -x DFTRACER_ENABLE $DLIO workload=unet3d_h100 ++workload.model.name=retinanet \
    ++workload.dataset.format=jpeg ++workload.dataset.data_folder="$dir" ++workload.dataset.num_files_train="$files" \
    ++workload.dataset.num_samples_per_file=1 ++workload.dataset.record_length_bytes=$record \
    ++workload.dataset.record_length_bytes_stdev=0 ++workload.reader.batch_size=24 \
    ++workload.reader.read_threads="$threads" ++workload.workflow.generate_data=False \
    ++workload.workflow.train=True ++workload.workflow.checkpoint=False ++workload.train.epochs="$e" \
    ++workload.train.computation_time=0 hydra.run.dir="$o" ++workload.output.folder="$o" >"$o/log" 2>&1
}
# One Feedrate run of E epochs with the same shape: one accelerator, THREADS I/O threads.
feedrate_run() {
  local e=$1 o=$2 decode=$3
  /usr/bin/time -f '%e %U %S' -o "$o.time" "$feedrate" run -w retinanet_b200 --data-dir "$dir" -n 1 \
    --io-threads "$threads" --param "dataset.num_files_train=$files" --param train.computation_time=0 \
    --param "train.epochs=$e" --param "feedrate.decode=$decode" --results-dir "$o" >"$o.log" 2>&1 || [ $? -eq 3 ]
}
for ((r = 1; r <= repeats; r++)); do
  for e in "$e1" "$e2"; do
    dlio_run "$e" "$work/dlio_${e}_$r"
    feedrate_run "$e" "$work/fr_decode_${e}_$r" true
    feedrate_run "$e" "$work/fr_read_${e}_$r" false
  done
done
/usr/bin/python3 - "$work" "$out" "$repeats" "$e1" "$e2" "$files" "$threads" "$dir" <<'PY'
import datetime, json, platform, statistics, subprocess, sys
work, out, repeats, e1, e2, files, threads, d = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8]
def cpu(path):
    wall, user, sys_ = map(float, open(path).read().split()[-3:])
    return wall, user + sys_
rows = {}
for name, path in [("DLIO (PIL decode)", "dlio_{e}_{r}/time"), ("Feedrate, feedrate.decode=true", "fr_decode_{e}_{r}.time"),
                   ("Feedrate, read only", "fr_read_{e}_{r}.time")]:
    per = []
    for r in range(1, repeats + 1):
        w1, c1 = cpu(f"{work}/" + path.format(e=e1, r=r))
        w2, c2 = cpu(f"{work}/" + path.format(e=e2, r=r))
        per.append((c2 - c1) / ((e2 - e1) * files))
    rows[name] = statistics.median(per)
# Feedrate's own figure: the I/O threads' decode time per sample (sample_check_seconds / samples).
fr = json.load(open(f"{work}/fr_decode_{e2}_1/summary.json"))["feedrate"]
check = fr["sample_check_seconds"] / (e2 * files)
dlio = rows["DLIO (PIL decode)"]
# DLIO's own summary of its longer run: that it trained every epoch (a run that failed early would look cheap).
ds = json.load(open(f"{work}/dlio_{e2}_1/summary.json"))
dlio_epochs = ds.get("epochs", ds.get("num_epochs"))
dlio_sps = ds["metric"]["train_throughput_mean_samples_per_second"]
lines = [f"# Client CPU per decoded sample: Feedrate vs DLIO (RetinaNet-shaped JPEG, tmpfs)", "",
         f"Date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC. Machine: {platform.node()}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} CPUs, "
         f"{platform.platform()}.", "",
         f"Command: `bench/decode_vs_dlio.sh` (FILES={files} E1={e1} E2={e2} REPEATS={repeats} THREADS={threads}, data in {d}).",
         f"{files} JPEG files of retinanet_b200's record_length_bytes written by `feedrate datagen`; one rank / one accelerator,",
         f"{threads} reader thread(s), batch 24, computation_time 0. CPU per sample = (CPU of the {e2}-epoch run − CPU of the",
         f"{e1}-epoch run) / ({e2 - e1} × {files}) samples, process tree user+sys from /usr/bin/time; median of {repeats}.", "",
         "| reader | CPU ms per sample | vs DLIO |", "|---|---|---|"]
for name, v in rows.items():
    lines.append(f"| {name} | {v * 1e3:.3f} | {v / dlio:.3f} |")
lines += ["", f"Feedrate's own `sample_check_seconds` per sample (the I/O threads' decode time): {check * 1e3:.3f} ms.",
          f"DLIO's summary of its {e2}-epoch run: epochs {dlio_epochs}, {dlio_sps:.1f} samples/s (one reader worker);",
          f"Feedrate's: {fr['delivered_samples_per_s']:.1f} samples/s delivered with decoding."]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
