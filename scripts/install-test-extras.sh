#!/usr/bin/env bash
# Test tools beyond scripts/install-deps.sh, which CI installs and a developer may skip: headless Chromium renders
# the HTML report in its test (which skips without it); clang-14 with libFuzzer builds the fuzz targets
# (scripts/fuzz.sh).
set -euo pipefail
packages=(chromium clang-14 libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
