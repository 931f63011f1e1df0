#!/usr/bin/env bash
# Feedrate's S3 reads against as many parallel curl processes doing the same ranged GETs of the same objects, on
# the same server, alternating, several rounds: MiB/s, client CPU seconds per GiB (getrusage of each side's whole
# process tree, /usr/bin/time), and the server's CPU seconds (radosgw + ceph-osd + ceph-mon, /proc/<pid>/stat).
#   bench/s3_vs_curl.sh FEEDRATE [CONCURRENCY=8] [OBJECT_MIB=8] [SECONDS=5] [ROUNDS=3]
# Needs the test server (scripts/s3-test-server.sh start) or FEEDRATE_S3_ENDPOINT + AWS keys for another one.
# Four readers, each with CONCURRENCY GETs of OBJECT_MIB MiB in flight:
#   curl    CONCURRENCY curl processes, each fetching the objects in turn on one kept-alive connection
#           (`-r 0-<size-1>`, SigV4 by curl's --aws-sigv4); curl writes to /dev/null (the reference's best case)
#   curl/req one curl process per GET, CONCURRENCY at a time (xargs -P), as shell scripts fan out
#   iobench feedrate iobench --path s3://... --rw read (S3Client: one curl multi handle, into reused buffers)
#   run     feedrate run on a dataset of the same objects (S3Engine: the training loader, 1 rank, 1 loop of
#           CONCURRENCY GETs, one per sample: reader.transfer_size = the object size + 64 KiB, since an npz sample is
#           its array plus a small header; compute time ~0), its read
#           MiB/s and training CPU from summary.json
set -euo pipefail
FEEDRATE=$(readlink -f "$1")
CONC=${2:-8}
MIB=${3:-8}
SECS=${4:-5}
ROUNDS=${5:-3}
cd "$(dirname "$0")/.."
if [ -z "${FEEDRATE_S3_ENDPOINT:-}" ]; then eval "$(scripts/s3-test-server.sh env | sed 's/^/export /')"; fi
E=$FEEDRATE_S3_ENDPOINT
BUCKET=feedrate-bench-curl
SIZE=$((MIB * 1048576))
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

server_cpu() {  # utime+stime of the server processes, seconds
  local t=0
  for p in $(pgrep -x radosgw; pgrep -x ceph-osd; pgrep -x ceph-mon); do
    t=$(awk -v t="$t" '{print t + ($14 + $15) / 100}' "/proc/$p/stat")
  done
  echo "$t"
}

# The same objects as a dataset for `run`: unet3d-shaped npz of MIB MiB (56 files: 8 steps of 7), written by datagen
# (which also creates the bucket).
RUNW="-w unet3d_h100 --param dataset.num_files_train=56 --param dataset.record_length_bytes=$SIZE \
  --param dataset.record_length_bytes_stdev=0 --param train.computation_time=0.0001 --param reader.transfer_size=$((SIZE + 65536)) \
  --param train.epochs=$(( (SECS * 300 + 56 * MIB - 1) / (56 * MIB) > 2 ? (SECS * 300 + 56 * MIB - 1) / (56 * MIB) : 2 ))"
# (epochs: about SECS seconds of reading at 300 MiB/s, so setup - listing, two header GETs per object - is amortised)
"$FEEDRATE" datagen $RUNW --storage "s3://$BUCKET/ds-${MIB}m" --endpoint "$E" > /dev/null

# The objects: iobench's GET cells write <prefix>/feedrate-s3bench/obj-<size>-<i> for i < concurrency (kept).
"$FEEDRATE" iobench --path "s3://$BUCKET/b" --endpoint "$E" --rw read --object-size "${MIB}m" --part-size "${MIB}m" \
  --concurrency "$CONC" --runtime 0.2 --results-dir "$WORK/warm" > /dev/null
curl_round() {
  local per=$1  # requests per curl process
  for c in $(seq 0 $((CONC - 1))); do
    {
      echo 'silent'; echo 'show-error'; echo 'fail'
      echo "aws-sigv4 = \"aws:amz:${AWS_REGION:-us-east-1}:s3\""
      echo "user = \"$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY\""
      echo 'header = "x-amz-content-sha256: UNSIGNED-PAYLOAD"'
      echo "range = \"0-$((SIZE - 1))\""
      for r in $(seq 1 "$per"); do
        echo "url = \"$E/$BUCKET/b/feedrate-s3bench/obj-$SIZE-$(( (c + r) % CONC ))\""
        echo 'output = "/dev/null"'
      done
    } > "$WORK/curl-$c.cfg"
  done
  local s0; s0=$(server_cpu)
  local t0; t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$WORK/curl.time" bash -c "for c in \$(seq 0 $((CONC - 1))); do curl -K $WORK/curl-\$c.cfg & done; wait"
  local t1; t1=$(date +%s.%N)
  local s1; s1=$(server_cpu)
  read -r u s < "$WORK/curl.time"
  awk -v n=$((CONC * per)) -v size=$SIZE -v t0="$t0" -v t1="$t1" -v u="$u" -v s="$s" -v s0="$s0" -v s1="$s1" 'BEGIN {
    gib = n * size / 1073741824; w = t1 - t0
    printf "curl     %8.1f MiB/s  client %.3f CPU s/GiB  server %.2f CPU s/GiB  (%d GETs, %.2f s)\n", gib * 1024 / w, (u + s) / gib, (s1 - s0) / gib, n, w }'
}

