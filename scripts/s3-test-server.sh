#!/usr/bin/env bash
# A real S3 server for tests and demos: a single-node Ceph cluster (one mon, one BlueStore OSD on a sparse file,
# no mgr) with the RADOS Gateway on 127.0.0.1, started without systemd and stopped by PID.
#   scripts/s3-test-server.sh start   # ~12 s; prints the endpoint and the test user's keys as shell variables
#   scripts/s3-test-server.sh stop    # radosgw first, then the OSD and the mon
#   scripts/s3-test-server.sh env     # the variables again (FEEDRATE_S3_ENDPOINT, AWS_ACCESS_KEY_ID, ...)
#   scripts/s3-test-server.sh cephfs DIR     # (after start) a CephFS on the same OSD (one MDS), mounted at DIR by
#                                            # ceph-fuse; needs ceph-mds and ceph-fuse; `stop` unmounts it
# Needs Debian's ceph-mon ceph-osd radosgw (scripts/install-test-extras.sh); exits 77 when they are missing.
# Settings: FEEDRATE_S3_DIR (default /var/tmp/feedrate-rgw), FEEDRATE_S3_PORT (7480), the ceph ports below, and
# FEEDRATE_S3_BEAST_OPTIONS (more beast frontend options, e.g. tcp_nodelay=1: Ceph's default leaves Nagle on).
set -euo pipefail
D=${FEEDRATE_S3_DIR:-/var/tmp/feedrate-rgw}
PORT=${FEEDRATE_S3_PORT:-7480}
MON_V2=${FEEDRATE_S3_MON_V2:-3300}
MON_V1=${FEEDRATE_S3_MON_V1:-6789}
ACCESS_KEY=FEEDRATETESTACCESSKEY
SECRET_KEY=feedrate0test0secret0key0000000000000000

print_env() {
  echo "FEEDRATE_S3_ENDPOINT=http://127.0.0.1:$PORT"
  echo "AWS_ACCESS_KEY_ID=$ACCESS_KEY"
  echo "AWS_SECRET_ACCESS_KEY=$SECRET_KEY"
  echo "AWS_REGION=us-east-1"
}

