#!/bin/sh
# bin/feedrate and bin/mpirun of the release tarball: run the binary, or OpenMPI's mpirun, with the OpenMPI and PMIx
# the tarball carries, wherever it was unpacked (a symlink to either, from /usr/local/bin say, works too).
# docs/install.md.
self=$(readlink -f "$0")
top=$(cd "$(dirname "$self")/.." && pwd)
OPAL_PREFIX=$top/lib/openmpi
OPAL_SYSCONFDIR=$OPAL_PREFIX/etc
# Debian's PMIx keeps its folders as whole paths, so its prefix alone does not move them: each is named.
pmix=$top/lib/pmix
PMIX_LIBDIR=$pmix/lib
PMIX_PKGLIBDIR=$pmix/lib/pmix
PMIX_DATADIR=$pmix/share
PMIX_PKGDATADIR=$pmix/share/pmix
PMIX_SYSCONFDIR=$pmix/etc
# --hosts starts `mpirun`: this one.
PATH=$top/bin:$PATH
export OPAL_PREFIX OPAL_SYSCONFDIR PMIX_LIBDIR PMIX_PKGLIBDIR PMIX_DATADIR PMIX_PKGDATADIR PMIX_SYSCONFDIR PATH
# OpenMPI's daemon refuses to start, even for a one-host run, where no ssh or rsh is found to reach other hosts with
# ("agent-not-found"); a host without either cannot start ranks elsewhere, so `false` stands in for it there.
if [ -z "${OMPI_MCA_plm_rsh_agent:-}" ] && ! command -v ssh >/dev/null 2>&1 && ! command -v rsh >/dev/null 2>&1; then
  OMPI_MCA_plm_rsh_agent=false
  export OMPI_MCA_plm_rsh_agent
fi
case $(basename "$0") in
  mpirun | mpiexec | orterun) exec "$OPAL_PREFIX/bin/orterun" "$@" ;;  # by its path: remote hosts get this prefix
  *) exec "$top/libexec/feedrate/feedrate" "$@" ;;
esac
