#!/usr/bin/env bash
# Test tools beyond scripts/install-deps.sh, which CI installs and a developer may skip: headless Chromium renders
# the HTML report in its test (which skips without it); clang-14 with libFuzzer builds the fuzz targets
# (scripts/fuzz.sh); clang-format-14 and clang-tidy-14 the format and lint checks (scripts/lint.sh); iproute2, openssh-server and sshfs give the multi-host tests their emulated hosts and the
# network file system between them (tests/multihost/mh.sh; those tests skip without them), and Slurm (slurmctld,
# slurmd, srun with its PMIx plugin) and munge a cluster on them (tests/multihost/slurm.sh); Ceph's mon, OSD and
# RADOS Gateway give the S3 tests a real S3 server (scripts/s3-test-server.sh; ~60 s to install; skipped without);
# Prometheus scrapes a run's metrics endpoint in its test (skipped without); patchelf and dpkg-dev make the release
# tarball and .deb, debootstrap, podman and runc the minimal Debian root and container they are tested in
# (packaging/package.sh, packaging/test-packages.sh).
# The Parquet tests' independent readers and writers (hyparquet, DuckDB) come from the npm registry, pinned by
# tests/oracle/parquet/package-lock.json, with the machine's Node.js (Debian's nodejs and npm when it has none).
set -euo pipefail
here="$(dirname "$0")"
bash "$here/install-deps.sh" chromium clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14 iproute2 openssh-server openssh-client sshfs \
  ceph-mon ceph-osd radosgw curl prometheus patchelf dpkg-dev binutils debootstrap podman runc \
  slurmctld slurmd slurm-client munge
command -v npm >/dev/null || bash "$here/install-deps.sh" nodejs npm
if [ ! -d "$here/../tests/oracle/parquet/node_modules/@duckdb/node-api" ] || [ ! -d "$here/../tests/oracle/parquet/node_modules/hyparquet" ]; then
  npm ci --prefix "$here/../tests/oracle/parquet" --no-audit --no-fund --loglevel=error >/dev/null
fi
