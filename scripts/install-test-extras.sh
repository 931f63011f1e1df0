#!/usr/bin/env bash
# Optional test tools beyond scripts/install-deps.sh: headless Chromium renders the HTML report in its test
# (which skips without it). CI installs it; a developer may skip it.
set -euo pipefail
command -v chromium >/dev/null && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
