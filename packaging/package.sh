#!/usr/bin/env bash
# Builds the release artefacts from this checkout: the Debian package (CPack) and the relocatable tarball
# feedrate-<version>-linux-x86_64.tar.gz, which carries every shared library beyond glibc and an OpenMPI (docs/install.md).
# Usage: packaging/package.sh [OUT_DIR]   (default build/package; CMake's default generator, no tests)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
out=$(mkdir -p "${1:-build/package}" && cd "${1:-build/package}" && pwd)
bld=$out/build
for tool in patchelf objdump dpkg-shlibdeps ompi_info; do
  command -v "$tool" >/dev/null || { echo "package.sh: $tool is missing (scripts/install-test-extras.sh installs it)" >&2; exit 2; }
done

build() {
  # The flags of the release preset (optimised, line tables, unity batches of 8), stripped on install.
  cmake -S "$src" -B "$bld" -DFEEDRATE_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
  cmake --build "$bld" -j"$(nproc)" >/dev/null
  version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$bld/CMakeCache.txt")
}

deb() {
  rm -f "$out"/feedrate_*.deb
  (cd "$bld" && cpack -G DEB -B "$out/cpack" >/dev/null)
  mv "$out"/cpack/feedrate_*.deb "$out/"
  rm -rf "$out/cpack"
}

# The tree a user unpacks: bin/feedrate and bin/mpirun (a wrapper that points OpenMPI at the copy it carries, and
# runs the binary or OpenMPI's mpirun by the name it was called by), libexec/feedrate/
# feedrate (the binary), lib/ (its libraries), lib/openmpi and lib/pmix (OpenMPI's and PMIx's install trees:
# components, orted, mpirun, help texts), share/ (workloads, docs).
stage_tree() {
  name=feedrate-$version-linux-x86_64
  root=$out/$name
  rm -rf "$root"
  cmake --install "$bld" --prefix "$root" --strip >/dev/null
  mkdir -p "$root/libexec/feedrate"
  mv "$root/bin/feedrate" "$root/libexec/feedrate/feedrate"
  install -m 0755 "$src/packaging/feedrate-wrapper.sh" "$root/bin/feedrate"
  install -m 0755 "$src/packaging/feedrate-wrapper.sh" "$root/bin/mpirun"
}

# OpenMPI carries the control traffic only (barriers, gathers: the data path never crosses MPI), so the fabric
# components (UCX, libfabric, PSM, verbs), whose libraries would pull in a host's RDMA stack, are left out: TCP and
# shared memory serve every run. Their places under the prefix are OpenMPI's own (ompi_info --path), relocated by
# OPAL_PREFIX; PMIx's by its folder variables (the wrapper sets both).
stage_mpi() {
  local prefix pkglibdir pkgdatadir mpi=$root/lib/openmpi pmix_src=/usr/lib/x86_64-linux-gnu/pmix2 pmix=$root/lib/pmix
  prefix=$(ompi_info --path prefix --parsable | cut -d: -f3)
  pkglibdir=$(ompi_info --path pkglibdir --parsable | cut -d: -f3)
  pkgdatadir=$(ompi_info --path pkgdatadir --parsable | cut -d: -f3)
  mkdir -p "$mpi/bin" "$mpi/etc" "$mpi/${pkglibdir#"$prefix"/}" "$mpi/${pkgdatadir#"$prefix"/}"
  for f in "$pkglibdir"/mca_*.so; do
    case $(basename "$f") in *ucx* | *ofi* | *psm* | *openib* | *verbs* | *usnic*) continue ;; esac
    cp "$f" "$mpi/${pkglibdir#"$prefix"/}/"
  done
  cp -r "$pkgdatadir"/. "$mpi/${pkgdatadir#"$prefix"/}/"
  cp "$(readlink -f "$(command -v orted)")" "$mpi/bin/orted"
  cp "$(readlink -f "$(command -v mpirun)")" "$mpi/bin/orterun"
  # The host's /etc/openmpi (another OpenMPI's settings) is not read: the wrapper points OPAL_SYSCONFDIR here.
  printf '# MCA parameters of the OpenMPI that Feedrate carries (docs/install.md); empty: defaults.\n' \
    >"$mpi/etc/openmpi-mca-params.conf"
  mkdir -p "$pmix/lib/pmix" "$pmix/share/pmix" "$pmix/etc"
  cp "$pmix_src"/lib/pmix/*.so "$pmix/lib/pmix/"
  cp -r "$pmix_src/share/pmix/." "$pmix/share/pmix/"
  # (Debian's own names its component folder by its whole path, which would be looked for on the user's host.)
  printf '# MCA parameters of the PMIx that Feedrate carries (docs/install.md); empty: defaults.\n' \
    >"$pmix/etc/pmix-mca-params.conf"
}

elf_files() { find "$root" -type f -exec sh -c 'head -c4 "$1" | grep -q "^.ELF" && echo "$1"' _ {} \; | sort; }

# Every library an ELF in the tree needs, but glibc's own (the one thing taken from the host, with the kernel's
# interfaces), copied into lib/; ldd lists the whole closure as the host resolves it.
bundle_libs() {
  local lib base
  elf_files | xargs -r ldd 2>/dev/null | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
    base=$(basename "$lib")
    case $base in
      libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | libutil.so.* | \
        libanl.so.* | libnsl.so.* | ld-linux*.so.* | libBrokenLocale.so.* | libmvec.so.*) continue ;;
    esac
    [ -e "$root/lib/$base" ] || cp -L "$lib" "$root/lib/$base"
  done
}

# DT_RPATH (not RUNPATH) to lib/, relative to each file ($ORIGIN): searched before LD_LIBRARY_PATH, so a host's own
# OpenMPI or libstdc++ on that path cannot replace the ones the binary was built with.
set_rpaths() {
  local f rel
  chmod u+w "$root"/lib/*.so*
  elf_files | while read -r f; do
    rel=$(realpath --relative-to="$(dirname "$f")" "$root/lib")
    patchelf --force-rpath --set-rpath "\$ORIGIN/$rel" "$f"
  done
}

# The newest glibc symbol version any file needs is the oldest glibc the tarball runs on; packaging/glibc-floor
# states it (docs/install.md), and a tarball that needs a newer one is not made.
check_glibc() {
  local need floor
  need=$(elf_files | xargs objdump -T 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  floor=$(cat "$src/packaging/glibc-floor")
  if [ "$(printf '%s\n%s\n' "$need" "$floor" | sort -V | tail -1)" != "$floor" ]; then
    echo "package.sh: the tarball needs glibc $need, newer than packaging/glibc-floor ($floor)" >&2
    exit 1
  fi
  echo "$need" >"$root/share/doc/feedrate/GLIBC"
}

build
deb
stage_tree
stage_mpi
bundle_libs
set_rpaths
check_glibc
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
ls "$out"/feedrate_*.deb
