#!/usr/bin/env bash
# A Slurm cluster on the emulated hosts of mh.sh: munged and slurmctld in the root namespace (10.213.77.1),
# one slurmd per host frh1..frhN, Debian's slurm-wlm with its PMIx plugin (mpi_pmix). Root only; exits 77 (skip)
# where mh.sh cannot make hosts or Slurm is not installed.
#
#   slurm.sh up N      hosts (mh.sh up N) and the cluster; returns once every node is idle
#   slurm.sh down      stop the daemons and remove the hosts (safe to repeat)
#   slurm.sh env       print the environment Slurm's commands need here (SLURM_CONF=...)
# State lives in $MH_STATE/slurm (mh.sh's state folder; default /run/feedrate-mh).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
R=${MH_STATE:-/run/feedrate-mh}
S=$R/slurm
MH="$HERE/mh.sh"
die() {
  echo "slurm.sh: $*" >&2
  for f in "$S"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
  exit 1
}
skip() { echo "slurm.sh: SKIP: $*" >&2; exit 77; }

write_conf() {  # n
  local n=$1 i
  mkdir -p "$S/ctld"
  for i in $(seq 1 "$n"); do mkdir -p "$S/spool/frh$i"; done
  {
    echo "ClusterName=feedrate"
    echo "SlurmctldHost=$(hostname -s)(10.213.77.1)"  # (slurmctld checks the name against its own)
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$S/ctld"
    echo "SlurmdSpoolDir=$S/spool/%n"
    echo "TmpFS=$S/tmpfs"
    echo "SlurmctldPidFile=$S/slurmctld.pid"
    echo "SlurmdPidFile=$S/slurmd.%n.pid"
    echo "SlurmctldLogFile=$S/slurmctld.log"
    echo "SlurmdLogFile=$S/slurmd.%n.log"
    echo "SlurmctldPort=6817"
    echo "SlurmdPort=6818"
    # No cgroups: the emulated hosts share the machine's cgroup tree, which a sandbox may not let slurmd write.
    echo "ProctrackType=proctrack/pgid"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "SchedulerType=sched/backfill"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    # A node that stops answering is down after SlurmdTimeout; its job's steps end then (the tests' bound).
    echo "SlurmdTimeout=10"
    echo "MessageTimeout=5"
    echo "KillWait=5"
    echo "InactiveLimit=0"
    for i in $(seq 1 "$n"); do
      echo "NodeName=frh$i NodeAddr=10.213.77.$((10 + i)) CPUs=$(nproc) State=UNKNOWN"
    done
    echo "PartitionName=fr Nodes=frh[1-$n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
  } >"$S/slurm.conf"
  echo "PMIxCliTmpDirBase=$S/tmpfs" >"$S/mpi.conf"
}

start_munge() {
  # One munged serves every host: they share the root namespace's /run, where its socket is.
  [ -f /etc/munge/munge.key ] || { mkdir -p /etc/munge && dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null &&
    chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key; } || die "cannot make a munge key"
  if ! munge -n </dev/null >/dev/null 2>&1; then
    mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge:munge /run/munge /var/log/munge /var/lib/munge
    runuser -u munge -- /usr/sbin/munged >/dev/null 2>&1 || die "munged did not start"
    touch "$S/munged.ours"
  fi
  for _ in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "munged does not answer"
}

# slurmd initialises its cgroup plugin even with proctrack/pgid and task/none, and a host's /sys (a fresh sysfs from
# `ip netns exec`) has no cgroup file systems: mount the machine's hierarchies there again (same hierarchies). And a
# TmpFS of its own (a tmpfs on the same path in each host; /tmp stays shared, the checkout may be there): Slurm's
# PMIx plugin makes a folder per job step in it, named alike on every node.
host_prepare() {  # host
  local h=$1 script="mkdir -p $S/tmpfs && mount -t tmpfs tmp $S/tmpfs && "
  if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
    script+="mount -t cgroup2 cgroup2 /sys/fs/cgroup"
  else
    script+="mount -t tmpfs cgroup /sys/fs/cgroup"
    while read -r _ dir type opts _; do
      [ "$type" = cgroup ] || continue
      script+=" && mkdir -p $dir && mount -t cgroup -o $opts cgroup $dir"
    done </proc/mounts
  fi
  "$MH" exec "$h" sh -c "$script" || die "cannot mount /tmp and cgroups on $h"
}

up() {
  local n=$1 h
  [ "$(id -u)" = 0 ] || skip "needs root"
  for t in slurmctld slurmd srun munged munge; do command -v $t >/dev/null || skip "$t not installed (slurm-wlm, munge)"; done
  [ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] || skip "Slurm's PMIx plugin (mpi_pmix.so) is not installed"
  down_daemons
  "$MH" up "$n"
  local rc=$?
  [ $rc -eq 77 ] && exit 77
  [ $rc -eq 0 ] || die "mh.sh up $n failed"
  mkdir -p "$S"
  write_conf "$n"
  start_munge
  SLURM_CONF=$S/slurm.conf slurmctld -f "$S/slurm.conf" || die "slurmctld did not start"
  for h in $("$MH" hosts); do
    host_prepare "$h"
    "$MH" exec "$h" env SLURM_CONF="$S/slurm.conf" slurmd -f "$S/slurm.conf" -N "$h" || die "slurmd on $h did not start"
  done
  for _ in $(seq 150); do
    [ "$(SLURM_CONF=$S/slurm.conf sinfo -h -o '%t' 2>/dev/null | sort -u)" = "idle" ] && return 0
    sleep 0.2
  done
  die "the nodes did not become idle: $(SLURM_CONF=$S/slurm.conf sinfo -h -N -o '%N %t %E' 2>&1 | tr '\n' ';')"
}

down_daemons() {
  local f
  for f in "$S"/slurmd.*.pid "$S"/slurmctld.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  pkill -x slurmstepd 2>/dev/null
  if [ -f "$S/munged.ours" ]; then pkill -x munged 2>/dev/null; fi
  for _ in $(seq 50); do pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || pgrep -x slurmstepd >/dev/null || break
    sleep 0.1; done
  pkill -KILL -x slurmd; pkill -KILL -x slurmctld; pkill -KILL -x slurmstepd
  return 0
}

cmd=${1:-}; shift || true
case $cmd in
  up) [ $# -eq 1 ] || die "usage: slurm.sh up N"; up "$1" ;;
  down) down_daemons; "$MH" down; rm -rf "$S" ;;
  env) echo "SLURM_CONF=$S/slurm.conf" ;;
  *) die "usage: slurm.sh up N|down|env (see the top of $0)" ;;
esac
