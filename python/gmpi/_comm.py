# SPDX-License-Identifier: BSD-3-Clause
"""Communicators, requests, statuses and plans, named as mpi4py's buffer methods."""
import atexit
import ctypes

from ._buffer import as_buffer, sync_producer
from ._lib import GmpiError, MsgStatus, as_counts, call, check_arg, guard_arguments, op_from_name
from ._more import MoreCalls, finalize_mpi, start_mpi

ANY_SOURCE = -1
ANY_TAG = -1
UNDEFINED = -32766  # GMPI_UNDEFINED: Split color for "join no new communicator"
PROC_NULL = -2  # GMPI_PROC_NULL: a peer that is no one (transfers complete at once)


class _InPlace:
    def __repr__(self):
        return "gmpi.IN_PLACE"


IN_PLACE = _InPlace()

_BACKENDS = {0: "cpu", 1: "cuda"}
# Every live Comm, oldest first: freed newest first at exit. Held strongly: dropping a Comm
# must not free it (gmpi_finalize is collective, and a garbage collector runs at no agreed time).
_live = []


class Op(int):
    """A reduction (gmpi.SUM, ...): the int value of gmpi_op_t, with its name."""

    def __new__(cls, name):
        op = int.__new__(cls, op_from_name(name))
        op.name = name
        return op

    def __repr__(self):
        return "gmpi.%s" % self.name.upper()


class Status:
    """What a receive matched: source, tag and count (elements received)."""

    def __init__(self):
        self.source, self.tag, self.count = ANY_SOURCE, ANY_TAG, 0

    def _set(self, c):
        self.source, self.tag, self.count = c.source, c.tag, c.count

    def Get_source(self):
        return self.source

    def Get_tag(self):
        return self.tag

    def Get_count(self):
        return self.count

    def __repr__(self):
        return "gmpi.Status(source=%d, tag=%d, count=%d)" % (self.source, self.tag, self.count)


def _fill(status, c_status):
    if status is not None:
        status._set(c_status)


def _receive(filled, name, *args):
    """call(name, *args), then each (Status or None, MsgStatus) pair in filled copied -- also
    when the call raises GMPI_ERR_TRUNCATE, whose status names the message that overflowed (its
    source and tag, count 0), as MPI's does."""
    try:
        call(name, *args)
    except GmpiError as e:
        if e.name == "GMPI_ERR_TRUNCATE":
            for status, c in filled:
                _fill(status, c)
        raise
    for status, c in filled:
        _fill(status, c)


def _status_arg(status, name="status"):
    """A status argument: None or a gmpi.Status, checked before the call (a receive must not
    take a message and then fail on what it was to fill)."""
    check_arg(status is None or isinstance(status, Status),
              "argument '%s' is a %s, not a gmpi.Status or None" % (name, type(status).__name__))
    return status


def _statuses_arg(statuses):
    """None, or a list of gmpi.Status (one per request)."""
    if statuses is None:
        return None
    check_arg(isinstance(statuses, (list, tuple)),
              "argument 'statuses' is a %s, not a list of gmpi.Status" % type(statuses).__name__)
    for i, st in enumerate(statuses):
        _status_arg(st, "statuses[%d]" % i)
    return statuses


def _requests_arg(requests):
    """A list of gmpi.Request, each checked (anything else names its index)."""
    check_arg(not isinstance(requests, (str, bytes)) and hasattr(requests, "__iter__"),
              "argument 'requests' is a %s, not a list of gmpi.Request"
              % type(requests).__name__)
    requests = list(requests)
    for i, r in enumerate(requests):
        check_arg(isinstance(r, Request), "argument 'requests[%d]' is a %s, not a gmpi.Request"
                  % (i, type(r).__name__))
    return requests