stop() {
  [ -f "$D/cephfs.mnt" ] && { fusermount -u "$(cat "$D/cephfs.mnt")" 2>/dev/null || umount -l "$(cat "$D/cephfs.mnt")" 2>/dev/null || true; }
  for n in client.rgw.a mds.a osd.0 mon.a; do
    f="$D/run/$n.pid"
    [ -f "$f" ] || continue
    p=$(cat "$f")
    kill "$p" 2>/dev/null || continue
    for _ in $(seq 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
  done
  rm -rf "$D"
}

start() {
  for b in ceph-mon ceph-osd radosgw ceph-authtool monmaptool radosgw-admin ceph; do
    command -v "$b" >/dev/null || { echo "s3-test-server: $b not installed (scripts/install-test-extras.sh)" >&2; exit 77; }
  done
  stop
  mkdir -p "$D"/{mon.a,osd.0,rgw,run,log}
  local fsid conf c
  fsid=$(cat /proc/sys/kernel/random/uuid)
  conf=$D/ceph.conf
  cat > "$conf" <<CONF
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
run_dir = $D/run
admin_socket = $D/run/\$name.asok
pid_file = $D/run/\$name.pid
log_file = $D/log/\$name.log
keyring = $D/keyring
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_max_pg_per_osd = 1000
mon_warn_on_pool_no_redundancy = false
mon_allow_pool_delete = true
paxos_propose_interval = 0.05
paxos_min_wait = 0.01
mon_data_avail_warn = 5
[mon]
mon_data = $D/mon.\$id
[osd]
osd_data = $D/osd.\$id
osd_objectstore = bluestore
bluestore_block_path = $D/osd.\$id/block.file
bluestore_block_create = true
bluestore_block_size = 10737418240
osd_memory_target = 1073741824
[mds]
mds_data = $D/mds.\$id
[client.rgw.a]
rgw_frontends = beast endpoint=127.0.0.1:$PORT${FEEDRATE_S3_BEAST_OPTIONS:+ $FEEDRATE_S3_BEAST_OPTIONS}
rgw_data = $D/rgw
ms_mon_client_mode = crc
auth_client_required = none
CONF
  ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool "$D/keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]" "$D/monmap" >/dev/null
  ceph-mon -c "$conf" --mkfs -i a --monmap "$D/monmap" --keyring "$D/keyring"
  ceph-mon -c "$conf" -i a
  c="ceph -c $conf"
  timeout 60 $c -s >/dev/null || { echo "s3-test-server: the mon does not answer ($D/log/mon.a.log)" >&2; exit 1; }
  local uuid id
  uuid=$(cat /proc/sys/kernel/random/uuid)
  id=$($c osd new "$uuid")
  ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$uuid" >"$D/log/osd-mkfs.log" 2>&1
  ceph-osd -c "$conf" -i "$id" 2>>"$D/log/osd-start.log"
  local up=0
  for _ in $(seq 120); do $c osd stat -f json 2>/dev/null | grep -q '"num_up_osds":1' && { up=1; break; }; sleep 0.5; done
  [ $up = 1 ] || { echo "s3-test-server: the OSD did not come up ($D/log/osd.0.log)" >&2; exit 1; }
  # The gateway's pools up front (radosgw would create them one by one, ~2 s each, on first use).
  for p in .rgw.root default.rgw.log default.rgw.control default.rgw.meta default.rgw.buckets.index \
           default.rgw.buckets.data default.rgw.buckets.non-ec; do
    $c osd pool create "$p" 8 8 >/dev/null 2>&1 || { echo "s3-test-server: pool $p failed" >&2; exit 1; }
    $c osd pool application enable "$p" rgw >/dev/null 2>&1
  done
  radosgw -c "$conf" -n client.rgw.a
  up=0
  for _ in $(seq 240); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && { up=1; break; }; sleep 0.5; done
  [ $up = 1 ] || { echo "s3-test-server: radosgw does not answer ($D/log/client.rgw.a.log)" >&2; exit 1; }
  radosgw-admin -c "$conf" user create --uid=feedrate --display-name=Feedrate \
    --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null
  print_env
}

# cephfs DIR: pools, a file system and one MDS on the running cluster; ceph-fuse mounts it at DIR.
cephfs() {
  for b in ceph-mds ceph-fuse; do
    command -v "$b" >/dev/null || { echo "s3-test-server: $b not installed" >&2; exit 77; }
  done
  [ -n "${1:-}" ] || { echo "usage: $0 cephfs DIR" >&2; exit 2; }
  local c="ceph -c $D/ceph.conf" up=0
  for p in cephfs_metadata cephfs_data; do $c osd pool create "$p" 8 8 >/dev/null 2>&1; done
  $c fs new feedratefs cephfs_metadata cephfs_data >/dev/null 2>&1 || { echo "s3-test-server: fs new failed" >&2; exit 1; }
  mkdir -p "$D/mds.a" "$1"
  ceph-mds -c "$D/ceph.conf" -i a >/dev/null
  for _ in $(seq 120); do $c mds stat 2>/dev/null | grep -q 'up:active' && { up=1; break; }; sleep 0.5; done
  [ $up = 1 ] || { echo "s3-test-server: the MDS did not become active ($D/log/mds.a.log)" >&2; exit 1; }
  ceph-fuse -c "$D/ceph.conf" -n client.admin "$1" >"$D/log/ceph-fuse.out" 2>&1 \
    || { echo "s3-test-server: ceph-fuse failed ($D/log/ceph-fuse.out)" >&2; exit 1; }
  echo "$1" > "$D/cephfs.mnt"
}

case ${1:-} in
  start) start ;;
  cephfs) cephfs "${2:-}" ;;
  stop) stop ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|env|cephfs DIR" >&2; exit 2 ;;
esac
