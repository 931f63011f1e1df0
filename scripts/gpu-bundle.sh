#!/usr/bin/env bash
# Packs Feedrate for a GPU host that reaches no package archive (issue 21, docs/gpu.md): a release build without MPI
# (one process: scripts/gpu-check.sh starts no mpirun), stripped, with every shared library it links that is not
# the C runtime copied beside it and an $ORIGIN rpath (DT_RPATH, so the copied libraries' own dependencies are found
# there too), into OUT (default build/gpu-bundle/bundle). CUDA and cuFile are not packed: they are loaded at run
# time from the GPU host's driver and toolkit. The host needs glibc >= this machine's. The folder is ~64 MiB (ICU's
# data, which libxml2 pulls in, is half of it), so it is also packed as OUT.tar.gz (~26 MiB), what travels.
# Usage: scripts/gpu-bundle.sh [OUT]; then, on the GPU host, FEEDRATE_BUNDLE=OUT.tar.gz scripts/gpu-check.sh
# (the device tool: carry OUT.tar.gz with the working tree).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu-bundle/bundle}
build=build/gpu-bundle
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFEEDRATE_WITH_MPI=OFF -DFEEDRATE_BUILD_TESTS=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags '-DCMAKE_BUILD_RPATH=$ORIGIN/lib' >/dev/null
cmake --build "$build" --target feedrate
rm -rf "$out"
mkdir -p "$out/lib"
cp "$build/cli/feedrate" "$out/feedrate"
strip "$out/feedrate"
# Every library the loader resolves for it, but the C runtime (the host's glibc must serve those).
ldd "$build/cli/feedrate" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | ld-linux*.so.*) continue ;;
  esac
  cp -L "$lib" "$out/lib/"
  chmod u+w "$out/lib/$(basename "$lib")"
  strip --strip-unneeded "$out/lib/$(basename "$lib")"
done
# The packed binary must find every library in the bundle, not in this machine's system folders.
if env -i LD_DEBUG=libs "$out/feedrate" --version 2>&1 >/dev/null | grep -E 'calling init: /(usr/)?lib' |
   grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv)\.so|ld-linux' | grep -q .; then
  echo "gpu-bundle: $out/feedrate still loads libraries from the system:" >&2
  env -i LD_DEBUG=libs "$out/feedrate" --version 2>&1 >/dev/null | grep 'calling init: /' >&2
  exit 1
fi
"$out/feedrate" --version
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
size=$(stat -c %s "$out.tar.gz")
echo "gpu-bundle: $out ($(du -sh "$out" | cut -f1), $(ls "$out/lib" | wc -l) libraries), packed as $out.tar.gz ($((size >> 20)) MiB)"
if [ "$size" -gt $((60 << 20)) ]; then
  echo "gpu-bundle: $out.tar.gz is over 60 MiB: too large to travel to a GPU machine (64 MiB in all)" >&2
  exit 1
fi
