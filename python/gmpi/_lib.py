# SPDX-License-Identifier: BSD-3-Clause
"""Finding and loading libgmpi, the C prototypes, and errors raised as GmpiError."""
import ctypes
import functools
import glob
import numbers
import os

# The statuses of gmpi.h (gmpi_status_t), by value. tests/test_statuses.py checks this table
# against the header, so a status added there and not here fails a test.
STATUS_NAMES = {
    0: "GMPI_SUCCESS",
    1: "GMPI_ERR_INVALID_ARG",
    2: "GMPI_ERR_UNSUPPORTED",
    3: "GMPI_ERR_NO_DEVICE",
    4: "GMPI_ERR_NO_MEMORY",
    5: "GMPI_ERR_TRUNCATE",
    6: "GMPI_ERR_MISMATCH",
    7: "GMPI_ERR_TIMEOUT",
    8: "GMPI_ERR_STATE",
    9: "GMPI_ERR_MPI",
    10: "GMPI_ERR_BACKEND",
    11: "GMPI_ERR_INTERNAL",
}

SONAME = "libgmpi.so.0"


class GmpiError(RuntimeError):
    """A gmpi call failed: .status (int), .name ("GMPI_ERR_..."), .detail (gmpi_last_error())."""

    def __init__(self, status, detail, func=None):
        self.status = int(status)
        self.name = STATUS_NAMES.get(self.status, "GMPI_STATUS_%d" % self.status)
        self.detail = detail
        self.func = func
        super().__init__("%s: %s" % (self.name, detail) if detail else self.name)


def _candidates():
    """Where libgmpi may be, in the order tried (see docs/python.md)."""
    env = os.environ.get("GMPI_LIBRARY")
    if env:
        return [env]  # an explicit choice is the only one tried
    here = os.path.dirname(os.path.abspath(__file__))
    found = []
    try:  # written by cmake --install: the library's folder relative to the package
        from . import _install

        found.append(os.path.join(here, _install.LIBDIR_FROM_PACKAGE, SONAME))
    except ImportError:
        pass
    # The source tree: python/gmpi next to the build folders (build/, build-*/).
    root = os.path.dirname(os.path.dirname(here))
    for pattern in ("build/src/" + SONAME, "build*/src/" + SONAME):
        found.extend(sorted(glob.glob(os.path.join(root, pattern))))
    found.append(SONAME)  # the system loader (LD_LIBRARY_PATH, ldconfig)
    return found


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (absent)" % path)
            continue
        try:
            # RTLD_GLOBAL: MPI's plugins (Open MPI's components) resolve libmpi's symbols globally.
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("gmpi: cannot load libgmpi; set GMPI_LIBRARY to its path. Tried: "
                      + "; ".join(tried))


lib = _load()
_c = ctypes
_P, _I, _S = _c.c_void_p, _c.c_int, _c.c_size_t
_PP = _c.POINTER(_c.c_void_p)
_PS = _c.POINTER(_c.c_size_t)


class MsgStatus(_c.Structure):
    _fields_ = [("source", _c.c_int), ("tag", _c.c_int), ("count", _c.c_size_t)]


