# SPDX-License-Identifier: BSD-3-Clause
"""Calls beyond the first set: synchronous sends, the nonblocking forms of every collective
the C API has, and MPI's lifetime as the package sees it.

The nonblocking collectives reuse their blocking method's argument handling (buffers, counts,
layouts, IN_PLACE, every check) instead of repeating it: while the blocking method runs, its
one C call gmpi_<name> is made as gmpi_i<name> with a request, and the buffers and count
arrays it passed are kept alive by the Request until it completes."""
import ctypes

from . import _lib

MPI_THREAD_SERIALIZED = 2  # the same value in Open MPI's and MPICH's mpi.h
_started_mpi = []  # [True] once this package called MPI_Init_thread


def start_mpi():
    """MPI_Init_thread here, when MPI is not running yet, so that MPI outlives every gmpi comm:
    gmpi_finalize of the world comm (Comm.Free) then leaves MPI running (gmpi finalizes MPI
    only when it started it), and gmpi.init() may be called again. MPI ends at exit
    (finalize_mpi)."""
    flag = ctypes.c_int(0)
    _lib.lib.MPI_Initialized(ctypes.byref(flag))
    if flag.value:
        return
    provided = ctypes.c_int(0)
    rc = _lib.lib.MPI_Init_thread(None, None, MPI_THREAD_SERIALIZED, ctypes.byref(provided))
    if rc != 0:
        raise _lib.GmpiError(9, "MPI_Init_thread failed with MPI error %d" % rc, "gmpi.init")
    _started_mpi.append(True)


def finalize_mpi():
    """At exit, after every comm was freed: MPI_Finalize if this package started MPI and no
    call failed with a timeout or a failed comm (MPI_Finalize could then wait forever for a
    rank that is gone, as gmpi's own finalize knows)."""
    if not _started_mpi or _lib.failed_comm:
        return
    flag = ctypes.c_int(0)
    _lib.lib.MPI_Finalized(ctypes.byref(flag))
    if not flag.value:
        _lib.lib.MPI_Finalize()
    del _started_mpi[:]


class _Started:
    """While a blocking method of comm runs: its C call gmpi_<name> is made as gmpi_i<name>,
    and every buffer and argument it passed is collected for the Request."""

    def __init__(self, comm, module):
        self.comm, self.module, self.keep, self.handle = comm, module, [], None

    def _call(self, name, *args):
        check = _lib.check_arg
        check(self.handle is None, "internal: two C calls in one nonblocking collective")
        self.handle = ctypes.c_void_p()
        _lib.call("gmpi_i" + name[len("gmpi_"):], *args, ctypes.byref(self.handle))
        self.keep.extend(args)  # counts and displacement arrays must outlive the call

    def _bufs(self, *pairs):
        out = type(self.comm)._bufs(self.comm, *pairs)
        self.keep.extend(out)
        return out

    def run(self, method, *args, **kw):
        real_call = self.module.call
        self.module.call = self._call
        self.comm._bufs = self._bufs  # the instance's, until the method returns
        try:
            method(self.comm, *args, **kw)
        finally:
            self.module.call = real_call
            del self.comm._bufs
        return self.module.Request(self.comm, self.handle, tuple(self.keep))


class MoreCalls:
    """Mixed into Comm."""

    def _start(self, method, *args, **kw):
        from . import _comm

        return _Started(self, _comm).run(method, *args, **kw)

    # ---- synchronous sends: complete once a receive matched them, whatever the size ----
    def Ssend(self, buf, dest, tag=0):
        (b,) = self._bufs((buf, "buf", False))
        _lib.call("gmpi_ssend", b.ptr, b.count, b.dtype, dest, tag, self._h())

    def Issend(self, buf, dest, tag=0):
        from ._comm import Request

        (b,) = self._bufs((buf, "buf", False))
        h = ctypes.c_void_p()
        _lib.call("gmpi_issend", b.ptr, b.count, b.dtype, dest, tag, self._h(), ctypes.byref(h))
        return Request(self, h, (b,))

    # ---- nonblocking collectives: the blocking method's arguments, a Request back ----------
    def Ireduce(self, sendbuf, recvbuf, op=None, root=0):
        return self._start(type(self).Reduce, sendbuf, recvbuf, op, root)

    def Ireduce_scatter_block(self, sendbuf, recvbuf, op=None):
        return self._start(type(self).Reduce_scatter_block, sendbuf, recvbuf, op)

    def Ireduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=None):
        """Equal blocks only (recvcounts None or all equal): the C API has no
        ireduce_scatterv."""
        if recvcounts is not None:
            counts = [int(c) for c in recvcounts]
            _lib.check_arg(len(set(counts)) <= 1, "argument 'recvcounts': Ireduce_scatter takes "
                           "equal blocks only (there is no nonblocking reduce_scatterv); use "
                           "Reduce_scatter")
        return self._start(type(self).Reduce_scatter_block, sendbuf, recvbuf, op)

    def Igather(self, sendbuf, recvbuf, root=0):
        return self._start(type(self).Gather, sendbuf, recvbuf, root)

    def Iscatter(self, sendbuf, recvbuf, root=0):
        return self._start(type(self).Scatter, sendbuf, recvbuf, root)

    def Iallgatherv(self, sendbuf, recvbuf):
        return self._start(type(self).Allgatherv, sendbuf, recvbuf)

    def Igatherv(self, sendbuf, recvbuf, root=0):
        return self._start(type(self).Gatherv, sendbuf, recvbuf, root)

    def Iscatterv(self, sendbuf, recvbuf, root=0):
        return self._start(type(self).Scatterv, sendbuf, recvbuf, root)

    def Ialltoallv(self, sendbuf, recvbuf):
        return self._start(type(self).Alltoallv, sendbuf, recvbuf)
