#!/usr/bin/env bash
# Install gmpi into a scratch prefix, then use it as users do, from outside the source tree:
#   - the installed gmpi-info runs with no LD_LIBRARY_PATH (run path $ORIGIN/../lib);
#   - examples/halo.c (C) and examples/cxx/hello.cpp (a C++-only CMake project) build with
#     find_package(gmpi) and with pkg-config (no run-path flag of our own: gmpi.pc carries it);
#   - each program runs at 2 ranks and prints ok on both.
# Usage: install_check.sh BUILD_DIR SOURCE_DIR MPIEXEC
set -euo pipefail
build=$1 src=$2 mpiexec=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH
cmake --install "$build" --prefix "$work/prefix" >/dev/null
prefix=$work/prefix
"$prefix/bin/gmpi-info" >"$work/info.txt" 2>&1 ||
  { cat "$work/info.txt"; echo "install_check: installed gmpi-info did not run"; exit 1; }
cmake -S "$src/examples" -B "$work/ex" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/ex" >/dev/null
cmake -S "$src/examples/cxx" -B "$work/cxx" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cxx" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libgmpi.so*' | head -1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -o "$work/halo_pc" "$src/examples/halo.c" $(pkg-config --cflags --libs gmpi)
c++ -o "$work/hello_pc" "$src/examples/cxx/hello.cpp" $(pkg-config --cflags --libs gmpi)
extra=()
"$mpiexec" --version 2>/dev/null | grep -qE "Open MPI|OpenRTE" && extra+=(--oversubscribe)
for exe in "$work/ex/halo" "$work/halo_pc" "$work/cxx/hello" "$work/hello_pc"; do
  out=$("$mpiexec" -n 2 "${extra[@]}" "$exe") || { echo "$out"; echo "install_check: $exe failed"; exit 1; }
  [ "$(echo "$out" | grep -c ": ok")" = 2 ] ||
    { echo "$out"; echo "install_check: $exe did not print ok on both ranks"; exit 1; }
  echo "install_check: $(basename "$exe") ok on 2 ranks"
done
echo "install_check: installed gmpi-info runs; C and C++ apps build with find_package(gmpi) and pkg-config and run correctly"
