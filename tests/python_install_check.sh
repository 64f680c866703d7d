#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install gmpi into a scratch prefix; from outside the source tree, with only PYTHONPATH
# naming the installed package, `import gmpi` loads the installed libgmpi and a 2-rank
# allreduce is right on both ranks.
#   python_install_check.sh BUILD_DIR PYTHON MPIEXEC [mpiexec flags...]
set -euo pipefail
build=$1 python=$2 mpiexec=$3
shift 3
"$python" -c "import numpy" 2>/dev/null ||
  { echo "python_install_check: SKIP: $python has no numpy (scripts/install-deps makes the venv .venv with it)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
pkg=$(find "$work/prefix" -path '*/gmpi/__init__.py' | head -1)
[ -n "$pkg" ] || { echo "python_install_check: no gmpi/__init__.py under the prefix"; exit 1; }
export PYTHONPATH=$(dirname "$(dirname "$pkg")")
unset GMPI_LIBRARY
cd "$work"
"$python" -c "import gmpi, os; assert gmpi.__file__.startswith('$work/prefix'), gmpi.__file__
lib = os.path.realpath(gmpi._lib.lib._name)
assert lib.startswith(os.path.realpath('$work/prefix')), lib
print('python_install_check: import gmpi', gmpi.__version__, 'from', gmpi.__file__, 'with', lib)"
cat >"$work/allreduce.py" <<'PY'
import numpy as np
import gmpi
comm = gmpi.init()
x = np.full(3, comm.rank + 1, np.float64)
comm.Allreduce(gmpi.IN_PLACE, x, op=gmpi.SUM)
ok = (x == comm.size * (comm.size + 1) / 2).all()
print("rank %d: %s" % (comm.rank, "ok" if ok else "WRONG %s" % x))
comm.Free()
PY
out=$("$mpiexec" -n 2 "$@" "$python" "$work/allreduce.py")
echo "$out"
[ "$(echo "$out" | grep -o 'rank [0-9]*: ok' | wc -l)" = 2 ] ||
  { echo "python_install_check: the installed package's allreduce was not ok on both ranks"; exit 1; }
echo "python_install_check: installed package imports and reduces correctly at 2 ranks"
