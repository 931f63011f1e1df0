#!/usr/bin/env bash
# Benchmark: what one training step's agreement costs across emulated hosts (tests/multihost/mh.sh, 3 network
# namespaces on a bridge, OpenMPI over TCP between them, shared memory within one), flat (one MPI allreduce over all
# ranks) vs hierarchical (within each host, then across the hosts' leaders, then within each host), for 1, 2 and 4
# ranks per host. Each figure is summary.json's step_barrier calibration: 200 agreements per mode timed on rank 0
# while every rank is ready; the run's per-step barrier wait (which adds waiting for the slowest) is shown beside it.
# Root only. Usage: bench/multihost_barrier.sh [OUT.md]   env: HOSTS=3 PER_HOST="1 2 4"
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/$(date -u +%Y-%m-%d)/multihost_barrier.md}
mkdir -p "$(dirname "$out")"
hosts=${HOSTS:-3}
per_host=${PER_HOST:-1 2 4}
feedrate=$PWD/build/release/cli/feedrate
mh=tests/multihost/mh.sh
[ -x "$feedrate" ] || scripts/build.sh release
work=$(mktemp -d /var/tmp/feedrate-mhb-XXXXXX)
trap '$mh down; rm -rf "$work"' EXIT
shape=(--param dataset.num_files_train=2400 --param dataset.record_length_bytes=16384
       --param dataset.record_length_bytes_stdev=0 --param reader.batch_size=1 --param train.epochs=1
       --param train.computation_time=0.005 --param train.total_training_steps=200)
"$feedrate" datagen -w unet3d_h100 --data-dir "$work/data" "${shape[@]}" >/dev/null
$mh up "$hosts"
mpirun_cmd=$($mh mpirun)
{
  echo "# Step-barrier cost across $hosts emulated hosts, flat vs hierarchical"
  echo
  echo "- Command: \`bench/multihost_barrier.sh\` (HOSTS=$hosts PER_HOST=\"$per_host\")"
  echo "- Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r); date $(date -u +%F)"
  echo "- Hosts: network namespaces on one bridge (veth, no shaping), OpenMPI $(mpirun --version | head -1 | awk '{print $NF}') TCP BTL between hosts, vader within; \`--bind-to none\`, \`mpi_yield_when_idle\`"
  echo "- Each cell: 200 agreements per mode on rank 0 while every rank is ready (summary.json \`feedrate.step_barrier\`), p50 / p99 in microseconds; the last column is the training run's per-step barrier wait (p50, all accelerators), which includes waiting for the slowest rank"
  echo
  echo "| ranks per host | ranks | flat p50 / p99 (us) | hierarchical p50 / p99 (us) | mode used | in-run barrier wait p50 (us) |"
  echo "|---|---|---|---|---|---|"
} > "$out.tmp"
for n in $per_host; do
  list=""
  for h in $($mh hosts); do list+="${list:+,}$h:$n"; done
  for mode in flat hierarchical; do
    res="$work/r_${n}_$mode"
    $mh exec frh1 "$feedrate" run -q -w unet3d_h100 --data-dir "$work/data" "${shape[@]}" --step-barrier "$mode" \
      --results-dir "$res" --hosts "$list" --mpirun "$mpirun_cmd" >/dev/null 2>&1 || true
    python3 - "$res/summary.json" "$n" "$hosts" "$mode" >> "$out.tmp" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); f = s["feedrate"]; b = f["step_barrier"]
fl, hi = b["calibration_flat_us"], b["calibration_hierarchical_us"]
n, hosts = int(sys.argv[2]), int(sys.argv[3])
print(f"| {n} | {n*hosts} | {fl['p50']:.0f} / {fl['p99']:.0f} | {hi['p50']:.0f} / {hi['p99']:.0f} | {b['mode']} | "
      f"{1e6*f['barrier_seconds']['p50']:.0f} |")
PY
  done
done
mv "$out.tmp" "$out"
cat "$out"