_PST = _c.POINTER(MsgStatus)
_PROTOTYPES = {
    "gmpi_init_world": [_PP],
    "gmpi_finalize": [_PP],
    "gmpi_comm_split": [_P, _I, _I, _PP],
    "gmpi_comm_rank": [_P, _c.POINTER(_I)],
    "gmpi_comm_size": [_P, _c.POINTER(_I)],
    "gmpi_comm_backend": [_P, _c.POINTER(_I)],
    "gmpi_comm_device": [_P, _c.POINTER(_I)],
    "gmpi_dtype_from_name": [_c.c_char_p, _c.POINTER(_I)],
    "gmpi_op_from_name": [_c.c_char_p, _c.POINTER(_I)],
    "gmpi_allreduce": [_P, _P, _S, _I, _I, _P],
    "gmpi_bcast": [_P, _S, _I, _I, _P],
    "gmpi_reduce": [_P, _P, _S, _I, _I, _I, _P],
    "gmpi_allgather": [_P, _P, _S, _I, _P],
    "gmpi_reduce_scatter": [_P, _P, _S, _I, _I, _P],
    "gmpi_alltoall": [_P, _P, _S, _I, _P],
    "gmpi_barrier": [_P],
    "gmpi_send": [_P, _S, _I, _I, _I, _P],
    "gmpi_recv": [_P, _S, _I, _I, _I, _P, _PST],
    "gmpi_isend": [_P, _S, _I, _I, _I, _P, _PP],
    "gmpi_irecv": [_P, _S, _I, _I, _I, _P, _PP],
    "gmpi_wait": [_PP, _PST],
    "gmpi_waitall": [_I, _PP, _PST],
    "gmpi_test": [_PP, _c.POINTER(_I), _PST],
    "gmpi_sendrecv": [_P, _S, _I, _I, _I, _P, _S, _I, _I, _I, _P, _PST],
    "gmpi_gather": [_P, _P, _S, _I, _I, _P],
    "gmpi_scatter": [_P, _P, _S, _I, _I, _P],
    "gmpi_allgatherv": [_P, _S, _P, _PS, _PS, _I, _P],
    "gmpi_gatherv": [_P, _S, _P, _PS, _PS, _I, _I, _P],
    "gmpi_scatterv": [_P, _PS, _PS, _P, _S, _I, _I, _P],
    "gmpi_alltoallv": [_P, _PS, _PS, _P, _PS, _PS, _I, _P],
    "gmpi_reduce_scatterv": [_P, _P, _PS, _I, _I, _P],
    "gmpi_iallreduce": [_P, _P, _S, _I, _I, _P, _PP],
    "gmpi_ibcast": [_P, _S, _I, _I, _P, _PP],
    "gmpi_ibarrier": [_P, _PP],
    "gmpi_iallgather": [_P, _P, _S, _I, _P, _PP],
    "gmpi_ialltoall": [_P, _P, _S, _I, _P, _PP],
    "gmpi_probe": [_I, _I, _P, _PST],
    "gmpi_iprobe": [_I, _I, _P, _c.POINTER(_I), _PST],
    "gmpi_waitany": [_I, _PP, _c.POINTER(_I), _PST],
    "gmpi_testall": [_I, _PP, _c.POINTER(_I), _PST],
    "gmpi_comm_dup": [_P, _PP],
    "gmpi_comm_free": [_PP],
    "gmpi_plan_begin": [_P],
    "gmpi_plan_end": [_P, _PP],
    "gmpi_plan_run": [_P],
    "gmpi_plan_free": [_PP],
    # synchronous sends and the rest of the nonblocking collectives (python/gmpi/_started.py)
    "gmpi_ssend": [_P, _S, _I, _I, _I, _P],
    "gmpi_issend": [_P, _S, _I, _I, _I, _P, _PP],
    "gmpi_ireduce": [_P, _P, _S, _I, _I, _I, _P, _PP],
    "gmpi_ireduce_scatter": [_P, _P, _S, _I, _I, _P, _PP],
    "gmpi_igather": [_P, _P, _S, _I, _I, _P, _PP],
    "gmpi_iscatter": [_P, _P, _S, _I, _I, _P, _PP],
    "gmpi_iallgatherv": [_P, _S, _P, _PS, _PS, _I, _P, _PP],
    "gmpi_igatherv": [_P, _S, _P, _PS, _PS, _I, _I, _P, _PP],
    "gmpi_iscatterv": [_P, _PS, _PS, _P, _S, _I, _I, _P, _PP],
    "gmpi_ialltoallv": [_P, _PS, _PS, _P, _PS, _PS, _I, _P, _PP],
}
for _name, _args in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.argtypes, _f.restype = _args, _c.c_int
lib.gmpi_last_error.argtypes, lib.gmpi_last_error.restype = [], _c.c_char_p
lib.gmpi_strerror.argtypes, lib.gmpi_strerror.restype = [_c.c_int], _c.c_char_p
lib.gmpi_dtype_name.argtypes, lib.gmpi_dtype_name.restype = [_c.c_int], _c.c_char_p
lib.gmpi_versions.argtypes = [_c.POINTER(_c.c_char_p)] * 3
lib.gmpi_versions.restype = _c.c_int


def last_error():
    """gmpi_last_error(): this thread's last failure, "" if none."""
    return (lib.gmpi_last_error() or b"").decode(errors="replace")


failed_comm = False  # a call timed out or met a failed comm: MPI_Finalize is skipped at exit

