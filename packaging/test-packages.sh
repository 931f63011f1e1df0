#!/usr/bin/env bash
# Tests the release artefacts as a user gets them (docs/install.md): a minimal Debian root from Debian's archive
# (debootstrap --variant=minbase), the tarball unpacked there with nothing installed for it, then the .deb installed
# into a container image built on that root with podman (packaging/Containerfile; apt in a chroot of the root where
# podman cannot run containers here, with the reason printed); each runs datagen, run (one rank and two under its
# mpirun) and report there.
# Usage: packaging/test-packages.sh PACKAGE_DIR   (packaging/package.sh's output; root, for debootstrap and chroot)
# FEEDRATE_DEBOOTSTRAP_CACHE=DIR keeps debootstrap's downloads between runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkg=$(cd "${1:?usage: test-packages.sh PACKAGE_DIR}" && pwd)
tarball=$(ls "$pkg"/feedrate-*-linux-x86_64.tar.gz)
debfile=$(ls "$pkg"/feedrate_*.deb)
mirror=${FEEDRATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d /var/tmp/feedrate-packages.XXXXXX)
root=$work/root
trap 'rm -rf "$work"' EXIT

fail() { echo "test-packages: FAIL: $*" >&2; exit 1; }

make_root() {
  local cache=()
  if [ -n "${FEEDRATE_DEBOOTSTRAP_CACHE:-}" ]; then
    mkdir -p "$FEEDRATE_DEBOOTSTRAP_CACHE"
    cache=(--cache-dir "$(cd "$FEEDRATE_DEBOOTSTRAP_CACHE" && pwd)")
  fi
  debootstrap --variant=minbase "${cache[@]}" bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
}

# Runs a shell command inside the root, in a mount namespace of its own (proc, a tmpfs /dev/shm for OpenMPI's shared
# memory; all gone when it ends). OpenMPI refuses root unless told: the test runs as root.
in_root() {
  unshare --mount --propagation private sh -c '
    mount -t proc proc "$0/proc" && mount -t tmpfs shm "$0/dev/shm" && mount -t sysfs sys "$0/sys" &&
    exec chroot "$0" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 /bin/sh -ec "$1"' \
    "$root" "$1"
}

# podman as this machine lets it run containers: runc with cgroupfs (crun refuses hybrid cgroups), limits set
# explicitly (raising them to the defaults is not permitted in a sandbox), the host's network for apt.
podman_() { podman --runtime runc --cgroup-manager cgroupfs "$@"; }
podman_limits=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
in_container() {
  podman_ run --rm "${podman_limits[@]}" --network none --entrypoint /bin/sh localhost/feedrate-test:deb -ec "$1"
}

# datagen, a one-rank run, a two-rank run under MPILAUNCH, report, run by RUNNER (in_root or in_container); each
# result folder must hold a summary and the report its HTML, and nothing may say that OpenMPI missed a file. A run
# exits 0 (AU met) or 3 (missed); anything else fails. Their output is shown only when they fail.
exercise() {
  local runner=$1 feedrate=$2 mpilaunch=$3 tag=$4
  local ds="--param dataset.num_files_train=8 --param dataset.record_length_bytes=65536 --param dataset.record_length_bytes_stdev=0"
  local run="run -w unet3d_h100 --data-dir /tmp/$tag/data $ds --param reader.batch_size=1 --param train.epochs=1 --param train.computation_time=0.001 --quiet"
  "$runner" "
    log=/tmp/$tag.log
    mkdir -p /tmp/$tag
    # (chained: set -e does not apply inside an if's condition)
    if ! { $feedrate --version &&
      $feedrate datagen -w unet3d_h100 --data-dir /tmp/$tag/data $ds &&
      { $feedrate $run --results-dir /tmp/$tag/one || [ \$? -eq 3 ]; } &&
      { $mpilaunch -np 2 $feedrate $run --results-dir /tmp/$tag/two || [ \$? -eq 3 ]; } &&
      $feedrate report /tmp/$tag/one /tmp/$tag/two -o /tmp/$tag/report.html &&
      test -s /tmp/$tag/one/summary.json && test -s /tmp/$tag/two/summary.json && test -s /tmp/$tag/report.html &&
      grep -q '\"ranks\": *2' /tmp/$tag/two/summary.json; } >\$log 2>&1; then cat \$log; exit 1; fi
    # OpenMPI's or PMIx's complaints that a file or component was not found (a layout it was not pointed at).
    if grep -E 'Sorry!|failed to add|unknown option|could not be found' \$log; then exit 1; fi
  " || fail "$tag: datagen/run/report in the minimal root"
}

