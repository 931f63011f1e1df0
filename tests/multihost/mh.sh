#!/usr/bin/env bash
# Emulated hosts for multi-host tests: network + UTS + mount namespaces on a private bridge, OpenMPI launched
# across them through nsenter (no sshd), and optionally a "storage" host serving a directory over sshfs through
# per-host links shaped with tc tbf. Root only; exits 77 (skip) where namespaces are unavailable.
#
#   mh.sh up N [--storage EXPORT_DIR] [--rate-mbit R]   create hosts frh1..frhN (and frstore), print nothing
#   mh.sh down                                         remove everything `up` created (safe to repeat)
#   mh.sh exec HOST CMD...                             run CMD on HOST (its network, hostname and mounts)
#   mh.sh mpirun                                       print the mpirun prefix for these hosts (MCA settings)
#   mh.sh hosts                                        print the host names
#   mh.sh pids HOST NAME                               pids of processes called NAME running on HOST
# State lives in $MH_STATE (default /run/feedrate-mh). Data on storage appears on every client at $MH_STATE/mnt.
set -uo pipefail
R=${MH_STATE:-/run/feedrate-mh}
NET=10.213.77
BR=frbr0
HERE=$(cd "$(dirname "$0")" && pwd)
die() {
  echo "mh.sh: $*" >&2
  { echo "mh.sh: state: netns: $(ip netns list 2>/dev/null | tr '\n' ' ')"; ip -br link show 2>/dev/null | grep -E '^fr' ; } >&2
  exit 1
}
skip() { echo "mh.sh: SKIP: $*" >&2; exit 77; }

holder_pid() { cat "$R/$1.pid" 2>/dev/null || die "no host $1 (run mh.sh up)"; }
in_host() { local h=$1; shift; nsenter -t "$(holder_pid "$h")" --net --uts --mount -- "$@"; }

down() {
  local pids=""
  if [ -d "$R" ]; then
    for p in "$R"/*.pid "$R"/sshd.pidfile "$R"/*.sshfs; do
      [ -f "$p" ] || continue
      pid=$(cat "$p"); [ -n "$pid" ] && kill "$pid" 2>/dev/null && pids+=" $pid"
    done
  fi
  # Wait for them to go (a namespace lives while a process is in it); then force.
  for _ in $(seq 50); do
    alive=""; for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive+=" $pid"; done
    [ -z "$alive" ] && break; sleep 0.1
  done
  for pid in $alive; do kill -KILL "$pid" 2>/dev/null; done
  for ns in $(ip netns list 2>/dev/null | awk '/^fr(h[0-9]+|store)/ {print $1}'); do ip netns del "$ns" 2>/dev/null; done
  ip link del "$BR" 2>/dev/null
  # veths vanish with their namespace; a leftover root-side end (from a crash mid-up) is removed here.
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^frv/ {sub(/@.*/, "", $2); print $2}'); do ip link del "$l" 2>/dev/null; done
  rm -rf "$R"
  return 0
}

