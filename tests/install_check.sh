#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install gmpi into a scratch prefix, then use it as users do, from outside the source tree:
#   - the installed gmpi-info runs with no LD_LIBRARY_PATH (run path $ORIGIN/../lib);
#   - the installed libgmpi_mpi.so, preloaded, runs tests/dropin/dropin_p2p.c (plain MPI);
#   - examples/halo.c (C) and examples/cxx/hello.cpp (a C++-only CMake project) build with
#     find_package(gmpi) and with pkg-config (no run-path flag of our own: gmpi.pc carries it);
#   - each program runs at 2 ranks and prints ok on both.
# Then the same four apps against a static libgmpi (cpu backend; built here from SOURCE_DIR).
# Usage: install_check.sh BUILD_DIR SOURCE_DIR MPIEXEC
set -euo pipefail
build=$1 src=$2 mpiexec=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH
extra=()
"$mpiexec" --version 2>/dev/null | grep -qE "Open MPI|OpenRTE" && extra+=(--oversubscribe)

# Build examples/halo.c and examples/cxx/hello.cpp against prefix (CMake and pkg-config with
# pkg_flags), run each at 2 ranks, expect ok from both.
check_apps() {
  local prefix=$1 kind=$2 pkg_flags=$3 at=$work/$2
  cmake -S "$src/examples" -B "$at/ex" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$at/ex" >/dev/null
  cmake -S "$src/examples/cxx" -B "$at/cxx" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$at/cxx" >/dev/null
  export PKG_CONFIG_PATH="$(dirname "$(find "$prefix" -name gmpi.pc | head -1)")"
  cc -o "$at/halo_pc" "$src/examples/halo.c" $(pkg-config $pkg_flags --cflags --libs gmpi)
  c++ -o "$at/hello_pc" "$src/examples/cxx/hello.cpp" $(pkg-config $pkg_flags --cflags --libs gmpi)
  for exe in "$at/ex/halo" "$at/halo_pc" "$at/cxx/hello" "$at/hello_pc"; do
    out=$("$mpiexec" -n 2 "${extra[@]}" "$exe") || { echo "$out"; echo "install_check: $exe failed"; exit 1; }
    [ "$(echo "$out" | grep -o ": ok" | wc -l)" = 2 ] ||
      { echo "$out"; echo "install_check: $exe did not print ok on both ranks"; exit 1; }
    echo "install_check: $kind $(basename "$exe") ok on 2 ranks"
  done
}

cmake --install "$build" --prefix "$work/prefix" >/dev/null
"$work/prefix/bin/gmpi-info" >"$work/info.txt" 2>&1 ||
  { cat "$work/info.txt"; echo "install_check: installed gmpi-info did not run"; exit 1; }
echo "install_check: installed gmpi-info runs without LD_LIBRARY_PATH"
# The installed drop-in layer, preloaded into a plain MPI program (host buffers through gmpi).
mpicc -std=c11 -D_POSIX_C_SOURCE=200809L -o "$work/dropin_p2p" "$src/tests/dropin/dropin_p2p.c"
out=$("$mpiexec" -n 2 "${extra[@]}" -x LD_PRELOAD="$work/prefix/lib/libgmpi_mpi.so" \
  -x GMPI_INTERPOSE=all "$work/dropin_p2p" 2>&1) ||
  { echo "$out"; echo "install_check: dropin_p2p under the installed libgmpi_mpi failed"; exit 1; }
echo "$out" | grep -q "PASS dropin_p2p" ||
  { echo "$out"; echo "install_check: dropin_p2p did not pass under libgmpi_mpi"; exit 1; }
echo "install_check: a plain MPI program passes with the installed libgmpi_mpi preloaded"
check_apps "$work/prefix" shared ""

cmake -S "$src" -B "$work/static-build" -DBUILD_SHARED_LIBS=OFF -DGMPI_WITH_CUDA=OFF \
  -DGMPI_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/static-build" -j 2 >/dev/null
cmake --install "$work/static-build" --prefix "$work/static-prefix" >/dev/null
check_apps "$work/static-prefix" static "--static"
echo "install_check: C and C++ apps build with find_package(gmpi) and pkg-config, shared and static, and run correctly"
