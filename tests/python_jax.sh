#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gmpi.jax's pytest suite (python/tests_jax) on every rank:
#   python_jax.sh PYTHON XLA_LIBRARY SOURCE_DIR MPIEXEC NRANKS [mpiexec flags...]
# With GMPI_JAX_BENCH_ARGS set: tools/gmpi-jax-bench with those arguments instead (it checks
# every result's values and exits non-zero on a wrong one).
# Exits 77 (ctest: skipped) with the reason when libgmpi_xla was not built (CMake found no
# Python with jax) or PYTHON lacks jax, mpi4py, numpy or pytest.
set -euo pipefail
python=$1 xla=$2 src=$3 mpiexec=$4 n=$5
shift 5
if [ -z "$xla" ] || [ ! -f "$xla" ]; then
  echo "gmpi.jax tests: SKIP: libgmpi_xla was not built (CMake found no Python with jax;" \
    "scripts/install-deps installs it, or cmake -DGMPI_JAX_PYTHON=/path/to/python)"
  exit 77
fi
missing=$("$python" -c 'import importlib.util as u
print(" ".join(m for m in ("jax", "mpi4py", "numpy", "pytest") if u.find_spec(m) is None))') ||
  { echo "gmpi.jax tests: SKIP: $python does not run"; exit 77; }
if [ -n "$missing" ]; then
  echo "gmpi.jax tests: SKIP: $python has no $missing (scripts/install-deps installs them)"
  exit 77
fi
# One XLA thread pool per rank on a machine of few cores: ranks that oversubscribe them compile
# slowly enough to keep their peers waiting.
export PYTHONDONTWRITEBYTECODE=1 GMPI_XLA_LIBRARY=$xla
export XLA_FLAGS="${XLA_FLAGS:-} --xla_cpu_multi_thread_eigen=false"
if [ -n "${GMPI_JAX_BENCH_ARGS:-}" ]; then
  # shellcheck disable=SC2086 # the arguments are words
  exec "$mpiexec" -n "$n" "$@" "$python" "$src/tools/gmpi-jax-bench" $GMPI_JAX_BENCH_ARGS
fi
exec "$mpiexec" -n "$n" "$@" "$python" -m pytest -q --color=no -p no:cacheprovider \
  "$src/python/tests_jax"