add_host() {  # name ip [shaped-rate-mbit]
  local h=$1 addr=$2 rate=${3:-} v=frv${1#fr}
  ip netns add "$h" || die "ip netns add $h failed"
  ip link add "$v" type veth peer name eth0 netns "$h" || die "veth for $h failed"
  ip link set "$v" master "$BR" up
  ip -n "$h" addr add "$addr/24" dev eth0
  ip -n "$h" link set eth0 up
  ip -n "$h" link set lo up
  if [ -n "$rate" ]; then
    # The client's download direction is the bridge-side veth's egress.
    tc qdisc replace dev "$v" root tbf rate "${rate}mbit" burst 32kb latency 200ms || die "tc tbf on $v failed"
  fi
  echo "$addr $h" >> "$R/hosts"
  # A holder process keeps the host's UTS and mount namespaces alive; nsenter -t enters all three.
  ip netns exec "$h" unshare --uts --mount --propagation private \
    sh -c "hostname $h && mount --bind $R/hosts /etc/hosts && exec sleep infinity" </dev/null >/dev/null 2>"$R/$h.err" &
  echo $! > "$R/$h.pid"
}

up() {
  local n=$1; shift
  local export_dir="" rate=""
  while [ $# -gt 0 ]; do
    case $1 in
      --storage) export_dir=$2; shift 2 ;;
      --rate-mbit) rate=$2; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  [ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
  for t in ip nsenter unshare mpirun; do command -v $t >/dev/null || skip "$t not installed"; done
  down
  ip netns add frprobe 2>/dev/null || skip "cannot create network namespaces here"
  ip netns del frprobe
  unshare --uts --mount true 2>/dev/null || skip "cannot create UTS/mount namespaces here"
  mkdir -p "$R/mnt"
  printf '127.0.0.1 localhost\n%s.1 frhead\n' "$NET" > "$R/hosts"
  ip link add "$BR" type bridge || die "cannot create bridge $BR"
  ip addr add "$NET.1/24" dev "$BR"
  ip link set "$BR" up
  if [ -n "$export_dir" ]; then add_host frstore "$NET.2"; fi
  for i in $(seq 1 "$n"); do add_host "frh$i" "$NET.$((10 + i))" "$rate"; done
  echo "$n" > "$R/count"
  # Wait for every holder to have its hostname (unshare + mount take a moment).
  for h in $(hosts) ${export_dir:+frstore}; do
    for _ in $(seq 100); do [ "$(in_host "$h" hostname 2>/dev/null)" = "$h" ] && break; sleep 0.05; done
    [ "$(in_host "$h" hostname 2>/dev/null)" = "$h" ] || die "host $h did not start: $(cat "$R/$h.err")"
  done
  [ -n "$export_dir" ] && storage "$export_dir"
  return 0
}

storage() {  # sshd on frstore exporting $1; every client mounts it read-only at $R/mnt over its own link
  local export_dir=$1
  command -v sshfs >/dev/null && [ -x /usr/sbin/sshd ] || skip "sshfs or openssh-server not installed"
  [ -e /dev/fuse ] || skip "no /dev/fuse"
  ssh-keygen -q -t ed25519 -N '' -f "$R/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$R/client_key" || die "ssh-keygen failed"
  cp "$R/client_key.pub" "$R/authorized_keys"
  mkdir -p /run/sshd
  cat > "$R/sshd_config" <<CFG
ListenAddress $NET.2
HostKey $R/host_key
PidFile $R/sshd.pidfile
AuthorizedKeysFile $R/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
CFG
  in_host frstore /usr/sbin/sshd -f "$R/sshd_config" -E "$R/sshd.log" || die "sshd failed: $(cat "$R/sshd.log")"
  for h in $(hosts); do
    in_host "$h" sshfs -o ro,IdentityFile="$R/client_key",StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null \
      -o Ciphers=aes128-gcm@openssh.com,Compression=no,ServerAliveInterval=5,reconnect \
      "root@$NET.2:$export_dir" "$R/mnt" 2>"$R/$h.sshfs.err" || die "sshfs on $h failed: $(cat "$R/$h.sshfs.err")"
    in_host "$h" sh -c "pgrep -n -f 'sshfs.*$R/mnt' > $R/$h.sshfs" || true
  done
}

hosts() { local n; n=$(cat "$R/count" 2>/dev/null) || die "no hosts (run mh.sh up)"; for i in $(seq 1 "$n"); do echo "frh$i"; done; }

mpirun_prefix() {
  echo "mpirun --allow-run-as-root --oversubscribe --bind-to none --mca plm_rsh_agent $HERE/mh-rsh" \
       "--mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include $NET.0/24 --mca btl_tcp_if_include $NET.0/24" \
       "--mca btl tcp,vader,self --mca mpi_yield_when_idle 1"
}

pids() {  # processes named $2 whose UTS namespace is host $1's
  local want; want=$(readlink "/proc/$(holder_pid "$1")/ns/uts")
  for p in $(pgrep -x "$2"); do [ "$(readlink "/proc/$p/ns/uts" 2>/dev/null)" = "$want" ] && echo "$p"; done
  return 0
}

cmd=${1:-}; shift || true
case $cmd in
  up) [ $# -ge 1 ] || die "usage: mh.sh up N [--storage DIR] [--rate-mbit R]"; up "$@" ;;
  down) down ;;
  exec) [ $# -ge 2 ] || die "usage: mh.sh exec HOST CMD..."; h=$1; shift; in_host "$h" "$@" ;;
  mpirun) mpirun_prefix ;;
  hosts) hosts ;;
  pids) [ $# -eq 2 ] || die "usage: mh.sh pids HOST NAME"; pids "$1" "$2" ;;
  *) die "usage: mh.sh up|down|exec|mpirun|hosts|pids (see the top of $0)" ;;
esac
