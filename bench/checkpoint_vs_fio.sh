#!/bin/bash
# Checkpoint write and read against fio in the same run, on the same file system (issue 8's performance goal):
#   write: feedrate checkpoint (buffered, fsync per file) vs fio sequential write, same jobs (= ranks), block size,
#          queue depth and io_uring, buffered, fsync at the end of each file;
#   read:  feedrate checkpoint --odirect vs fio sequential O_DIRECT read of the same number of bytes per job.
#   same-file read A/B: the checkpoint written once, then feedrate's O_DIRECT read and fio's O_DIRECT read of
#          exactly those files (one fio job per rank over that rank's files, in order), alternating AB_REPEATS
#          times: the disk placement is the same for both, so the ratio is the client's.
# Usage: bench/checkpoint_vs_fio.sh FEEDRATE DIR RANKS SCALE [REPEATS] [AB_REPEATS]
set -euo pipefail
B=$1 DIR=$2 RANKS=$3 SCALE=$4 REPEATS=${5:-3} AB_REPEATS=${6:-0}
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -np $RANKS"
mkdir -p "$DIR"
# Each write phase starts with the page cache emptied: a buffered write into memory full of the other tool's clean
# pages pays for their eviction (seen here: whoever wrote second ran up to 2x slower).
# In a VM with virtio-balloon free page reporting, memory freed by the drop is handed back to the host within seconds,
# and the next write faults it in again page by page (the host allocates on first touch). Starting right after the
# drop raced that hand-back: one tool wrote into memory still backed, the other into memory already returned (2-7x
# apart on the same disk, even on a RAM-backed one). So wait until reporting has settled (reported_kib unchanged for
# 2 s): every writer then starts from the same state, all free memory returned.
REPORTED=/sys/module/page_reporting/parameters/reported_kib
settle_reporting() {
  [[ -r $REPORTED ]] || return 0
  local last now same=0
  last=$(cat "$REPORTED")
  for _ in $(seq 1 60); do
    sleep 1; now=$(cat "$REPORTED")
    if [[ $now == "$last" ]]; then same=$((same + 1)); (( same >= 2 )) && return 0; else same=0; fi
    last=$now
  done
}
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; settle_reporting; }
run_feedrate() {
  drop_caches
  $MPI "$B" checkpoint -w llama3_8b --dir "$DIR/ck" --scale "$SCALE" --time-between 0 -q \
      --num-checkpoints-write 1 --num-checkpoints-read 0 --results-dir "$DIR/rw" > /dev/null
  drop_caches  # as before fio's read: the same pause after the write for both readers
  $MPI "$B" checkpoint -w llama3_8b --dir "$DIR/ck" --scale "$SCALE" --time-between 0 -q --odirect \
      --num-checkpoints-write 0 --num-checkpoints-read 1 --results-dir "$DIR/rr" > /dev/null
}
run_fio() {
  local per_rank=$1
  drop_caches
  fio --name=w --directory="$DIR/fio" --rw=write --bs=4M --iodepth=8 --ioengine=io_uring --numjobs="$RANKS" \
      --size="$per_rank" --end_fsync=1 --group_reporting --output-format=json > "$DIR/fio_w.json"
  drop_caches
  fio --name=w --directory="$DIR/fio" --rw=read --bs=4M --iodepth=8 --ioengine=io_uring --direct=1 --numjobs="$RANKS" \
      --size="$per_rank" --group_reporting --output-format=json > "$DIR/fio_r.json"
}
# The bytes per rank: llama3_8b's largest rank at this world size and scale (all ranks are equal with ZeRO 3).
PER_RANK=$("$B" datasize -w llama3_8b --num-accelerators "$RANKS" --json | python3 -c "
import json, sys; print(int(json.load(sys.stdin)['largest_rank_bytes'] * $SCALE))")
for i in $(seq 1 "$REPEATS"); do
  rm -rf "$DIR/ck" "$DIR/fio"; mkdir -p "$DIR/fio"; sync
  if (( i % 2 )); then run_feedrate; run_fio "$PER_RANK"; else run_fio "$PER_RANK"; run_feedrate; fi  # alternate who goes first
  python3 - "$DIR" <<'PY'
import json, sys
d = sys.argv[1]
w = json.load(open(d + "/rw/summary.json")); r = json.load(open(d + "/rr/summary.json"))
fw = json.load(open(d + "/fio_w.json"))["jobs"][0]; fr = json.load(open(d + "/fio_r.json"))["jobs"][0]
gib = 1024 ** 3
# The group's runtime (ms; the end fsync included); job_runtime would be summed over the jobs.
fio_w = fw["write"]["io_bytes"] / gib / (fw["write"]["runtime"] / 1000.0)
fio_r = fr["read"]["io_bytes"] / gib / (fr["read"]["runtime"] / 1000.0)
fw_ = w["metric"]["save_checkpoint_io_mean_GB_per_second"]; fr_ = r["metric"]["load_checkpoint_io_mean_GB_per_second"]
print(f"write GiB/s feedrate {fw_:.3f} fio {fio_w:.3f} ratio {fw_ / fio_w:.2f} | "
      f"read GiB/s feedrate {fr_:.3f} fio {fio_r:.3f} ratio {fr_ / fio_r:.2f} | "
      f"size {w['metric']['checkpoint_size_GB']:.2f} GiB, buffers/rank {w['feedrate']['buffer_bytes_per_rank'] >> 20} MiB")
PY
done
if (( AB_REPEATS > 0 )); then
  rm -rf "$DIR/ck" "$DIR/fio"
  $MPI "$B" checkpoint -w llama3_8b --dir "$DIR/ck" --scale "$SCALE" --time-between 0 -q \
      --num-checkpoints-write 1 --num-checkpoints-read 0 --results-dir "$DIR/rw" > /dev/null
  # One fio job per rank, reading that rank's files (zero_pp_rank_R_*) one after the other.
  {
    echo "[global]"; echo "rw=read"; echo "bs=4M"; echo "iodepth=8"; echo "ioengine=io_uring"; echo "direct=1"
    echo "file_service_type=sequential"; echo "group_reporting=1"
    for ((r = 0; r < RANKS; r++)); do
      echo "[rank$r]"; echo "filename=$(ls "$DIR"/ck/global_epoch1_step1/zero_pp_rank_${r}_* | paste -sd:)"  # (no colons in these paths)
    done
  } > "$DIR/ab.fio"
  for i in $(seq 1 "$AB_REPEATS"); do
    feed() { $MPI "$B" checkpoint -w llama3_8b --dir "$DIR/ck" --scale "$SCALE" --time-between 0 -q --odirect \
                 --num-checkpoints-write 0 --num-checkpoints-read 1 --results-dir "$DIR/rr" > /dev/null; }
    if (( i % 2 )); then feed; fio --output-format=json "$DIR/ab.fio" > "$DIR/fio_ab.json"
    else fio --output-format=json "$DIR/ab.fio" > "$DIR/fio_ab.json"; feed; fi
    python3 - "$DIR" <<'PY'
import json, sys
d = sys.argv[1]
r = json.load(open(d + "/rr/summary.json")); fr = json.load(open(d + "/fio_ab.json"))["jobs"][0]
fio_r = fr["read"]["io_bytes"] / 1024 ** 3 / (fr["read"]["runtime"] / 1000.0)
fr_ = r["metric"]["load_checkpoint_io_mean_GB_per_second"]
print(f"same-file read GiB/s feedrate {fr_:.3f} fio {fio_r:.3f} ratio {fr_ / fio_r:.2f} | fio bytes {fr['read']['io_bytes'] / 1024 ** 3:.2f} GiB")
PY
  done
fi
rm -rf "$DIR/ck" "$DIR/fio"
