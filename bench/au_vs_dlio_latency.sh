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
dlio_peer "$peer"
formats=${FORMATS:-npz hdf5 jpeg}; delays=${DELAYS:-2 20}; counts=${COUNTS:-1 2 4 8}
cache=${CACHE:-off}; record=${RECORD:-524288}; batch=${BATCH:-8}; threads=${THREADS:-2}; steps=${STEPS:-8}
compute=${COMPUTE:-0.323}; work=${WORK:-/var/tmp/feedrate-au-latency}; feedrate_params=${FEEDRATE_PARAMS:-}
out=${1:-results/$(date -u +%Y-%m-%d)/au_vs_dlio_latency}
mkdir -p "$(dirname "$out")"
case "$out" in -*) echo "OUT_PREFIX must not start with '-': $out" >&2; exit 2 ;; esac
feedrate=$PWD/build/release/cli/feedrate
latencyfs=$PWD/build/release/tests/latencyfs
[ -x "$feedrate" ] && [ -x "$latencyfs" ] || scripts/build.sh release
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
# shape FORMAT N: the workload overrides both tools get (DLIO's ++workload.k=v; Feedrate's --param k=v).
shape() {
  echo "dataset.format=$1 dataset.num_files_train=$(( steps * batch * $2 )) dataset.num_samples_per_file=1" \
       "dataset.record_length_bytes=$record dataset.record_length_bytes_stdev=0 reader.batch_size=$batch" \
       "reader.read_threads=$threads train.epochs=1 train.computation_time=$compute workflow.checkpoint=False"
}

{
  echo "# AU where every request waits: DLIO and Feedrate on latencyfs"
  echo
  echo "- peer: $peer ($rules); Feedrate runs -w $workload --rules $rules"
  echo "- command: \`PEER=$peer FORMATS=\"$formats\" DELAYS=\"$delays\" COUNTS=\"$counts\" CACHE=$cache RECORD=$record BATCH=$batch THREADS=$threads STEPS=$steps COMPUTE=$compute bench/au_vs_dlio_latency.sh $out\`"
  echo "- machine: $(nproc) CPUs ($(cpu_model)), $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r); date $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- DLIO: $(dlio_version); Feedrate: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo " with uncommitted changes")"
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
    # shellcheck disable=SC2046
    dlio_generate "$data" $(shape "$fmt" "$max_count")
  fi
  mkdir -p "$data/valid"
  for delay in $delays; do
    for n in $counts; do
      samples=$(( steps * batch * n ))
      mount_fs "$data" "$delay"
      s0=$(stats); sample_cpu "$work/cpu.log"
      read -r au_d cpu_d < <(run_dlio "$n" "$mnt" "$work/dlio_${fmt}_${delay}_$n" $(shape "$fmt" "$n")); dlio_end=$(stats); stop_cpu
      busy_d=$(busy_share "$work/cpu.log" "$work/dlio_${fmt}_${delay}_$n/summary.json")
      # A fresh mount for each tool: with the page cache on, the first tool's reads would serve the second's.
      mount_fs "$data" "$delay"; s1=$(stats)
      read -r au_f cpu_f < <(run_feedrate "$n" "$mnt" "$work/fr_${fmt}_${delay}_$n" stats $(shape "$fmt" "$n") $feedrate_params); s2=$(stats)
      s_train=$(cat "$work/fr_${fmt}_${delay}_$n.train_start")
      req() { echo "scale=1; ($(field "$2" opens) + $(field "$2" reads) - $(field "$1" opens) - $(field "$1" reads)) / $samples" | bc; }
      printf '| %s | %s | %s | %.2f | %.2f | %+.2f | %s | %s | %s | %s | %.1f | %.1f | %s |\n' "$fmt" "$delay" "$n" "$au_d" "$au_f" \
        "$(echo "$au_f - $au_d" | bc)" "$(req "$s0" "$dlio_end")" "$(req "$s_train" "$s2") (+$(req "$s1" "$s_train"))" "$(field "$dlio_end" max_in_flight)" \
        "$(field "$s2" max_in_flight)" "$cpu_d" "$cpu_f" "$busy_d" >> "$out.md"
      tail -1 "$out.md"
    done
  done
done