# Parameter names of the C calls whose integer arguments Python passes as given (ranks, roots,
# tags, counts): the check below names them. Others are named by position.
_PARAM_NAMES = {
    "gmpi_comm_split": "comm color key newcomm",
    "gmpi_bcast": "buf count dtype root comm",
    "gmpi_ibcast": "buf count dtype root comm request",
    "gmpi_reduce": "sendbuf recvbuf count dtype op root comm",
    "gmpi_gather": "sendbuf recvbuf count dtype root comm",
    "gmpi_scatter": "sendbuf recvbuf count dtype root comm",
    "gmpi_gatherv": "sendbuf sendcount recvbuf recvcounts displs dtype root comm",
    "gmpi_scatterv": "sendbuf sendcounts displs recvbuf recvcount dtype root comm",
    "gmpi_send": "buf count dtype dest tag comm",
    "gmpi_recv": "buf count dtype source tag comm status",
    "gmpi_isend": "buf count dtype dest tag comm request",
    "gmpi_irecv": "buf count dtype source tag comm request",
    "gmpi_sendrecv": "sendbuf sendcount sendtype dest sendtag recvbuf recvcount recvtype "
                     "source recvtag comm status",
    "gmpi_probe": "source tag comm status",
    "gmpi_iprobe": "source tag comm flag status",
}
_INT_RANGE = {_I: (-2 ** 31, 2 ** 31 - 1, "a C int"), _S: (0, 2 ** 64 - 1, "a C size_t")}


def _param(name, i):
    names = _PARAM_NAMES.get(name, "").split()
    return "'%s'" % names[i] if i < len(names) else "%d" % (i + 1)


def as_integer(value, what):
    """An integer argument (rank, root, tag, count): an int (numpy's too), never a float, a
    bool or a string -- those are GmpiError(GMPI_ERR_INVALID_ARG), not silently converted."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise GmpiError(1, "argument %s = %r is not an integer (%s)"
                        % (what, value, type(value).__name__))
    return int(value)


def as_counts(values, what):
    """A list of counts or displacements: integers, each checked by as_integer."""
    try:
        items = list(values)
    except TypeError:
        raise GmpiError(1, "argument %s = %r is not a list of integers" % (what, values)) from None
    return [as_integer(v, "%s[%d]" % (what, i)) for i, v in enumerate(items)]


def _check_integers(name, args):
    """Integers must fit their C type: ctypes would wrap 2**32 + 1 to 1 without a word."""
    for i, (value, ctype) in enumerate(zip(args, getattr(lib, name).argtypes or ())):
        if ctype not in _INT_RANGE:
            continue
        lo, hi, cname = _INT_RANGE[ctype]
        value = as_integer(value, "%s of %s" % (_param(name, i), name))
        if not lo <= value <= hi:
            raise GmpiError(1, "%s: argument %s = %d does not fit %s (%d .. %d)"
                            % (name, _param(name, i), value, cname, lo, hi), name)


def call(name, *args):
    """Call gmpi_<name>; raise GmpiError carrying gmpi_last_error() on failure. Arguments that
    ctypes cannot convert are GmpiError(GMPI_ERR_INVALID_ARG) too."""
    _check_integers(name, args)
    try:
        status = getattr(lib, name)(*args)
    except ctypes.ArgumentError as e:
        raise GmpiError(1, "%s: %s" % (name, e), name) from None
    if status != 0:
        if status in (7, 8):  # GMPI_ERR_TIMEOUT, GMPI_ERR_STATE: a peer may be gone
            global failed_comm
            failed_comm = True
        raise GmpiError(status, last_error(), name)


def guard_arguments(cls):
    """Make every public method of cls raise GmpiError(GMPI_ERR_INVALID_ARG) for arguments of a
    wrong type (what escaped as TypeError, ValueError, AttributeError or OverflowError from
    Python's own conversions), so that callers catch one exception type. Returns cls."""
    for attr, f in list(vars(cls).items()):
        if attr.startswith("_") or isinstance(f, classmethod):
            continue
        if isinstance(f, staticmethod):  # Request.Waitall and friends: guarded the same way
            setattr(cls, attr, staticmethod(_guarded(f.__func__)))
        elif callable(f):
            setattr(cls, attr, _guarded(f))
    return cls


def _guarded(f):
    @functools.wraps(f)
    def guarded(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except (TypeError, ValueError, AttributeError, OverflowError) as e:
            raise GmpiError(1, "%s: bad argument: %s" % (f.__qualname__, e)) from e

    return guarded


def check_arg(ok, detail):
    """A bad argument seen in Python: the same error the C library gives for one."""
    if not ok:
        raise GmpiError(1, detail)


def dtype_from_name(name):
    out = ctypes.c_int(-1)
    call("gmpi_dtype_from_name", name.encode(), ctypes.byref(out))
    return out.value


def op_from_name(name):
    out = ctypes.c_int(-1)
    call("gmpi_op_from_name", name.encode(), ctypes.byref(out))
    return out.value


def versions():
    g, m, n = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p()
    call("gmpi_versions", ctypes.byref(g), ctypes.byref(m), ctypes.byref(n))
    return tuple(v.value.decode(errors="replace") for v in (g, m, n))
