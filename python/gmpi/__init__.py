# SPDX-License-Identifier: BSD-3-Clause
"""gmpi for Python: MPI semantics on numpy arrays and on GPU tensors (CuPy, PyTorch), through
libgmpi by ctypes. Names follow mpi4py's buffer methods:

    import gmpi, numpy as np
    comm = gmpi.init()                      # or gmpi.init(mpi4py.MPI.COMM_WORLD)
    x = np.full(4, comm.rank, np.float32)
    comm.Allreduce(gmpi.IN_PLACE, x, op=gmpi.SUM)
"""
import sys as _sys

try:  # every buffer goes through numpy's dtypes: say so at import, not at the first call
    import numpy as _numpy  # noqa: F401
except ImportError as _e:
    raise ImportError(
        "gmpi needs numpy, which this Python (%s) cannot import: %s. Install it into this "
        "Python: '%s -m pip install numpy' (or 'pip install ./python', which brings it)"
        % (_sys.executable, _e, _sys.executable)) from None

from ._lib import STATUS_NAMES, GmpiError, last_error, versions
from ._comm import (ANY_SOURCE, ANY_TAG, AVG, BAND, BOR, BXOR, IN_PLACE, LAND, LOR, LXOR, MAX,
                    MIN, PROC_NULL, PROD, SUM, UNDEFINED, Comm, Op, Plan, Request, Status,
                    init)

# The status constants, by name: gmpi.GMPI_ERR_TIMEOUT == 7 (and gmpi.ERR_TIMEOUT).
for _value, _name in STATUS_NAMES.items():
    globals()[_name] = _value
    globals()[_name[len("GMPI_"):]] = _value
del _value, _name

__version__ = versions()[0].split()[-1]
__all__ = ["init", "Comm", "Request", "Status", "Plan", "Op", "GmpiError", "last_error",
           "versions", "IN_PLACE", "ANY_SOURCE", "ANY_TAG", "UNDEFINED", "PROC_NULL", "SUM", "PROD", "MIN",
           "MAX", "AVG", "BAND", "BOR", "BXOR", "LAND", "LOR", "LXOR"]
