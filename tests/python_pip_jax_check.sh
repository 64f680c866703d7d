#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gmpi.jax from a wheel, as a jax user builds it: `pip wheel --no-build-isolation ./python` with
# PYTHON (which has jax: pip's isolated build would not, and the wheel would lack gmpi.jax's
# handlers), the wheel installed into a scratch folder, then from outside the source tree with
# no GMPI_LIBRARY or GMPI_XLA_LIBRARY, a jitted allreduce at 2 ranks, checked on both ranks.
#   python_pip_jax_check.sh SOURCE_DIR PYTHON MPIEXEC [mpiexec flags...]
# Exits 77 (ctest: skipped) with the reason when PYTHON lacks jax, mpi4py, numpy or
# scikit-build-core (scripts/install-deps's venv has them).
set -euo pipefail
src=$1 python=$2 mpiexec=$3
shift 3
missing=$("$python" -c 'import importlib.util as u
print(" ".join(m for m in ("jax", "mpi4py", "numpy", "scikit_build_core") if u.find_spec(m) is None))') ||
  { echo "python_pip_jax_check: SKIP: $python does not run"; exit 77; }
if [ -n "$missing" ]; then
  echo "python_pip_jax_check: SKIP: $python has no $missing (scripts/install-deps installs them)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset GMPI_LIBRARY GMPI_XLA_LIBRARY PYTHONPATH
if ! "$python" -m pip wheel -q --no-deps --no-build-isolation --disable-pip-version-check \
  --config-settings=build-dir="$work/build" -w "$work/dist" "$src/python" >"$work/pip.log" 2>&1; then
  tail -30 "$work/pip.log"
  echo "python_pip_jax_check: pip wheel --no-build-isolation ./python failed"
  exit 1
fi
"$python" -m pip install -q --no-deps --no-compile --disable-pip-version-check \
  --target "$work/site" "$work"/dist/gmpi-*.whl
[ -f "$work/site/gmpi/libgmpi_xla.so" ] ||
  { echo "python_pip_jax_check: the wheel has no gmpi/libgmpi_xla.so"; ls "$work/site/gmpi"; exit 1; }
cat >"$work/jit.py" <<'PY'
import os
import jax
import jax.numpy as jnp
import numpy as np
from mpi4py import MPI
import gmpi
import gmpi.jax as mpi4jax

lib = os.path.realpath(gmpi._lib.lib._name)
assert lib.startswith(os.path.realpath(os.environ["SITE"])), lib
r, n = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
y = jax.jit(lambda v: mpi4jax.allreduce(v, op=MPI.SUM))(jnp.full(4, r + 1.0, jnp.float32))
ok = bool((np.asarray(y) == n * (n + 1) / 2).all())
print("rank %d: %s" % (r, "ok" if ok else "WRONG %s" % y))
PY
cd "$work"
out=$(SITE="$work/site" PYTHONPATH="$work/site" XLA_FLAGS=--xla_cpu_multi_thread_eigen=false \
  "$mpiexec" -n 2 "$@" "$python" "$work/jit.py")
echo "$out"
# Each rank's verdict once (mpiexec may join the two ranks' lines: counted per rank, not per line).
[ "$(echo "$out" | grep -o 'rank 0: ok' | wc -l)" = 1 ] &&
  [ "$(echo "$out" | grep -o 'rank 1: ok' | wc -l)" = 1 ] ||
  { echo "python_pip_jax_check: the wheel's gmpi.jax was not ok on both ranks"; exit 1; }
echo "python_pip_jax_check: the wheel built with jax carries gmpi.jax's handlers; a jitted" \
  "allreduce is right at 2 ranks"
