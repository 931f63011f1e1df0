#!/usr/bin/env bash
# Installs the Debian 12 packages Feedrate builds and tests with, or the packages given as arguments (sudo only when
# not root); a no-op when present.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config git
          liburing-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libssl-dev zlib1g-dev
          libopenmpi-dev openmpi-bin
          libgtest-dev libgmock-dev libbenchmark-dev libfuse3-dev fuse3
          libcurl4-openssl-dev libxml2-dev
          libisal-dev libsnappy-dev libzstd-dev liblz4-dev libprotobuf-dev protobuf-compiler libhdf5-dev libjpeg62-turbo-dev libpng-dev
          python3-numpy python3-h5py python3-protobuf python3-pil)
if [ $# -gt 0 ]; then packages=("$@"); fi  # scripts/install-test-extras.sh passes its own list
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}" >&2
# Another apt (a fresh VM's unattended upgrades at boot) may hold the dpkg lock: wait for it up to 10 minutes.
lock=(-o DPkg::Lock::Timeout=600)
$sudo apt-get "${lock[@]}" update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
