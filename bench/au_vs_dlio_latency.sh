#!/usr/bin/env bash
# Benchmark: DLIO's answer where every request waits. A DLIO peer and Feedrate side by side on tests/latencyfs (a FUSE
# pass-through that delays every open and read by DELAY ms; direct_io unless CACHE=on), on one dataset DLIO itself
# generated (so both read DLIO's files). For each format in FORMATS, delay in DELAYS and accelerator count in COUNTS:
# DLIO (one MPI rank per accelerator, --bind-to none, reader.read_threads workers each) and `feedrate run -n N`
# (default access pattern), one epoch each, alternated; per run the AU, the requests the file system saw (opens,
# reads, most in flight) and the client CPU (user + system of the whole process tree, from bash's `time`).
# Usage: bench/au_vs_dlio_latency.sh [OUT_PREFIX]   (writes OUT_PREFIX.md; needs root for FUSE)
#   env: PEER=v3 (default: MLPerf Storage v3.0's DLIO, DLIO_local_changes f16fe43, against Feedrate's default
#        --rules v3.0, unet3d_b200's config; its page-cache flush before the epoch runs, as root) or PEER=upstream
#        (argonne-lcf DLIO against --rules upstream, unet3d_h100's config)
#        DLIO_ENV=the peer's env.sh (default /opt/dlio-v3-peer/env.sh, ../shared/peers/dlio-v3/install.sh, setting
#        $DLIO3 and $DLIO3_CONFIGS; upstream: /opt/dlio-peer/env.sh, ../shared/peers/dlio/install.sh, setting $DLIO)
#        FORMATS="npz hdf5 jpeg" DELAYS="2 20" COUNTS="1 2 4 8" CACHE=off RECORD=524288 BATCH=8 THREADS=2
#        STEPS=8 (steps per accelerator per epoch) COMPUTE=0.323 WORK=/var/tmp/feedrate-au-latency
#        FEEDRATE_PARAMS="k=v ..." (overrides for Feedrate's runs only, named in the table's header: a diagnostic, or a
#        Feedrate option that makes what DLIO does by default, e.g. feedrate.decode=true for JPEG/PNG)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
peer=${PEER:-v3}
case "$peer" in
  v3) dlio_env=${DLIO_ENV:-/opt/dlio-v3-peer/env.sh}; rules=v3.0; workload=unet3d_b200 ;;
  upstream) dlio_env=${DLIO_ENV:-/opt/dlio-peer/env.sh}; rules=upstream; workload=unet3d_h100 ;;
  *) echo "PEER must be v3 or upstream, not '$peer'" >&2; exit 2 ;;
esac
formats=${FORMATS:-npz hdf5 jpeg}; delays=${DELAYS:-2 20}; counts=${COUNTS:-1 2 4 8}
cache=${CACHE:-off}; record=${RECORD:-524288}; batch=${BATCH:-8}; threads=${THREADS:-2}; steps=${STEPS:-8}
compute=${COMPUTE:-0.323}; work=${WORK:-/var/tmp/feedrate-au-latency}; feedrate_params=${FEEDRATE_PARAMS:-}
out=${1:-results/$(date -u +%Y-%m-%d)/au_vs_dlio_latency}
mkdir -p "$(dirname "$out")"
case "$out" in -*) echo "OUT_PREFIX must not start with '-': $out" >&2; exit 2 ;; esac
feedrate=$PWD/build/release/cli/feedrate
latencyfs=$PWD/build/release/tests/latencyfs
[ -x "$feedrate" ] && [ -x "$latencyfs" ] || scripts/build.sh release
[ -f "$dlio_env" ] || { echo "no DLIO at $dlio_env (set DLIO_ENV; ../shared/peers/dlio/install.sh installs it)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$dlio_env"
# The peer's command and its workload config: v3.0's DLIO takes mlpstorage's configs with --config-dir (last).
if [ "$peer" = v3 ]; then dlio_cmd=$DLIO3; config_dir=(--config-dir="$DLIO3_CONFIGS"); else dlio_cmd=$DLIO; config_dir=(); fi
max_count=0; for n in $counts; do [ "$n" -gt "$max_count" ] && max_count=$n; done
files=$(( steps * batch * max_count ))
mnt="$work/mnt"
mkdir -p "$work" "$mnt"
trap 'latencyfs_unmount "$mnt"' EXIT
stats() { cat "$mnt/.latencyfs_stats"; }
# mount_fs DATA DELAY: latencyfs over DATA at $mnt, unmounting what was there (and with it its page cache).
mount_fs() {
  local opts=(); [ "$cache" = on ] && opts+=(--page-cache)
  latencyfs_mount "$1" "$mnt" "$work/latencyfs.log" "$2" "${opts[@]}"
}
# sample_cpu LOG / stop_cpu: /proc/stat's total line every 0.25 s with its time, while DLIO runs; busy_share LOG
# SUMMARY: the host's busy share of its CPUs over DLIO's training (summary.json start..end), which says whether
# DLIO was client-bound (near 100%) rather than storage-bound.
cpu_pid=
sample_cpu() { ( while :; do echo "$(date +%s.%N) $(head -1 /proc/stat)"; sleep 0.25; done ) > "$1" & cpu_pid=$!; }
stop_cpu() { kill "$cpu_pid" 2>/dev/null; wait "$cpu_pid" 2>/dev/null || true; }
busy_share() {
  python3 - "$1" "$2" <<'PY'
import json, sys, datetime
s = json.load(open(sys.argv[2]))
t = lambda v: datetime.datetime.fromisoformat(v).timestamp()
a, b = t(s["start"]), t(s["end"])
rows = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) > 5 and f[1] == "cpu":
        v = [int(x) for x in f[2:]]
        rows.append((float(f[0]), sum(v), v[3] + v[4]))  # total, idle + iowait
inside = [r for r in rows if a <= r[0] <= b]
if len(inside) < 2:
    print("-"); sys.exit()
total, idle = inside[-1][1] - inside[0][1], inside[-1][2] - inside[0][2]
print(f"{100 * (total - idle) / max(total, 1):.0f}%")
PY
}
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

