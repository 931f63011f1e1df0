#!/usr/bin/env bash
# Benchmark: DLIO and Feedrate on real storage no one here wrote: a CephFS through ceph-fuse and an RGW bucket through
# s3fs, both served by one Ceph OSD on this machine (scripts/s3-test-server.sh start, then its cephfs command). For each
# store in STORES and accelerator count in COUNTS: the peer DLIO (one MPI rank per accelerator) and `feedrate run -n N`
# (its default access pattern, --rules as the peer), one epoch each, alternated, each through a fresh mount (an empty
# client cache: ceph-fuse's object cacher and s3fs's stat cache are the client's, not the storage's). Per run: the AU,
# what the OSD served (reads and MiB), the front end's requests (the MDS's client requests; the gateway's requests),
# each before and inside Feedrate's timed window, and the client CPU.
# Usage: bench/au_vs_dlio_real_storage.sh [OUT_PREFIX]   (writes OUT_PREFIX.md; root: FUSE, the peer's cache flush)
#   env: PEER=v3|upstream and DLIO_ENV as in bench/lib.sh's dlio_peer; STORES="cephfs s3fs" COUNTS="1 4" REPEATS=2
#        (each pair of runs, alternated: the gateway's latency varies run to run) THREADS=1
#        COMPUTE=0.1 RECORD=1048576 BATCH=8 STEPS=16 FORMAT=npz WORK=/var/tmp/feedrate-au-real
#        CEPH_PORT=7495 (the gateway; the mon takes 3395 and 6795) BEAST_OPTIONS=tcp_nodelay=1 (the gateway's
#        frontend options; BEAST_OPTIONS= for Ceph's default, Nagle on)
#   STORES may also name `local`: the same files on this VM's disk (no network store: the peer's own ceiling).
#   Needs Debian's ceph-mon ceph-osd radosgw (scripts/install-test-extras.sh) and ceph-mds ceph-fuse s3fs (apt-get
#   install them; the tests do not use them).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
peer=${PEER:-v3}
dlio_peer "$peer"
stores=${STORES:-cephfs s3fs}; counts=${COUNTS:-1 4}; threads=${THREADS:-1}; compute=${COMPUTE:-0.1}
repeats=${REPEATS:-2}; record=${RECORD:-1048576}; batch=${BATCH:-8}; steps=${STEPS:-16}; format=${FORMAT:-npz}
work=${WORK:-/var/tmp/feedrate-au-real}
out=${1:-results/$(date -u +%Y-%m-%d)/au_vs_dlio_real_storage}
case "$out" in -*) echo "OUT_PREFIX must not start with '-': $out" >&2; exit 2 ;; esac
mkdir -p "$(dirname "$out")" "$work"
feedrate=$PWD/build/release/cli/feedrate
[ -x "$feedrate" ] || scripts/build.sh release
for b in ceph-fuse ceph-mds s3fs radosgw; do
  command -v "$b" >/dev/null || { echo "$b is not installed (apt-get install ceph-mds ceph-fuse s3fs; scripts/install-test-extras.sh)" >&2; exit 2; }
done