@guard_arguments
class Request:
    """A pending Isend/Irecv. Its buffers stay alive (held by the comm too) until it completes."""

    def __init__(self, comm, handle, bufs):
        self._comm, self._handle, self._bufs = comm, handle, bufs
        comm._pending.add(self)

    def _done(self):
        self._comm._pending.discard(self)
        self._bufs = ()

    def Wait(self, status=None):
        _status_arg(status)
        c = MsgStatus()
        try:
            _receive([(status, c)], "gmpi_wait", ctypes.byref(self._handle), ctypes.byref(c))
        finally:  # ended, failed or not, once gmpi set the handle NULL (a truncation's is)
            if not self._handle.value:
                self._done()
        return True

    def Test(self, status=None):
        """True (and the request complete) when done; False while still pending."""
        _status_arg(status)
        if not self._handle:
            return True
        c, flag = MsgStatus(), ctypes.c_int(0)
        call("gmpi_test", ctypes.byref(self._handle), ctypes.byref(flag), ctypes.byref(c))
        if flag.value:
            self._done()
            _fill(status, c)
        return bool(flag.value)

    @staticmethod
    def _array(requests):
        n = len(requests)
        return n, (ctypes.c_void_p * max(n, 1))(*[r._handle for r in requests])

    @staticmethod
    def _settle(requests, handles):
        for r, h in zip(requests, handles):
            r._handle = ctypes.c_void_p(h)
            if not h:
                r._done()

    @staticmethod
    def Waitany(requests, status=None):
        """The index of a request that completed (now done), or gmpi.UNDEFINED if none pending."""
        requests = _requests_arg(requests)
        _status_arg(status)
        n, handles = Request._array(requests)
        c, index = MsgStatus(), ctypes.c_int(UNDEFINED)
        try:
            call("gmpi_waitany", n, handles, ctypes.byref(index), ctypes.byref(c))
        finally:
            Request._settle(requests, handles)
        _fill(status, c)
        return index.value

    @staticmethod
    def Testall(requests, statuses=None):
        """True once every request is complete (all then done); False touches none."""
        requests = _requests_arg(requests)
        _statuses_arg(statuses)
        n, handles = Request._array(requests)
        cs, flag = (MsgStatus * max(n, 1))(), ctypes.c_int(0)
        try:
            call("gmpi_testall", n, handles, ctypes.byref(flag), cs)
        finally:
            Request._settle(requests, handles)
        if flag.value and statuses is not None:
            for st, c in zip(statuses, cs):
                _fill(st, c)
        return bool(flag.value)

    @staticmethod
    def Waitall(requests, statuses=None):
        requests = _requests_arg(requests)
        _statuses_arg(statuses)
        n = len(requests)
        handles = (ctypes.c_void_p * max(n, 1))(*[r._handle for r in requests])
        cs = (MsgStatus * max(n, 1))()
        try:
            _receive(list(zip(statuses or [], cs)), "gmpi_waitall", n, handles, cs)
        finally:  # completed ones are NULL in handles, failed or not
            for r, h in zip(requests, handles):
                r._handle = ctypes.c_void_p(h)
                if not h:
                    r._done()
        return True


@guard_arguments
class Plan:
    """A recorded communication pattern (see docs/plans.md): run() replays it."""

    def __init__(self, comm):
        self._comm, self._handle, self._bufs = comm, ctypes.c_void_p(), []

    def __enter__(self):
        check_arg(self._comm._recording is None, "a plan is already recording on this comm")
        call("gmpi_plan_begin", self._comm._handle)
        self._comm._recording = self._bufs
        return self

    def __exit__(self, kind, value, tb):
        self._comm._recording = None
        try:
            call("gmpi_plan_end", self._comm._handle, ctypes.byref(self._handle))
        except Exception:
            if kind is None:
                raise  # the plan itself was refused
        if kind is not None:  # the body failed: no plan, its own error goes up
            self.Free()
        return False

    def run(self):
        check_arg(bool(self._handle), "the plan is not recorded (or freed)")
        sync_producer(self._bufs)
        call("gmpi_plan_run", self._handle)

    def Free(self):
        if self._handle:
            call("gmpi_plan_free", ctypes.byref(self._handle))
        self._bufs = []

    free = Free


