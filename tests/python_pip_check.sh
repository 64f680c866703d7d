#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `pip install ./python` as a Python user does it: a fresh venv from PYTHON, one pip command
# (it builds libgmpi with CMake through scikit-build-core, bundles it, and brings numpy), then,
# from outside the source tree with no GMPI_LIBRARY or PYTHONPATH, a 2-rank program that frees
# the world comm, starts again, reduces and exchanges, checked on both ranks.
#   python_pip_check.sh SOURCE_DIR PYTHON MPIEXEC [mpiexec flags...]
# Needs the package index (PyPI) or pip's cache for scikit-build-core and numpy.
set -euo pipefail
src=$1 python=$2 mpiexec=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset GMPI_LIBRARY PYTHONPATH
"$python" -m venv "$work/venv"
# The build folder in the scratch space: the test leaves the source tree as it was.
if ! "$work/venv/bin/pip" install -q --disable-pip-version-check \
  --config-settings=build-dir="$work/build" "$src/python" >"$work/pip.log" 2>&1; then
  tail -30 "$work/pip.log"
  echo "python_pip_check: pip install ./python failed (it needs PyPI, or pip's cache, for" \
    "scikit-build-core and numpy)"
  exit 1
fi
cd "$work"
"$work/venv/bin/python" -c "import gmpi, os
lib = os.path.realpath(gmpi._lib.lib._name)
assert lib.startswith(os.path.realpath('$work/venv')), lib
print('python_pip_check: gmpi', gmpi.__version__, 'with its own', lib)"
cat >"$work/ring.py" <<'PY'
import numpy as np
import gmpi

first = gmpi.init()
first.Free()                # the world comm: MPI stays up
comm = gmpi.init()          # so gmpi starts again
x = np.full(3, comm.rank + 1, np.float64)
comm.Allreduce(gmpi.IN_PLACE, x, op=gmpi.SUM)
right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
got = np.zeros(2, np.int32)
comm.Sendrecv(np.full(2, comm.rank, np.int32), right, 5, got, left, 5)
ok = (x == comm.size * (comm.size + 1) / 2).all() and (got == left).all()
print("rank %d: %s" % (comm.rank, "ok" if ok else "WRONG %s %s" % (x, got)))
comm.Free()
PY
out=$("$mpiexec" -n 2 "$@" "$work/venv/bin/python" "$work/ring.py")
echo "$out"
# Each rank's verdict once (mpiexec may join the two ranks' lines: counted per rank, not per line).
[ "$(echo "$out" | grep -o 'rank 0: ok' | wc -l)" = 1 ] &&
  [ "$(echo "$out" | grep -o 'rank 1: ok' | wc -l)" = 1 ] ||
  { echo "python_pip_check: the pip-installed package was not ok on both ranks"; exit 1; }
echo "python_pip_check: pip install ./python in a fresh venv gives a working gmpi at 2 ranks"