# The Ceph cluster: its own folder and ports, so it never meets the test suite's.
export FEEDRATE_S3_DIR=$work/ceph FEEDRATE_S3_PORT=${CEPH_PORT:-7495} FEEDRATE_S3_MON_V2=3395 FEEDRATE_S3_MON_V1=6795
# The gateway's socket option: Pacific's beast leaves Nagle on (tcp_nodelay=0), and its response's last small segment
# then waits for s3fs's delayed ACK: 40 ms added to 15-40% of 1 MiB GETs here, at random, for either tool.
export FEEDRATE_S3_BEAST_OPTIONS=${BEAST_OPTIONS-tcp_nodelay=1}
bucket="feedrate-bench"
cephfs_mnt=$work/cephfs; s3fs_mnt=$work/s3fs
cleanup() {
  fusermount -u "$s3fs_mnt" 2>/dev/null || true
  scripts/s3-test-server.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
eval "$(scripts/s3-test-server.sh start)"
scripts/s3-test-server.sh cephfs "$cephfs_mnt"
curl -sf -X PUT --aws-sigv4 "aws:amz:$AWS_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H "x-amz-content-sha256: $(sha256sum < /dev/null | cut -d' ' -f1)" "$FEEDRATE_S3_ENDPOINT/$bucket" >/dev/null
printf '%s:%s\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" > "$work/s3fs.passwd"
chmod 600 "$work/s3fs.passwd"
osd_asok=$FEEDRATE_S3_DIR/run/osd.0.asok
rgw_log=$FEEDRATE_S3_DIR/log/client.rgw.a.log

# remount STORE: a fresh client for STORE (what the last one cached goes with it; `local` has none).
remount() {
  local m
  [ "$1" = local ] && return 0
  if [ "$1" = cephfs ]; then
    m=$cephfs_mnt
    fusermount -u "$m" 2>/dev/null || true
    # The last client's process must be gone first: it holds the pid file and admin socket the next one takes.
    local pid_file=$FEEDRATE_S3_DIR/run/client.admin.pid old
    old=$(cat "$pid_file" 2>/dev/null || true)
    for _ in $(seq 100); do [ -n "$old" ] && kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
    ceph-fuse -c "$FEEDRATE_S3_DIR/ceph.conf" -n client.admin "$m" > "$work/ceph-fuse.log" 2>&1
  else
    m=$s3fs_mnt
    fusermount -u "$m" 2>/dev/null || true
    mkdir -p "$m"
    s3fs "$bucket" "$m" -o url="$FEEDRATE_S3_ENDPOINT" -o use_path_request_style -o endpoint="$AWS_REGION" \
      -o passwd_file="$work/s3fs.passwd"
  fi
  for _ in $(seq 100); do mountpoint -q "$m" && return 0; sleep 0.1; done
  echo "$1 did not mount at $m" >&2; exit 2
}
# The OSD and the MDS keep every request they serve, with its time (their op history, made long here), and the gateway
# logs each request with its time: so a run's requests are told apart by when they came (before Feedrate's timed
# window or inside it) without a snapshot racing the run. osd_bytes is the OSD's counter (a run's total).
# asok SOCKET PREFIX [K=V...]: one admin-socket command, its JSON answer (the socket's protocol: the command as JSON
# and a NUL; the answer's length, 4 bytes big-endian, then the answer), without the ceph CLI's pretty-printing,
# which takes minutes over a long op history.
asok() {
  python3 - "$@" <<'PY'
import json, socket, struct, sys
args = dict(kv.split("=", 1) for kv in sys.argv[3:])
cmd = {"prefix": sys.argv[2], **{k: [v] if k == "val" else v for k, v in args.items()}}  # (config set's val: a list)
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(json.dumps(cmd).encode() + b"\0")
def take(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise SystemExit("asok: the answer ended early")
        b += c
    return b
sys.stdout.write(take(struct.unpack(">I", take(4))[0]).decode())
PY
}
# history_size N: how many completed requests the OSD and MDS keep; set to 0 and back, it empties them first.
history_size() {
  local d
  for d in osd.0 mds.a; do
    asok "$FEEDRATE_S3_DIR/run/$d.asok" "config set" var="${d%%.*}_op_history_size" val="$1" > /dev/null
    asok "$FEEDRATE_S3_DIR/run/$d.asok" "config set" var="${d%%.*}_op_history_duration" val=86400 > /dev/null
  done
}
osd_bytes() { asok "$osd_asok" "perf dump" | python3 -c "import json,sys; print(json.load(sys.stdin)['osd']['op_r_out_bytes'])"; }
now() { date +%s.%N; }
# requests T0 T1 T2: {"osd_reads": [before, inside], "front": [before, inside]} for requests that came in [T0, T1) and
# [T1, T2]: the OSD's reads (ops with a read) and the front end's requests (the MDS's client requests, the gateway's).
requests() {
  asok "$osd_asok" dump_historic_ops > "$work/osd_ops.json"
  asok "$FEEDRATE_S3_DIR/run/mds.a.asok" dump_historic_ops > "$work/mds_ops.json"
  python3 - "$work/osd_ops.json" "$work/mds_ops.json" "$rgw_log" "$@" <<'PY'
import datetime, json, re, sys
osd, mds, rgw, t0, t1, t2 = sys.argv[1], sys.argv[2], sys.argv[3], *map(float, sys.argv[4:7])
ts = lambda v: datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
def split(times):
    return [sum(t0 <= t < t1 for t in times), sum(t1 <= t <= t2 for t in times)]
reads = [ts(o["initiated_at"]) for o in json.load(open(osd))["ops"] if re.search(r"\b(sparse-)?read \d+~\d+", o["description"])]
front = [ts(o["initiated_at"]) for o in json.load(open(mds))["ops"] if o["description"].startswith("client_request")]
for line in open(rgw, errors="replace"):
    if " beast: " in line and re.search(r'"(GET|HEAD|PUT) ', line):
        front.append(ts(line.split()[0]))
print(json.dumps({"osd_reads": split(reads), "front": split(front)}))
PY
}
# shape N: the workload overrides both tools get.
shape() {
  echo "dataset.format=$format dataset.num_files_train=$(( steps * batch * $1 )) dataset.num_samples_per_file=1" \
       "dataset.record_length_bytes=$record dataset.record_length_bytes_stdev=0 reader.batch_size=$batch" \
       "reader.read_threads=$threads train.epochs=1 train.computation_time=$compute workflow.checkpoint=False"
}
# per R KEY I DIV: R[KEY][I] / DIV, one decimal.
per() { python3 -c "import json,sys; print(f'{json.loads(sys.argv[1])[sys.argv[2]][int(sys.argv[3])] / int(sys.argv[4]):.1f}')" "$@"; }
max_count=0; for n in $counts; do [ "$n" -gt "$max_count" ] && max_count=$n; done
files=$(( steps * batch * max_count ))
data=$work/data_${peer}_$format
have=$( (find "$data/train" -maxdepth 1 -type f 2>/dev/null || true) | wc -l)
if [ "$have" -ne "$files" ]; then  # the peer writes the dataset both tools read
  rm -rf "$data"
  # shellcheck disable=SC2046
  dlio_generate "$data" $(shape "$max_count")
fi
mkdir -p "$data/valid"
for store in $stores; do  # the same files into each store, through its own client
  [ "$store" = local ] && continue
  remount "$store"
  m=$cephfs_mnt; [ "$store" = s3fs ] && m=$s3fs_mnt
  mkdir -p "$m/data/train" "$m/data/valid"
  cp "$data"/train/* "$m/data/train/"
done

{
  echo "# AU on real storage: DLIO and Feedrate on CephFS (ceph-fuse) and an RGW bucket (s3fs)"
  echo
  echo "- peer: $peer ($rules); Feedrate runs -w $workload --rules $rules"
  echo "- command: \`BEAST_OPTIONS=$FEEDRATE_S3_BEAST_OPTIONS PEER=$peer STORES=\"$stores\" COUNTS=\"$counts\" REPEATS=$repeats THREADS=$threads COMPUTE=$compute RECORD=$record BATCH=$batch STEPS=$steps FORMAT=$format bench/au_vs_dlio_real_storage.sh $out\`"
  echo "- machine: $(nproc) CPUs ($(cpu_model)), $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r); date $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- DLIO: $(dlio_version); Feedrate: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo " with uncommitted changes"); Ceph $(ceph --version | awk '{print $3}'), s3fs $(s3fs --version 2>&1 | grep -o 'V[0-9.]*' | head -1)"
  echo "- storage: one BlueStore OSD on a sparse file in $work (this VM's disk), one MDS, one RGW (beast${FEEDRATE_S3_BEAST_OPTIONS:+ $FEEDRATE_S3_BEAST_OPTIONS}) on loopback; ceph-fuse and s3fs with their defaults, a fresh mount for every run; \`local\`: the same files on this VM's disk, both tools dropping the page cache before the epoch"
  echo "- dataset: DLIO-generated, $files files x $record bytes ($format), 1 sample each; batch $batch, read_threads $threads, compute $compute s a step, one epoch of $steps steps per accelerator"
  echo "- OSD reads and front-end requests (the MDS's client requests, or the gateway's GET/HEAD/PUT), per sample trained: DLIO's whole run; Feedrate's from its training start (its v3.0 pre-warm passes included, as DLIO's are in its run) and (+) before it (set-up), told apart by their times in the OSD's and MDS's op history and the gateway's log; MiB: what the OSD read for the whole run (its op_r_out_bytes), both tools' one-epoch runs (v3.0: the pre-warm reads of both included)"
  echo "- client CPU: user + system of the whole process tree; host busy: the client's CPUs over DLIO's training"
  echo
  echo "| store | accelerators | run | AU DLIO | AU Feedrate | diff | OSD reads / sample DLIO | Feedrate (+ before) | MiB from the OSD DLIO | Feedrate | front-end requests / sample DLIO | Feedrate (+ before) | CPU s DLIO | Feedrate | host busy in DLIO's training |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$out.md"

for store in $stores; do
  case "$store" in cephfs) m=$cephfs_mnt/data ;; s3fs) m=$s3fs_mnt/data ;; *) m=$data ;; esac
  for n in $counts; do for rep in $(seq "$repeats"); do
    samples=$(( steps * batch * n ))
    # shellcheck disable=SC2046
    {
      history_size 0; history_size 1000000  # (each run's own requests only)
      remount "$store"; b0=$(osd_bytes); t0=$(now); sample_cpu "$work/cpu.log"
      read -r au_d cpu_d < <(run_dlio "$n" "$m" "$work/dlio_${store}_$n" $(shape "$n")); t1=$(now); stop_cpu
      rd=$(requests "$t0" "$t0" "$t1"); b1=$(osd_bytes)
      busy_d=$(busy_share "$work/cpu.log" "$work/dlio_${store}_$n/summary.json")
      history_size 0; history_size 1000000
      remount "$store"; b2=$(osd_bytes); t2=$(now)
      read -r au_f cpu_f < <(run_feedrate "$n" "$m" "$work/fr_${store}_$n" now $(shape "$n")); t3=$(now)
      rf=$(requests "$t2" "$(cat "$work/fr_${store}_$n.train_start")" "$t3"); b3=$(osd_bytes)
    }
    printf '| %s | %s | %s | %.2f | %.2f | %+.2f | %s | %s (+%s) | %s | %s | %s | %s (+%s) | %.1f | %.1f | %s |\n' \
      "$store" "$n" "$rep" "$au_d" "$au_f" "$(echo "$au_f - $au_d" | bc)" \
      "$(per "$rd" osd_reads 1 "$samples")" "$(per "$rf" osd_reads 1 "$samples")" "$(per "$rf" osd_reads 0 "$samples")" \
      $(( (b1 - b0) >> 20 )) $(( (b3 - b2) >> 20 )) \
      "$(per "$rd" front 1 "$samples")" "$(per "$rf" front 1 "$samples")" "$(per "$rf" front 0 "$samples")" \
      "$cpu_d" "$cpu_f" "$busy_d" >> "$out.md"
    tail -1 "$out.md"
  done; done
done