@guard_arguments
class Comm(MoreCalls):
    """A gmpi communicator (gmpi_comm_t). Methods follow mpi4py's upper-case buffer methods."""

    def __init__(self, handle, from_init=False):
        self._handle = handle
        self._from_init = from_init  # made by gmpi_init: ended by gmpi_finalize, not comm_free
        self._pending = set()
        self._recording = None
        r, s, b = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        call("gmpi_comm_rank", handle, ctypes.byref(r))
        call("gmpi_comm_size", handle, ctypes.byref(s))
        call("gmpi_comm_backend", handle, ctypes.byref(b))
        self.rank, self.size, self.backend = r.value, s.value, _BACKENDS.get(b.value, "?")
        _live.append(self)

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    @property
    def device(self):
        """CUDA device ordinal of this rank; -1 on the cpu backend."""
        d = ctypes.c_int()
        call("gmpi_comm_device", self._h(), ctypes.byref(d))
        return d.value

    def _h(self):
        check_arg(self._handle is not None and bool(self._handle),
                  "the communicator was freed (Free())")
        return self._handle

    def _bufs(self, *pairs):
        """Buffers of (object, name, writable) triples; device ones need the cuda backend."""
        out = []
        for obj, name, writable in pairs:
            b = as_buffer(obj, name, writable)
            check_arg(not b.device or self.backend == "cuda",
                      "argument '%s' is device memory, and this comm's backend is %s"
                      % (name, self.backend))
            out.append(b)
        sync_producer(out)
        if self._recording is not None:
            self._recording.extend(out)
        return out

    # ---- collectives ---------------------------------------------------------------------
    def Allreduce(self, sendbuf, recvbuf, op=None):
        op = SUM if op is None else op
        (r,) = self._bufs((recvbuf, "recvbuf", True))
        s = r if sendbuf is IN_PLACE else self._bufs((sendbuf, "sendbuf", False))[0]
        self._same(s, r, "sendbuf", "recvbuf")
        call("gmpi_allreduce", s.ptr, r.ptr, r.count, r.dtype, int(op), self._h())

    def Bcast(self, buf, root=0):
        (b,) = self._bufs((buf, "buf", True))
        call("gmpi_bcast", b.ptr, b.count, b.dtype, root, self._h())

    def Reduce(self, sendbuf, recvbuf, op=None, root=0):
        """recvbuf matters on root only; elsewhere it may be None."""
        op = SUM if op is None else op
        if recvbuf is None:
            (s,) = self._bufs((sendbuf, "sendbuf", False))
            r = s
            check_arg(self.rank != root, "argument 'recvbuf' is None on the root")
        else:
            (r,) = self._bufs((recvbuf, "recvbuf", True))
            s = r if sendbuf is IN_PLACE else self._bufs((sendbuf, "sendbuf", False))[0]
            self._same(s, r, "sendbuf", "recvbuf")
        call("gmpi_reduce", s.ptr, r.ptr, s.count, s.dtype, int(op), root, self._h())

    def Allgather(self, sendbuf, recvbuf):
        """recvbuf holds size blocks of sendbuf's count; IN_PLACE: this rank's block is there."""
        (r,) = self._bufs((recvbuf, "recvbuf", True))
        n = self._blocks(r, "recvbuf")
        s = r if sendbuf is IN_PLACE else self._bufs((sendbuf, "sendbuf", False))[0]
        if s is not r:
            self._dtype(s, r, "sendbuf", "recvbuf")
            check_arg(s.count == n, "argument 'recvbuf' holds %d elements, not size (%d) x "
                      "sendbuf's %d" % (r.count, self.size, s.count))
        call("gmpi_allgather", s.ptr, r.ptr, n, r.dtype, self._h())

    def Alltoall(self, sendbuf, recvbuf):
        (r,) = self._bufs((recvbuf, "recvbuf", True))
        s = r if sendbuf is IN_PLACE else self._bufs((sendbuf, "sendbuf", False))[0]
        self._same(s, r, "sendbuf", "recvbuf")
        call("gmpi_alltoall", s.ptr, r.ptr, self._blocks(r, "recvbuf"), r.dtype, self._h())

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=None):
        """Block i of sendbuf's reduction goes to rank i's recvbuf (sendbuf: size x recvbuf)."""
        op = SUM if op is None else op
        (r,) = self._bufs((recvbuf, "recvbuf", True))
        if sendbuf is IN_PLACE:  # MPI's convention: the whole input in recvbuf, result at start
            s, n = r, self._blocks(r, "recvbuf")
        else:
            (s,) = self._bufs((sendbuf, "sendbuf", False))
            self._dtype(s, r, "sendbuf", "recvbuf")
            n = r.count
            check_arg(s.count == n * self.size, "argument 'sendbuf' holds %d elements, not "
                      "size (%d) x recvbuf's %d" % (s.count, self.size, n))
        call("gmpi_reduce_scatter", s.ptr, r.ptr, n, r.dtype, int(op), self._h())

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=None):
        """Rank i gets the reduction of block i (recvcounts[i] elements, blocks back to back);
        without recvcounts, equal blocks (Reduce_scatter_block)."""
        if recvcounts is None:
            return self.Reduce_scatter_block(sendbuf, recvbuf, op)
        op = SUM if op is None else op
        counts = as_counts(recvcounts, "'recvcounts'")
        check_arg(len(counts) == self.size, "argument 'recvcounts' has %d counts for %d ranks"
                  % (len(counts), self.size))
        (r,) = self._bufs((recvbuf, "recvbuf", True))
        if sendbuf is IN_PLACE:  # the whole input in recvbuf, result at the start
            s = r
        else:
            (s,) = self._bufs((sendbuf, "sendbuf", False))
            self._dtype(s, r, "sendbuf", "recvbuf")
        check_arg(s.count >= sum(counts), "argument 'sendbuf' holds %d elements, the counts "
                  "sum to %d" % (s.count, sum(counts)))
        check_arg(r.count >= counts[self.rank], "argument 'recvbuf' holds %d elements, not %d"
                  % (r.count, counts[self.rank]))
        call("gmpi_reduce_scatterv", s.ptr, r.ptr, (ctypes.c_size_t * self.size)(*counts),
             r.dtype, int(op), self._h())

    def Barrier(self):
        call("gmpi_barrier", self._h())

    def _rooted(self, whole, whole_name, part, part_name, gathers):
        """At the root of Gather/Scatter: the buffer of size blocks, this rank's part (IN_PLACE:
        already inside the whole) and the block's count."""
        (w,) = self._bufs((whole, whole_name, gathers))
        n = self._blocks(w, whole_name)
        p = w if part is IN_PLACE else self._bufs((part, part_name, not gathers))[0]
        if p is not w:
            self._dtype(p, w, part_name, whole_name)
            check_arg(p.count == n, "argument '%s' holds %d elements, not size (%d) x %s's %d"
                      % (whole_name, w.count, self.size, part_name, p.count))
        return w, p, n

    def Gather(self, sendbuf, recvbuf, root=0):
        """recvbuf (root only; None elsewhere) holds size blocks of sendbuf's count."""
        if self.rank == root:
            r, s, n = self._rooted(recvbuf, "recvbuf", sendbuf, "sendbuf", True)
            call("gmpi_gather", s.ptr, r.ptr, n, r.dtype, root, self._h())
        else:
            (s,) = self._bufs((sendbuf, "sendbuf", False))
            call("gmpi_gather", s.ptr, None, s.count, s.dtype, root, self._h())

    def Scatter(self, sendbuf, recvbuf, root=0):
        """sendbuf (root only; None elsewhere) holds size blocks of recvbuf's count."""
        if self.rank == root:
            s, r, n = self._rooted(sendbuf, "sendbuf", recvbuf, "recvbuf", False)
            call("gmpi_scatter", s.ptr, r.ptr, n, s.dtype, root, self._h())
        else:
            (r,) = self._bufs((recvbuf, "recvbuf", True))
            call("gmpi_scatter", None, r.ptr, r.count, r.dtype, root, self._h())

    # v-variants: a buffer with per-rank layout is given as [array, counts] or
    # [array, counts, displs] (elements; displs default to the counts back to back), as mpi4py.
    def _layout(self, spec, name, writable):
        check_arg(isinstance(spec, (list, tuple)) and len(spec) in (2, 3),
                  "argument '%s' must be [array, counts] or [array, counts, displs]" % name)
        (b,) = self._bufs((spec[0], name, writable))
        counts = as_counts(spec[1], "'%s' counts" % name)
        check_arg(len(counts) == self.size, "argument '%s' has %d counts for %d ranks"
                  % (name, len(counts), self.size))
        if len(spec) == 3 and spec[2] is not None:
            displs = as_counts(spec[2], "'%s' displs" % name)
        else:
            displs = [sum(counts[:r]) for r in range(self.size)]
        check_arg(len(displs) == self.size, "argument '%s' has %d displacements for %d ranks"
                  % (name, len(displs), self.size))
        end = max([d + c for d, c in zip(displs, counts) if c] or [0])
        check_arg(end <= b.count, "argument '%s': its layout needs %d elements, the array holds %d"
                  % (name, end, b.count))
        size_t = ctypes.c_size_t * self.size
        return b, size_t(*counts), size_t(*displs)

    def _own_block(self, whole, counts, part, part_name, writable):
        """This rank's block beside a laid-out buffer: IN_PLACE (inside it) or an array of its
        own; the buffer and its element count."""
        if part is IN_PLACE:
            return whole, counts[self.rank]
        (p,) = self._bufs((part, part_name, writable))
        self._dtype(p, whole, part_name, "the laid-out buffer")
        return p, p.count

    def Allgatherv(self, sendbuf, recvbuf):
        """recvbuf: [array, counts(, displs)]; sendbuf an array, or IN_PLACE."""
        r, counts, displs = self._layout(recvbuf, "recvbuf", True)
        s, n = self._own_block(r, counts, sendbuf, "sendbuf", False)
        call("gmpi_allgatherv", s.ptr, n, r.ptr, counts, displs, r.dtype, self._h())

    def Gatherv(self, sendbuf, recvbuf, root=0):
        """recvbuf (root only): [array, counts(, displs)]; None elsewhere."""
        if self.rank == root:
            r, counts, displs = self._layout(recvbuf, "recvbuf", True)
            s, n = self._own_block(r, counts, sendbuf, "sendbuf", False)
            call("gmpi_gatherv", s.ptr, n, r.ptr, counts, displs, r.dtype, root, self._h())
        else:
            (s,) = self._bufs((sendbuf, "sendbuf", False))
            call("gmpi_gatherv", s.ptr, s.count, None, None, None, s.dtype, root, self._h())

    def Scatterv(self, sendbuf, recvbuf, root=0):
        """sendbuf (root only): [array, counts(, displs)]; None elsewhere."""
        if self.rank == root:
            s, counts, displs = self._layout(sendbuf, "sendbuf", False)
            r, n = self._own_block(s, counts, recvbuf, "recvbuf", True)
            call("gmpi_scatterv", s.ptr, counts, displs, r.ptr, n, s.dtype, root, self._h())
        else:
            (r,) = self._bufs((recvbuf, "recvbuf", True))
            call("gmpi_scatterv", None, None, None, r.ptr, r.count, r.dtype, root, self._h())

    def Alltoallv(self, sendbuf, recvbuf):
        """sendbuf and recvbuf: [array, counts(, displs)]; sendbuf IN_PLACE uses recvbuf's."""
        r, rc, rd = self._layout(recvbuf, "recvbuf", True)
        if sendbuf is IN_PLACE:
            call("gmpi_alltoallv", r.ptr, None, None, r.ptr, rc, rd, r.dtype, self._h())
            return
        s, sc, sd = self._layout(sendbuf, "sendbuf", False)
        self._dtype(s, r, "sendbuf", "recvbuf")
        call("gmpi_alltoallv", s.ptr, sc, sd, r.ptr, rc, rd, r.dtype, self._h())

    # ---- nonblocking collectives: a Request, completed by Wait/Test/Waitall/Waitany ----------
    def _started(self, name, bufs, *args):
        h = ctypes.c_void_p()
        call(name, *args, self._h(), ctypes.byref(h))
        return Request(self, h, tuple(bufs))

    def Iallreduce(self, sendbuf, recvbuf, op=None):
        op = SUM if op is None else op
        (r,) = self._bufs((recvbuf, "recvbuf", True))
        s = r if sendbuf is IN_PLACE else self._bufs((sendbuf, "sendbuf", False))[0]
        self._same(s, r, "sendbuf", "recvbuf")
        return self._started("gmpi_iallreduce", (s, r), s.ptr, r.ptr, r.count, r.dtype, int(op))

    def Ibcast(self, buf, root=0):
        (b,) = self._bufs((buf, "buf", True))
        return self._started("gmpi_ibcast", (b,), b.ptr, b.count, b.dtype, root)

    def Ibarrier(self):
        return self._started("gmpi_ibarrier", ())

    def Iallgather(self, sendbuf, recvbuf):
        (r,) = self._bufs((recvbuf, "recvbuf", True))
        n = self._blocks(r, "recvbuf")
        s = r if sendbuf is IN_PLACE else self._bufs((sendbuf, "sendbuf", False))[0]
        if s is not r:
            self._dtype(s, r, "sendbuf", "recvbuf")
            check_arg(s.count == n, "argument 'recvbuf' holds %d elements, not size (%d) x "
                      "sendbuf's %d" % (r.count, self.size, s.count))
        return self._started("gmpi_iallgather", (s, r), s.ptr, r.ptr, n, r.dtype)

    def Ialltoall(self, sendbuf, recvbuf):
        (r,) = self._bufs((recvbuf, "recvbuf", True))
        s = r if sendbuf is IN_PLACE else self._bufs((sendbuf, "sendbuf", False))[0]
        self._same(s, r, "sendbuf", "recvbuf")
        return self._started("gmpi_ialltoall", (s, r), s.ptr, r.ptr, self._blocks(r, "recvbuf"),
                             r.dtype)

    # ---- point to point --------------------------------------------------------------------
    def Send(self, buf, dest, tag=0):
        (b,) = self._bufs((buf, "buf", False))
        call("gmpi_send", b.ptr, b.count, b.dtype, dest, tag, self._h())

    def Recv(self, buf, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        _status_arg(status)
        (b,) = self._bufs((buf, "buf", True))
        c = MsgStatus()
        _receive([(status, c)], "gmpi_recv", b.ptr, b.count, b.dtype, source, tag, self._h(),
                 ctypes.byref(c))

    def Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=ANY_SOURCE,
                 recvtag=ANY_TAG, status=None):
        _status_arg(status)
        s, r = self._bufs((sendbuf, "sendbuf", False), (recvbuf, "recvbuf", True))
        c = MsgStatus()
        _receive([(status, c)], "gmpi_sendrecv", s.ptr, s.count, s.dtype, dest, sendtag, r.ptr,
                 r.count, r.dtype, source, recvtag, self._h(), ctypes.byref(c))

    def Isend(self, buf, dest, tag=0):
        (b,) = self._bufs((buf, "buf", False))
        h = ctypes.c_void_p()
        call("gmpi_isend", b.ptr, b.count, b.dtype, dest, tag, self._h(), ctypes.byref(h))
        return Request(self, h, (b,))

    def Irecv(self, buf, source=ANY_SOURCE, tag=ANY_TAG):
        (b,) = self._bufs((buf, "buf", True))
        h = ctypes.c_void_p()
        call("gmpi_irecv", b.ptr, b.count, b.dtype, source, tag, self._h(), ctypes.byref(h))
        return Request(self, h, (b,))

    def Probe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Wait (bounded by GMPI_TIMEOUT) for a message; status gets its source, tag and count
        in the sender's elements. The next matching receive gets that message."""
        _status_arg(status)
        c = MsgStatus()
        call("gmpi_probe", source, tag, self._h(), ctypes.byref(c))
        _fill(status, c)
        return True

    def Iprobe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        _status_arg(status)
        c, flag = MsgStatus(), ctypes.c_int(0)
        call("gmpi_iprobe", source, tag, self._h(), ctypes.byref(flag), ctypes.byref(c))
        if flag.value:
            _fill(status, c)
        return bool(flag.value)

    # ---- communicators and plans -------------------------------------------------------------
    def Dup(self):
        """Collective: the same group, its own matching space."""
        h = ctypes.c_void_p()
        call("gmpi_comm_dup", self._h(), ctypes.byref(h))
        return Comm(h)

    def Split(self, color=0, key=0):
        """Collective; a new Comm, or None for color gmpi.UNDEFINED."""
        h = ctypes.c_void_p()
        call("gmpi_comm_split", self._h(), color, key, ctypes.byref(h))
        return Comm(h) if h else None

    def Free(self):
        """Collective: gmpi_finalize for the Comm of gmpi.init, gmpi_comm_free for those of Split
        and Dup (gmpi.h). Pending requests' buffers are released with the comm."""
        if self._handle:
            call("gmpi_finalize" if self._from_init else "gmpi_comm_free",
                 ctypes.byref(self._handle))
        self._handle = None
        self._pending.clear()
        if self in _live:
            _live.remove(self)

    def plan(self):
        """with comm.plan() as p: <calls on comm>  records them; p.run() replays; p.Free()."""
        return Plan(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.Free()
        return False

    def __repr__(self):
        state = "freed" if not self._handle else "rank %d of %d" % (self.rank, self.size)
        return "<gmpi.Comm %s, backend %s>" % (state, self.backend)

    # ---- argument checks that the C library cannot make (it sees one count) --------------------
    def _dtype(self, a, b, na, nb):
        check_arg(a.dtype == b.dtype, "arguments '%s' and '%s' have different dtypes" % (na, nb))

    def _same(self, a, b, na, nb):
        self._dtype(a, b, na, nb)
        check_arg(a.count == b.count, "argument '%s' holds %d elements and '%s' %d"
                  % (na, a.count, nb, b.count))

    def _blocks(self, b, name):
        check_arg(b.count % self.size == 0, "argument '%s' holds %d elements, not a multiple "
                  "of the size %d" % (name, b.count, self.size))
        return b.count // self.size


SUM, PROD, MIN, MAX, AVG = (Op(n) for n in ("sum", "prod", "min", "max", "avg"))
BAND, BOR, BXOR, LAND, LOR, LXOR = (Op(n) for n in ("band", "bor", "bxor", "land", "lor", "lxor"))


def init(mpi_comm=None):
    """A Comm on the world (no argument) or on an mpi4py communicator. Collective."""
    h = ctypes.c_void_p()
    if mpi_comm is None:
        start_mpi()  # MPI then outlives the world comm's Free (see _more.start_mpi)
        call("gmpi_init_world", ctypes.byref(h))
    else:
        call("gmpi_init", _mpi_handle(mpi_comm), ctypes.byref(h))
    return Comm(h, from_init=True)


def _mpi_handle(mpi_comm):
    """mpi4py's MPI_Comm handle, as the C ABI passes it (Open MPI: a pointer; MPICH: an int)."""
    from mpi4py import MPI

    check_arg(isinstance(mpi_comm, MPI.Comm), "argument 'mpi_comm' is a %s, not an mpi4py "
              "communicator" % type(mpi_comm).__name__)
    check_arg(mpi_comm != MPI.COMM_NULL, "argument 'mpi_comm' is MPI.COMM_NULL")
    handle = MPI._handleof(mpi_comm)
    from ._lib import lib

    f = lib.gmpi_init
    f.restype = ctypes.c_int
    if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p):
        f.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        return ctypes.c_void_p(handle)
    f.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    return ctypes.c_int(handle)


@atexit.register
def _free_all():
    """Free what the program left (gmpi_finalize is collective; every rank exits here too)."""
    for comm in reversed(list(_live)):
        if comm._handle:
            try:
                comm.Free()
            except Exception:  # the process is ending; the error was for a comm it dropped
                pass
    finalize_mpi()
