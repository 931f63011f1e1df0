#!/usr/bin/env bash
# The GPU host check (issue 21, docs/gpu.md): on a machine with an NVIDIA GPU, runs every GPU path of an existing
# build once, small, beside the reference tools where they are installed, and writes what it saw under OUT (default
# results/<date>/gpu_check): the driver and GPUs, `iobench --xfer` in each gdsio mode with --verify against a 1 GiB
# file (gdsio and fio's libcufile engine on the same file when present), and `run --accelerator-memory
# host|pinned|device` (device: bounce, and GDS with --gds on --odirect) and feedrate.compute gpu on a small unet3d
# dataset. Exit 0 when every Feedrate step passed; the first failure is named.
# On a host without this machine's libraries: scripts/gpu-bundle.sh here, then FEEDRATE_BUNDLE=build/gpu-bundle/bundle.tar.gz.
# Usage: scripts/build.sh release && scripts/gpu-check.sh [OUT] (SIZE, RUNTIME, FILES, RECORD shrink it). DIR (default /var/tmp/feedrate-gpu-check; not tmpfs:
# O_DIRECT and GDS need a real file system) holds the data. FEEDRATE_LIBCUDA / FEEDRATE_LIBCUFILE point at other
# libraries (the test doubles, for a dry run: build/release/tests/libfeedrate_fake_cu{da,file}.so).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${FEEDRATE_BIN:-build/release/cli/feedrate}
if [ -n "${FEEDRATE_BUNDLE:-}" ]; then  # scripts/gpu-bundle.sh's archive: unpack it and use its binary
  mkdir -p "${DIR:-/var/tmp/feedrate-gpu-check}/bundle"
  tar xzf "$FEEDRATE_BUNDLE" -C "${DIR:-/var/tmp/feedrate-gpu-check}/bundle"
  B=$(ls -d "${DIR:-/var/tmp/feedrate-gpu-check}"/bundle/*/feedrate | head -1)
fi
OUT=${1:-results/$(date -u +%F)/gpu_check}
DIR=${DIR:-/var/tmp/feedrate-gpu-check}
SIZE=${SIZE:-1g}          # the iobench file
RUNTIME=${RUNTIME:-3}     # seconds per iobench cell and reference run (7 modes x 4 cells: ~84 s)
FILES=${FILES:-64}        # unet3d files of RECORD bytes for the training runs
RECORD=${RECORD:-16777216}
mkdir -p "$OUT" "$DIR"
[ -x "$B" ] || { echo "gpu-check: no $B (run scripts/build.sh release first)" >&2; exit 2; }
failed=()
summary="$OUT/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
# step NAME CMD...: runs one Feedrate step, its output kept in $OUT/NAME.log; a failure is recorded, not fatal.
# A step passes on exit 0; a run_* step also on exit 3 (the run completed and missed the AU bar: a measurement,
# not a failure of the path under check).
step() {
  local name=$1 rc=0
  shift
  "$@" >"$OUT/$name.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ] || { [ "$rc" -eq 3 ] && [[ $name == run_* ]]; }; then
    say "ok      $name$([ "$rc" -eq 3 ] && echo ' (completed below the AU bar)')"
  else
    say "FAILED  $name (exit $rc; $OUT/$name.log)"
    failed+=("$name")
  fi
}

say "gpu-check $(date -u +%FT%TZ) on $(hostname), $B $($B --version 2>/dev/null)"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,memory.total --format=csv; } \
  >"$OUT/nvidia-smi.txt" 2>&1 || say "nvidia-smi: not available (a dry run with FEEDRATE_LIBCUDA?)"
lsmod 2>/dev/null | grep -q '^nvidia_fs' && say "nvidia-fs module: loaded (GDS can read directly)" ||
  say "nvidia-fs module: not loaded (cuFile runs in compat mode or fails)"

# Raw transfers: one 1 GiB file written with the verifiable pattern, then each gdsio mode reads it with --verify.
file="$DIR/bench.dat"
step iobench_write "$B" iobench --path "$file" --rw write --bs 1m --qd 4 --size "$SIZE" --runtime 10 --verify \
  --results-dir "$OUT/iobench_write"
for mode in cpuonly cpu_gpu cpu_async_gpu cpu_cached_gpu gpud gpu_batch gpud_async; do
  qd=1
  case $mode in cpu_async_gpu | gpu_batch | gpud_async) qd=8 ;; esac
  step "iobench_$mode" "$B" iobench --path "$file" --rw read,randread --bs 1m --qd "$qd" --threads 1,4 --runtime "$RUNTIME" \
    --verify --xfer "$mode" --results-dir "$OUT/iobench_$mode"
  grep -h "served by" "$OUT/iobench_$mode.log" | head -1 | sed "s/^/        $mode /" | tee -a "$summary"
done

# The references on the same file, same block size, where installed (gdsio: -x 0 GPUD, -x 2 CPU_GPU).
GDSIO=${GDSIO:-$(command -v gdsio || ls /usr/local/cuda/gds/tools/gdsio 2>/dev/null || true)}
if [ -n "$GDSIO" ]; then
  for x in 0 2; do
    "$GDSIO" -f "$file" -d 0 -w 4 -s "$SIZE" -i 1M -x "$x" -I 0 -T "$RUNTIME" >"$OUT/gdsio_x$x.log" 2>&1 &&
      say "gdsio -x $x: $(grep -o 'Throughput: [0-9.]* GiB/sec' "$OUT/gdsio_x$x.log" | head -1)" ||
      say "gdsio -x $x: failed ($OUT/gdsio_x$x.log)"
  done
else
  say "gdsio: not installed (GDSIO=path to compare)"
fi
if command -v fio >/dev/null && fio --enghelp=libcufile >/dev/null 2>&1; then
  fio --name=cufile --ioengine=libcufile --cuda_io=cufile --gpu_dev_ids=0 --filename="$file" --rw=read --bs=1m \
    --size="$SIZE" --numjobs=4 --direct=1 --time_based --runtime="$RUNTIME" --group_reporting >"$OUT/fio_libcufile.log" 2>&1 &&
    say "fio libcufile: $(grep -o 'bw=[0-9.]*[KMG]iB/s' "$OUT/fio_libcufile.log" | head -1)" ||
    say "fio libcufile: failed ($OUT/fio_libcufile.log)"
else
  say "fio libcufile engine: not available"
fi

# Training into each kind of accelerator memory: the same small dataset, the same run, three destinations.
data="$DIR/unet3d"
ds="--param dataset.num_files_train=$FILES --param dataset.record_length_bytes=$RECORD --param dataset.record_length_bytes_stdev=0"
step datagen "$B" datagen -w unet3d_h100 --data-dir "$data" $ds --skip-existing --content verifiable
for mem in host pinned device gds compute; do
  # GDS reads never touch host memory, so that run cannot --verify: the iobench gpud step above checks its bytes.
  case $mem in
    gds) how=(--accelerator-memory device --gds on --odirect) ;;
    compute) how=(--accelerator-memory device --gds off --param feedrate.compute=gpu --param feedrate.compute_memory_bytes=67108864) ;;
    device) how=(--accelerator-memory device --gds off --verify 0.01) ;;
    *) how=(--accelerator-memory "$mem" --verify 0.01) ;;
  esac
  step "run_$mem" "$B" run -w unet3d_h100 --data-dir "$data" $ds -n 4 --param train.epochs=2 -q \
    "${how[@]}" --results-dir "$OUT/run_$mem"
  if [ -f "$OUT/run_$mem/summary.json" ]; then
    python3 - "$OUT/run_$mem/summary.json" "$mem" <<'EOF' | tee -a "$summary"
import json, sys
j = json.load(open(sys.argv[1]))
f = j["feedrate"]
a = f.get("accelerator_memory", {})
au = j.get("metric", {}).get("train_au_mean_percentage")
line = f"        {sys.argv[2]}: status {f.get('status')}, AU {au}, read {f.get('bytes_read')} B"
if f.get("status") == "failed":
    line = f"        {sys.argv[2]}: failed: {f.get('error')}"
c = f.get("compute", {})
if c.get("kind") == "gpu" and f.get("status") != "failed":
    line += f", {c.get('launches')} kernels: {c.get('kernel_seconds', 0):.3f} s on the GPU for {c.get('requested_seconds', 0):.3f} s asked"
if f.get("status") == "failed":
    pass
elif a.get("gds_bytes"):
    line += f", cuFile read {a['gds_bytes']} B into GPU memory; {a.get('path')}; engine: {f.get('engine_detail')}"
elif "h2d_bytes" in a:
    line += (f", h2d {a['h2d_bytes']} B at {a['h2d_gib_per_s']:.1f} GiB/s, copy {a['copy_seconds']:.3f} s"
             f" ({a['copy_stall_seconds']:.3f} s stalled)")
print(line)
EOF
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  say "gpu-check: FAILED: ${failed[*]}"
  exit 1
fi
say "gpu-check: every Feedrate step passed; results in $OUT"
