#!/usr/bin/env bash
# Install gmpi into a scratch prefix, then build examples/halo.c against it twice -- with CMake's
# find_package(gmpi) (target gmpi::gmpi) and with pkg-config -- and run both at 2 ranks.
# Usage: install_check.sh BUILD_DIR SOURCE_DIR MPIEXEC
set -euo pipefail
build=$1 src=$2 mpiexec=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/examples" -B "$work/ex" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/ex" >/dev/null
libdir=$(dirname "$(find "$work/prefix" -name 'libgmpi.so*' | head -1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -o "$work/halo_pc" "$src/examples/halo.c" $(pkg-config --cflags --libs gmpi) -Wl,-rpath,"$libdir"
extra=()
"$mpiexec" --version 2>/dev/null | grep -qE "Open MPI|OpenRTE" && extra+=(--oversubscribe)
for exe in "$work/ex/halo" "$work/halo_pc"; do
  "$mpiexec" -n 2 "${extra[@]}" "$exe" | grep -c ": ok" | grep -qx 2 ||
    { echo "install_check: $exe did not print ok on both ranks"; exit 1; }
done
echo "install_check: find_package(gmpi) and pkg-config builds both ran correctly"
