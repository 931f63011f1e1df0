# Helpers the bench scripts share (sourced: `. bench/lib.sh`).

# hard_link_view SRC REAL DEST NAMES: DEST/train/ gets NAMES hard links cycling over SRC/train's REAL files
# (DLIO's names, img_<i>_of_<REAL>.npz), named as a dataset of NAMES files. Every sample read still copies a real
# file, and every accelerator count gets enough steps without NAMES files' worth of memory or disk.
hard_link_view() {
  local src=$1 real=$2 dest=$3 names=$4 k
  rm -rf "$dest"
  mkdir -p "$dest/train"
  for ((k = 0; k < names; k++)); do
    ln "$src/train/$(printf "img_%0${#real}d_of_%d.npz" $((k % real)) "$real")" \
       "$dest/train/$(printf "img_%0${#names}d_of_%d.npz" "$k" "$names")"
  done
}

# throttled_cgroup NAME DIR RBPS [MEM_BYTES]: a cgroup (v1 blkio + cpuacct (+ memory), or v2 io + cpu (+ memory))
# whose reads of DIR's disk are throttled to RBPS bytes/s and, with MEM_BYTES, whose memory (page cache included)
# is capped. Then `enter PID` moves a process in, `cpu_ns` is the CPU its processes used (ns), `cleanup_cg`
# removes it (once it is empty).
throttled_cgroup() {
  local cg=$1 dir=$2 rbps=$3 mem=${4:-} dev majmin
  dev=$(lsblk -no PKNAME "$(findmnt -no SOURCE --target "$dir")" 2>/dev/null | head -1)
  dev=${dev:-$(basename "$(findmnt -no SOURCE --target "$dir")")}
  majmin=$(lsblk -dno MAJ:MIN "/dev/$dev" | tr -d ' ')
  if [ -d /sys/fs/cgroup/blkio ]; then
    cg_dirs=("/sys/fs/cgroup/blkio/$cg" "/sys/fs/cgroup/cpuacct/$cg")
    [ -z "$mem" ] || cg_dirs+=("/sys/fs/cgroup/memory/$cg")
    mkdir -p "${cg_dirs[@]}"
    echo "$majmin $rbps" > "${cg_dirs[0]}/blkio.throttle.read_bps_device"
    [ -z "$mem" ] || echo "$mem" > "${cg_dirs[2]}/memory.limit_in_bytes"
    cpu_ns() { cat "${cg_dirs[1]}/cpuacct.usage"; }
  else
    cg_dirs=("/sys/fs/cgroup/$cg")
    echo "+io +cpu${mem:+ +memory}" > /sys/fs/cgroup/cgroup.subtree_control
    mkdir -p "${cg_dirs[0]}"
    echo "$majmin rbps=$rbps" > "${cg_dirs[0]}/io.max"
    [ -z "$mem" ] || echo "$mem" > "${cg_dirs[0]}/memory.max"
    cpu_ns() { awk '$1 == "usage_usec" { print $2 * 1000 }' "${cg_dirs[0]}/cpu.stat"; }
  fi
}
enter() { local d; for d in "${cg_dirs[@]}"; do echo "$1" > "$d/cgroup.procs"; done; }
cleanup_cg() { rmdir "${cg_dirs[@]}" 2>/dev/null || true; }

# latencyfs_mount SRC MNT LOG DELAY_MS [OPTION...]: tests/latencyfs (built by scripts/build.sh release) over SRC at
# MNT, every open and read delayed DELAY_MS (more latencyfs options after it, e.g. --page-cache); what was mounted at
# MNT is unmounted first, and with it its page cache. Returns once it answers; exits 2 with its log if it does not.
latencyfs_mount() {
  local src=$1 mnt=$2 log=$3 delay=$4
  shift 4
  latencyfs_unmount "$mnt"
  "$PWD/build/release/tests/latencyfs" "$src" "$mnt" --open-delay-ms "$delay" --read-delay-ms "$delay" "$@" > "$log" 2>&1 &
  for _ in $(seq 100); do [ -e "$mnt/.latencyfs_stats" ] && return 0; sleep 0.1; done
  echo "latencyfs did not mount at $mnt: $(cat "$log")" >&2
  exit 2
}
# latencyfs_unmount MNT: unmounts it (if mounted) and waits until it is gone.
latencyfs_unmount() {
  fusermount3 -u "$1" 2>/dev/null || true
  for _ in $(seq 50); do mountpoint -q "$1" || return 0; sleep 0.1; done
}
# cpu_model: the CPU's name as /proc/cpuinfo gives it (the same VM kind comes on different hosts: DLIO's Python cost
# per step differs several-fold between them).
cpu_model() { awk -F': *' '/^model name/{print $2; exit}' /proc/cpuinfo; }
# latencyfs_counts MNT: "opens reads max_in_flight" from one read of its stats (each read restarts max_in_flight).
latencyfs_counts() {
  python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print(j['opens'], j['reads'], j['max_in_flight'])" \
    "$1/.latencyfs_stats"
}

# dlio_peer PEER: the DLIO to compare with and how Feedrate matches it. v3 (default): MLPerf Storage v3.0's DLIO
# (DLIO_local_changes f16fe43) against --rules v3.0 on unet3d_b200's config; upstream: argonne-lcf DLIO against
# --rules upstream on unet3d_h100's. Sources DLIO_ENV (default /opt/dlio-v3-peer/env.sh or /opt/dlio-peer/env.sh,
# from ../shared/peers/*/install.sh) and sets rules, workload, dlio_cmd and config_dir (an array).
dlio_peer() {
  case "$1" in
    v3) dlio_env=${DLIO_ENV:-/opt/dlio-v3-peer/env.sh}; rules=v3.0; workload=unet3d_b200 ;;
    upstream) dlio_env=${DLIO_ENV:-/opt/dlio-peer/env.sh}; rules=upstream; workload=unet3d_h100 ;;
    *) echo "PEER must be v3 or upstream, not '$1'" >&2; exit 2 ;;
  esac
  [ -f "$dlio_env" ] || { echo "no DLIO at $dlio_env (set DLIO_ENV; ../shared/peers/dlio*/install.sh installs it)" >&2; exit 2; }
  # shellcheck disable=SC1090
  . "$dlio_env"
  # v3.0's DLIO takes mlpstorage's configs with --config-dir (last on its command line).
  if [ "$1" = v3 ]; then dlio_cmd=$DLIO3; config_dir=(--config-dir="$DLIO3_CONFIGS"); else dlio_cmd=$DLIO; config_dir=(); fi
}
# dlio_version: the peer's commit (or where it came from), for a results header.
dlio_version() {
  (cd "$(python3 -c 'import dlio_benchmark,os;print(os.path.dirname(dlio_benchmark.__file__))')" && git rev-parse --short HEAD 2>/dev/null) || echo "from $dlio_env"
}
# dlio_generate DATA KV...: the peer writes the dataset (one rank) with workload overrides KV (k=v, no prefix).
dlio_generate() {
  local data=$1 args=() kv; shift
  for kv in "$@"; do args+=("++workload.$kv"); done
  mkdir -p "$data.gen"
  mpirun --allow-run-as-root --oversubscribe -np 1 -x PYTHONPATH -x DFTRACER_ENABLE $dlio_cmd workload=$workload \
    ++workload.workflow.generate_data=True ++workload.workflow.train=False "${args[@]}" \
    ++workload.dataset.data_folder="$data" ++hydra.run.dir="$data.gen" ++workload.output.folder="$data.gen" \
    "${config_dir[@]}" > "$data.gen/gen.log" 2>&1
}
# run_dlio N DATA OUT KV...: the peer trains with N ranks (one per accelerator, --bind-to none) on DATA, overrides
# KV; prints "AU CPU_S" (CPU: user + system of the whole process tree).
run_dlio() {
  local n=$1 data=$2 o=$3 t args=() kv; shift 3
  for kv in "$@"; do args+=("++workload.$kv"); done
  rm -rf "$o"; mkdir -p "$o"
  t=$( { TIMEFORMAT='%U %S'; time mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" -x PYTHONPATH \
        -x DFTRACER_ENABLE $dlio_cmd workload=$workload ++workload.workflow.generate_data=False \
        ++workload.workflow.train=True "${args[@]}" ++workload.dataset.data_folder="$data" ++hydra.run.dir="$o" \
        ++workload.output.folder="$o" "${config_dir[@]}" > "$o/run.log" 2>&1; } 2>&1 )
  echo "$(summary_au "$o") $(echo "$t" | awk '{print $1 + $2}')"
}
# run_feedrate N DATA OUT ON_START KV...: `feedrate run -n N` (rules and workload as dlio_peer set) on DATA with
# --param KV; ON_START (a command) runs when its training_start event comes (set-up done), its output in
# OUT.train_start; prints "AU CPU_S". Needs $feedrate.
run_feedrate() {
  local n=$1 data=$2 o=$3 on_start=$4 t args=() kv; shift 4
  for kv in "$@"; do args+=("--param=$kv"); done
  rm -f "$o.train_start"
  t=$( { TIMEFORMAT='%U %S'; time { { "$feedrate" run -w "$workload" --rules "$rules" --data-dir "$data" "${args[@]}" \
        -n "$n" --results-dir "$o" --json-events 2>&1 || [ $? -eq 3 ]; } | while IFS= read -r line; do
          case "$line" in *'"event":"training_start"'*) $on_start > "$o.train_start" ;; esac; echo "$line"; done > "$o.log"; }; } 2>&1 )
  echo "$(summary_au "$o") $(echo "$t" | awk '{print $1 + $2}')"
}
summary_au() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]+'/summary.json'))['metric']['train_au_mean_percentage'])" "$1"
}
# field JSON KEY: one top-level value of a JSON text.
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

# sample_cpu LOG / stop_cpu: /proc/stat's total line every 0.25 s with its time, while a peer runs; busy_share LOG
# SUMMARY: the host's busy share of its CPUs over the peer's training (summary.json start..end), which says whether
# it was client-bound (near 100%) rather than storage-bound.
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
