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
# latencyfs_counts MNT: "opens reads max_in_flight" from one read of its stats (each read restarts max_in_flight).
latencyfs_counts() {
  python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print(j['opens'], j['reads'], j['max_in_flight'])" \
    "$1/.latencyfs_stats"
}
