#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python package's pytest suite (python/tests) on every rank:
#   python.sh PYTHON SOURCE_DIR MPIEXEC NRANKS [mpiexec flags...]
# Exits 77 (ctest: skipped) with the reason when PYTHON lacks numpy, mpi4py or pytest.
set -euo pipefail
python=$1 src=$2 mpiexec=$3 n=$4
shift 4
missing=$("$python" -c 'import importlib.util as u
print(" ".join(m for m in ("numpy", "mpi4py", "pytest") if u.find_spec(m) is None))') ||
  { echo "python tests: SKIP: $python does not run"; exit 77; }
if [ -n "$missing" ]; then
  echo "python tests: SKIP: $python has no $missing" \
    "(scripts/install-deps makes the venv .venv with them)"
  exit 77
fi
export PYTHONDONTWRITEBYTECODE=1
exec "$mpiexec" -n "$n" "$@" "$python" -m pytest -q --color=no -p no:cacheprovider \
  "$src/python/tests"