# shape FORMAT N: the workload overrides both tools get (DLIO's ++workload.k=v; Feedrate's --param k=v).
shape() {
  echo "dataset.format=$1 dataset.num_files_train=$(( steps * batch * $2 )) dataset.num_samples_per_file=1" \
       "dataset.record_length_bytes=$record dataset.record_length_bytes_stdev=0 reader.batch_size=$batch" \
       "reader.read_threads=$threads train.epochs=1 train.computation_time=$compute workflow.checkpoint=False"
}

# run_dlio FORMAT N DATA OUT / run_feedrate FORMAT N DATA OUT: one epoch; prints "AU CPU_S".
run_dlio() {
  local o=$4 t args=()
  for kv in $(shape "$1" "$2"); do args+=("++workload.$kv"); done
  rm -rf "$o"; mkdir -p "$o"
  t=$( { TIMEFORMAT='%U %S'; time mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$2" -x PYTHONPATH \
        -x DFTRACER_ENABLE $dlio_cmd workload=$workload ++workload.workflow.generate_data=False \
        ++workload.workflow.train=True "${args[@]}" ++workload.dataset.data_folder="$3" ++hydra.run.dir="$o" \
        ++workload.output.folder="$o" "${config_dir[@]}" > "$o/run.log" 2>&1; } 2>&1 )
  python3 -c "import json,sys; m=json.load(open(sys.argv[1]+'/summary.json'))['metric']; print(m['train_au_mean_percentage'], end=' ')" "$o"
  echo "$t" | awk '{print $1 + $2}'
}
run_feedrate() {
  local o=$4 t args=()
  for kv in $(shape "$1" "$2") $feedrate_params; do args+=("--param=$kv"); done
  rm -f "$o.train_start"
  # The file system's counters at the run's training_start event (set-up done), to tell its requests from training's.
  t=$( { TIMEFORMAT='%U %S'; time { { "$feedrate" run -w $workload --rules $rules --data-dir "$3" "${args[@]}" -n "$2" \
        --results-dir "$o" --json-events 2>&1 || [ $? -eq 3 ]; } | while IFS= read -r line; do
          case "$line" in *'"event":"training_start"'*) stats > "$o.train_start" ;; esac; echo "$line"; done > "$o.log"; }; } 2>&1 )
  python3 -c "import json,sys; m=json.load(open(sys.argv[1]+'/summary.json'))['metric']; print(m['train_au_mean_percentage'], end=' ')" "$o"
  echo "$t" | awk '{print $1 + $2}'
}

{
  echo "# AU where every request waits: DLIO and Feedrate on latencyfs"
  echo
  echo "- peer: $peer ($rules); Feedrate runs -w $workload --rules $rules"
  echo "- command: \`PEER=$peer FORMATS=\"$formats\" DELAYS=\"$delays\" COUNTS=\"$counts\" CACHE=$cache RECORD=$record BATCH=$batch THREADS=$threads STEPS=$steps COMPUTE=$compute bench/au_vs_dlio_latency.sh $out\`"
  echo "- machine: $(nproc) CPUs, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r); date $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- DLIO: $(cd "$(python3 -c 'import dlio_benchmark,os;print(os.path.dirname(dlio_benchmark.__file__))')" && git rev-parse --short HEAD 2>/dev/null || echo "from $dlio_env"); Feedrate: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo " with uncommitted changes")"
  echo "- dataset: DLIO-generated, $files files x $record bytes, 1 sample each; batch $batch, read_threads $threads, compute $compute s a step, one epoch of $steps steps per accelerator; latencyfs page cache $cache"
  [ -n "$feedrate_params" ] && echo "- Feedrate's runs only: --param $feedrate_params (DLIO runs its defaults)"
  echo "- requests: what the file system saw, per sample trained: DLIO's whole run (it reads nothing before training but, for indexed_binary, each worker's index files), Feedrate's training and (+) its set-up's index reads; client CPU: user + system of the whole process tree"
  echo "- host busy: the share of the client's CPUs busy (all processes) over DLIO's training, from /proc/stat: near 100% DLIO is client-bound, not storage-bound"
  echo "- each tool reads through its own fresh latencyfs mount (cold page cache, counters from zero)"
  echo
  echo "| format | delay ms | accelerators | AU DLIO | AU Feedrate | diff | opens+reads / sample DLIO | Feedrate training (+ set-up) | max in flight DLIO | Feedrate | CPU s DLIO | Feedrate | host busy in DLIO's training |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$out.md"

for fmt in $formats; do
  data="$work/data_${peer}_$fmt"  # (each peer's generator writes its own: v3.0's JPEGs are raw bytes)
  have=$( (find "$data/train" -maxdepth 1 -type f 2>/dev/null || true) | wc -l)
  if [ "$have" -ne "$files" ]; then  # DLIO writes the dataset both tools read (again when its size differs)
    rm -rf "$data"
    mkdir -p "$work/gen"
    args=(); for kv in $(shape "$fmt" "$max_count"); do args+=("++workload.$kv"); done
    mpirun --allow-run-as-root --oversubscribe -np 1 -x PYTHONPATH -x DFTRACER_ENABLE $dlio_cmd workload=$workload \
      ++workload.workflow.generate_data=True ++workload.workflow.train=False "${args[@]}" \
      ++workload.dataset.data_folder="$data" ++hydra.run.dir="$work/gen" ++workload.output.folder="$work/gen" \
      "${config_dir[@]}" > "$work/gen.log" 2>&1
  fi
  mkdir -p "$data/valid"
  for delay in $delays; do
    for n in $counts; do
      samples=$(( steps * batch * n ))
      mount_fs "$data" "$delay"
      s0=$(stats); sample_cpu "$work/cpu.log"
      read -r au_d cpu_d < <(run_dlio "$fmt" "$n" "$mnt" "$work/dlio_${fmt}_${delay}_$n"); dlio_end=$(stats); stop_cpu
      busy_d=$(busy_share "$work/cpu.log" "$work/dlio_${fmt}_${delay}_$n/summary.json")
      # A fresh mount for each tool: with the page cache on, the first tool's reads would serve the second's.
      mount_fs "$data" "$delay"; s1=$(stats)
      read -r au_f cpu_f < <(run_feedrate "$fmt" "$n" "$mnt" "$work/fr_${fmt}_${delay}_$n"); s2=$(stats)
      s_train=$(cat "$work/fr_${fmt}_${delay}_$n.train_start")
      req() { echo "scale=1; ($(field "$2" opens) + $(field "$2" reads) - $(field "$1" opens) - $(field "$1" reads)) / $samples" | bc; }
      printf '| %s | %s | %s | %.2f | %.2f | %+.2f | %s | %s | %s | %s | %.1f | %.1f | %s |\n' "$fmt" "$delay" "$n" "$au_d" "$au_f" \
        "$(echo "$au_f - $au_d" | bc)" "$(req "$s0" "$dlio_end")" "$(req "$s_train" "$s2") (+$(req "$s1" "$s_train"))" "$(field "$dlio_end" max_in_flight)" \
        "$(field "$s2" max_in_flight)" "$cpu_d" "$cpu_f" "$busy_d" >> "$out.md"
      tail -1 "$out.md"
    done
  done
done
