#!/usr/bin/env bash
# Test tools beyond scripts/install-deps.sh, which CI installs and a developer may skip: headless Chromium renders
# the HTML report in its test (which skips without it); clang-14 with libFuzzer builds the fuzz targets
# (scripts/fuzz.sh); iproute2, openssh-server and sshfs give the multi-host tests their emulated hosts and the
# network file system between them (tests/multihost/mh.sh; those tests skip without them); Ceph's mon, OSD and
# RADOS Gateway give the S3 tests a real S3 server (scripts/s3-test-server.sh; ~60 s to install; skipped without).
exec bash "$(dirname "$0")/install-deps.sh" chromium clang-14 libclang-rt-14-dev iproute2 openssh-server openssh-client sshfs \
  ceph-mon ceph-osd radosgw curl
