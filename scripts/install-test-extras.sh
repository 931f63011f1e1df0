#!/usr/bin/env bash
# Test tools beyond scripts/install-deps.sh, which CI installs and a developer may skip: headless Chromium renders
# the HTML report in its test (which skips without it); clang-14 with libFuzzer builds the fuzz targets
# (scripts/fuzz.sh).
exec bash "$(dirname "$0")/install-deps.sh" chromium clang-14 libclang-rt-14-dev