# Every library the tarball's programs load resolves inside the tarball, but glibc's.
check_tarball_libs() {
  local leaks
  leaks=$(in_root "cd /opt/feedrate && for f in libexec/feedrate/feedrate lib/openmpi/bin/orted lib/openmpi/bin/orterun; do ldd \$f; done" |
    awk '/=>/{print $3}' | grep -v '^/opt/feedrate/' |
    grep -Ev '/lib(c|m|pthread|dl|rt|resolv|util|mvec)\.so|ld-linux' || true)
  [ -z "$leaks" ] || fail "tarball binaries load libraries from outside the tarball: $leaks"
  if in_root "command -v mpirun || ls /usr/lib/x86_64-linux-gnu/libmpi.so* " >/dev/null 2>&1; then
    fail "the minimal root already has an OpenMPI: the tarball test would not show that the tarball carries one"
  fi
}

test_tarball() {
  mkdir -p "$root/opt/feedrate"
  tar -C "$root/opt/feedrate" --strip-components=1 -xzf "$tarball"
  check_tarball_libs
  exercise in_root /opt/feedrate/bin/feedrate /opt/feedrate/bin/mpirun tarball
  echo "test-packages: tarball $(basename "$tarball"): datagen, run (1 and 2 ranks), report in a minbase root: ok"
}

# Debian 12 with its updates and security archives (what the build machine's libraries came from), for apt.
apt_sources() {
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
    "$mirror" "$mirror" "$mirror" >"$root/etc/apt/sources.list"
}

# The root as an image (imported: no registry is reached), and whether podman runs a container of it here; prints
# why not.
podman_works() {
  command -v podman >/dev/null || { echo "podman is not installed"; return 1; }
  tar -C "$root" --exclude=./opt/feedrate --exclude='./tmp/*' -c . | podman_ import - localhost/feedrate-test:minbase \
    >/dev/null 2>&1 || { echo "podman import failed"; return 1; }
  podman_ run --rm "${podman_limits[@]}" --network none localhost/feedrate-test:minbase /bin/true 2>&1 | tail -1
  return "${PIPESTATUS[0]}"
}

# The .deb in an image built from packaging/Containerfile on the minimal root.
test_deb_in_container() {
  local ctx=$work/context
  mkdir -p "$ctx"
  cp "$debfile" "$ctx/"
  podman_ build "${podman_limits[@]}" --network host --build-arg BASE=localhost/feedrate-test:minbase \
    -f "$here/Containerfile" -t localhost/feedrate-test:deb "$ctx" >"$work/build.log" 2>&1 ||
    { tail -20 "$work/build.log" >&2; fail "podman build of packaging/Containerfile"; }
  exercise in_container /usr/bin/feedrate /usr/bin/mpirun deb
  echo "test-packages: $(basename "$debfile"): image from packaging/Containerfile (apt, Debian 12); datagen, run (1 and 2 ranks), report in the container: ok"
}

test_deb_in_chroot() {
  cp "$debfile" "$root/tmp/"
  in_root "apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends /tmp/$(basename "$debfile")" \
    >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log" >&2; fail "apt-get install of $(basename "$debfile")"; }
  exercise in_root /usr/bin/feedrate /usr/bin/mpirun deb
  echo "test-packages: $(basename "$debfile"): installed with apt in a minbase root; datagen, run (1 and 2 ranks), report: ok"
}

test_deb() {
  local why
  apt_sources
  if why=$(podman_works); then
    test_deb_in_container
  else
    echo "test-packages: podman cannot run a container here ($why): the .deb is installed with apt in a chroot of the same root"
    test_deb_in_chroot
  fi
  podman_ rmi -f localhost/feedrate-test:deb localhost/feedrate-test:minbase >/dev/null 2>&1 || true
}

make_root
test_tarball
test_deb
