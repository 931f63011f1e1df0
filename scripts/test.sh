#!/usr/bin/env bash
# Builds (release preset) and runs the whole test suite: unit, fixture and MPI integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
ctest --preset release -j2