# The same GETs, one curl process per request (how scripts usually fan out: xargs -P CONCURRENCY curl -r ...).
curl_per_request_round() {
  local n=$1  # requests in all
  {
    echo 'silent'; echo 'show-error'; echo 'fail'
    echo "aws-sigv4 = \"aws:amz:${AWS_REGION:-us-east-1}:s3\""
    echo "user = \"$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY\""
    echo 'header = "x-amz-content-sha256: UNSIGNED-PAYLOAD"'
    echo "range = \"0-$((SIZE - 1))\""
    echo 'output = "/dev/null"'
  } > "$WORK/one.cfg"
  for i in $(seq 0 $((n - 1))); do echo "$E/$BUCKET/b/feedrate-s3bench/obj-$SIZE-$((i % CONC))"; done > "$WORK/urls"
  local s0; s0=$(server_cpu)
  local t0; t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$WORK/curl1.time" xargs -P "$CONC" -n 1 curl -K "$WORK/one.cfg" < "$WORK/urls"
  local t1; t1=$(date +%s.%N)
  local s1; s1=$(server_cpu)
  read -r u s < "$WORK/curl1.time"
  awk -v n="$n" -v size=$SIZE -v t0="$t0" -v t1="$t1" -v u="$u" -v s="$s" -v s0="$s0" -v s1="$s1" 'BEGIN {
    gib = n * size / 1073741824; w = t1 - t0
    printf "curl/req %8.1f MiB/s  client %.3f CPU s/GiB  server %.2f CPU s/GiB  (%d GETs, one process each, %.2f s)\n", gib * 1024 / w, (u + s) / gib, (s1 - s0) / gib, n, w }'
}

iobench_round() {
  local s0; s0=$(server_cpu)
  /usr/bin/time -f "%U %S" -o "$WORK/fr.time" "$FEEDRATE" iobench --path "s3://$BUCKET/b" --endpoint "$E" --rw read \
    --object-size "${MIB}m" --part-size "${MIB}m" --concurrency "$CONC" --runtime "$SECS" --results-dir "$WORK/fr" > /dev/null
  local s1; s1=$(server_cpu)
  read -r u s < "$WORK/fr.time"
  python3 - "$WORK/fr/s3bench.json" "$u" "$s" "$s0" "$s1" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["cells"][0]
gib = c["bytes"] / 2**30
u, s, s0, s1 = map(float, sys.argv[2:])
print("iobench  %8.1f MiB/s  client %.3f CPU s/GiB  server %.2f CPU s/GiB  (%d GETs, %.2f s; own CPU figure %.3f s/GiB)"
      % (c["mib_per_s"], (u + s) / gib, (s1 - s0) / gib, c["requests"], c["seconds"], c["cpu_s_per_gib"]))
PY
}

run_round() {
  local s0; s0=$(server_cpu)
  "$FEEDRATE" run $RUNW --storage "s3://$BUCKET/ds-${MIB}m" --endpoint "$E" --io-threads 1 --queue-depth "$CONC" -q \
    --results-dir "$WORK/run" > /dev/null 2>&1 || true
  local s1; s1=$(server_cpu)
  python3 - "$WORK/run/summary.json" "$s0" "$s1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["feedrate"]
gib = f["bytes_read"] / 2**30
s0, s1 = map(float, sys.argv[2:])
print("run      %8.1f MiB/s  client %.3f CPU s/GiB  server %.2f CPU s/GiB  (%d GETs, %.2f s training, AU %.1f%%)"
      % (f["read_mib_per_s"], f["train_cpu_seconds"] / gib, (s1 - s0) / gib, f["s3"]["get_requests"],
         sum(f["epoch_seconds"]), d["metric"]["train_au_mean_percentage"]))
PY
}

echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) CPUs; $CONC GETs in flight of $MIB MiB objects; endpoint $E"
# curl's request count per process is sized from the first iobench round so that both run about as long.
for r in $(seq 1 "$ROUNDS"); do
  echo "## round $r"
  line=$(iobench_round); echo "$line"
  mibs=$(echo "$line" | awk '{print $2}')
  per=$(awk -v m="$mibs" -v s="$SECS" -v c="$CONC" -v mib="$MIB" 'BEGIN { n = int(m * s / mib / c); print (n < 2 ? 2 : n) }')
  curl_round "$per"
  curl_per_request_round $(( per * CONC < 40 * CONC ? per * CONC : 40 * CONC ))  # (process start-up dominates: fewer)
  run_round
done
