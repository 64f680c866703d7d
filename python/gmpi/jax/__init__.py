# SPDX-License-Identifier: BSD-3-Clause
"""gmpi.jax: MPI calls inside jax.jit, run by gmpi -- mpi4jax's functions and signatures, so that
`import gmpi.jax as mpi4jax` runs existing code unchanged, and beyond them isend/irecv/wait/
waitall inside one jitted function, ANY_SOURCE/ANY_TAG with the status filled, bfloat16 and
float16.

    import jax, jax.numpy as jnp
    from mpi4py import MPI
    import gmpi.jax as mpijax

    @jax.jit
    def step(x):
        return mpijax.allreduce(x, op=MPI.SUM)

Semantics as mpi4jax: new arrays are returned and inputs are untouched; calls run in program
order on every rank (an ordered effect); eager calls work too. `comm` is an mpi4py communicator
or a gmpi.Comm (default: a gmpi comm on the world, which like mpi4jax's clone of COMM_WORLD has
its own matching space); `op` an mpi4py MPI.Op, a gmpi.Op or a name; `status` an mpi4py
MPI.Status, filled when the receive completes. A gmpi comm is made for an mpi4py communicator
at its first use in gmpi.jax, collectively over it (gmpi.init), so the first call that uses a
communicator must be one every rank of it makes, or call gmpi.jax.comm_for(comm) on all of them
first. Differentiation where mpi4jax defines it: allreduce with SUM (its transpose is the
identity, as mpi4jax's: the loss is the same on every rank) and sendrecv (the cotangent goes
back the way the data came); vmap of allreduce. Device (cuda) arrays go to a CUDA handler
(gmpi stream-ordered on XLA's stream) when libgmpi_xla has one; that path has not run on a GPU
yet (docs/jax.md)."""
import itertools
from functools import partial

import numpy as np

import jax
import jax.numpy as jnp
from jax._src import dispatch
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from .. import _buffer as _gbuffer
from .. import _comm as _gcomm
from .. import _lib
from . import _xla

__all__ = ["allgather", "allreduce", "alltoall", "barrier", "bcast", "gather", "recv", "reduce",
           "scan", "scatter", "send", "sendrecv", "isend", "irecv", "wait", "waitall",
           "Request", "comm_for", "has_cuda_support", "ANY_SOURCE", "ANY_TAG"]

ANY_SOURCE = _gcomm.ANY_SOURCE
ANY_TAG = _gcomm.ANY_TAG


def has_cuda_support():
    """True when device (cuda) arrays lower to gmpi's CUDA handler: libgmpi_xla was built with
    the cuda backend and jax has its CUDA plugin. Not yet proven on a GPU (docs/jax.md)."""
    return _xla.CUDA


# ---- communicators, ops, dtypes, statuses -------------------------------------------------------

_default = []
_by_mpi = {}
_statuses = {}  # address -> the mpi4py Status it belongs to, kept alive: compiled code writes it


def _fraction(name, default):
    import os
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        raise _lib.GmpiError(1, "%s = %r is not a fraction" % (name, os.environ[name])) from None


def _fit_device(comm):
    """On a cuda comm: JAX's default device becomes gmpi's (local rank's) GPU, and XLA's
    preallocated pool and gmpi's reserved budget must fit on it together."""
    if comm.backend != "cuda" or not _xla.CUDA:
        return
    import os
    xla = _fraction("XLA_PYTHON_CLIENT_MEM_FRACTION", 0.75)
    if os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").lower() in ("0", "false"):
        xla = 0.0
    gmpi_reserved = (_fraction("GMPI_GPU_MEM_FRACTION", 0.75)
                     if os.environ.get("GMPI_GPU_PREALLOCATE", "0") == "1" else 0.0)
    _lib.check_arg(xla + gmpi_reserved <= 0.9, "XLA preallocates %.2f of the GPU "
                   "(XLA_PYTHON_CLIENT_MEM_FRACTION) and gmpi reserves %.2f "
                   "(GMPI_GPU_PREALLOCATE=1, GMPI_GPU_MEM_FRACTION): together over 0.9, leaving "
                   "NCCL too little; lower one of them" % (xla, gmpi_reserved))
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    mine = [d for d in gpus if d.id == comm.device]
    _lib.check_arg(bool(mine), "gmpi uses GPU %d on this rank, which JAX does not see (JAX sees "
                   "%s)" % (comm.device, [d.id for d in gpus]))
    jax.config.update("jax_default_device", mine[0])


def comm_for(comm=None):
    """The gmpi.Comm gmpi.jax uses for comm (None: the world). Collective the first time."""
    if comm is None:
        if not _default:
            _default.append(_gcomm.init())
            _fit_device(_default[0])
        return _default[0]
    if isinstance(comm, _gcomm.Comm):
        return comm
    try:
        from mpi4py import MPI
    except ImportError:
        MPI = None
    _lib.check_arg(MPI is not None and isinstance(comm, MPI.Comm),
                   "argument 'comm' is a %s, not an mpi4py communicator or a gmpi.Comm"
                   % type(comm).__name__)
    key = MPI._handleof(comm)
    if key not in _by_mpi:
        _by_mpi[key] = _gcomm.init(comm)
        _fit_device(_by_mpi[key])
    return _by_mpi[key]


def _address(comm):
    c = comm_for(comm)
    return c._h().value, c.rank, c.size


_OP_NAMES = ("sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "land", "lor", "lxor")


def _op(op):
    """gmpi's op value for an mpi4py MPI.Op, a gmpi.Op or a name."""
    if isinstance(op, _gcomm.Op):
        return int(op), op.name
    if isinstance(op, str):
        return _lib.op_from_name(op.lower()), op.lower()
    try:
        from mpi4py import MPI
        for name in _OP_NAMES:
            if name != "avg" and op == getattr(MPI, name.upper()):
                return _lib.op_from_name(name), name
    except ImportError:
        pass
    raise _lib.GmpiError(1, "argument 'op' = %r is not a reduction gmpi has (%s)"
                         % (op, ", ".join(_OP_NAMES)))


def _reduction(op, dtype):
    """gmpi's op value, refused at trace time when MPI's rules do not define op on dtype: on a
    GPU an error inside the compiled call surfaces only at a later wait, and XLA's ordered
    effects then carry it into every later call of the program."""
    op_value, name = _op(op)
    if not _lib.lib.gmpi_op_valid(_dtype(dtype), op_value):
        raise _lib.GmpiError(1, "argument 'op' = %s is not defined on dtype %s (MPI's rules)"
                             % (name, np.dtype(dtype).name))
    return op_value


def _dtype(dtype, what="the array"):
    return _gbuffer._gmpi_dtype(np.dtype(dtype).name, what)


def _status(status):
    """The address of an mpi4py Status to fill (0: none), kept alive with the program."""
    if status is None:
        return 0
    from mpi4py import MPI
    _lib.check_arg(isinstance(status, MPI.Status), "argument 'status' is a %s, not an mpi4py "
                   "MPI.Status" % type(status).__name__)
    address = MPI._addressof(status)
    _statuses[address] = status
    return address


def _int(value, name, low=-2**31, high=2**31 - 1):
    value = _lib.as_integer(value, "'%s'" % name)
    _lib.check_arg(low <= value <= high, "argument '%s' = %d is out of range [%d, %d]"
                   % (name, value, low, high))
    return value


# ---- one primitive per call, all lowered to the one FFI target ----------------------------------

def _abstract(*avals, out, ordered, **params):
    return [ShapedArray(shape, dtype) for shape, dtype in out], ({_xla.ORDERED} if ordered else
                                                                  set())


def _lowering(ctx, *operands, out, ordered, **params):
    if not ordered:  # allreduce's transpose: the identity (see the module's docstring)
        return list(operands)
    return _xla.lower(ctx, *operands, attrs=_xla.attributes(**params))


def _primitive(name):
    p = Primitive("gmpi_" + name)
    p.multiple_results = True
    p.def_impl(partial(dispatch.apply_primitive, p))
    p.def_effectful_abstract_eval(_abstract)
    mlir.register_lowering(p, _lowering, platform="cpu")
    if _xla.CUDA:
        mlir.register_lowering(p, _lowering, platform="cuda")
    return p


_p = {name: _primitive(name) for name in (
    "allreduce", "bcast", "reduce", "allgather", "alltoall", "gather", "scatter", "barrier",
    "send", "recv", "sendrecv", "isend", "irecv", "wait", "copy")}


def _out(shape, dtype):
    return ((tuple(shape), np.dtype(dtype)),)


def _array(x, name):
    x = jnp.asarray(x)
    _dtype(x.dtype, "argument '%s'" % name)  # refused here, dtype named, if gmpi cannot move it
    return x


def _copy(x):
    """A copy of x through gmpi.jax's FFI target, ordered like its MPI calls but calling no MPI:
    XLA's own cost of one such call (gmpi-jax-bench's `xlacopy` baseline). Not public."""
    x = _array(x, "x")
    (y,) = _p["copy"].bind(x, out=_out(x.shape, x.dtype), ordered=True, kind=_xla.KIND_COPY)
    return y


# ---- collectives --------------------------------------------------------------------------------

def allreduce(x, op, *, comm=None):
    """The reduction of x over every rank, on every rank."""
    x = _array(x, "x")
    address, _, _ = _address(comm)
    op_value = _reduction(op, x.dtype)
    (y,) = _p["allreduce"].bind(x, out=_out(x.shape, x.dtype), ordered=True,
                                kind=_xla.KIND_ALLREDUCE, comm=address, dtype=_dtype(x.dtype),
                                op=op_value, count=x.size)
    return y


def _allreduce_sum_only(params):
    if params["op"] != _lib.op_from_name("sum"):
        raise NotImplementedError("gmpi.jax differentiates allreduce with op SUM only, as mpi4jax")


def _allreduce_jvp(primals, tangents, **params):
    _allreduce_sum_only(params)
    (x,), (t,) = primals, tangents
    (y,) = _p["allreduce"].bind(x, **params)
    (dy,) = _p["allreduce"].bind(ad.instantiate_zeros(t), **params)
    return [y], [dy]


def _allreduce_transpose(cts, x, **params):
    _allreduce_sum_only(params)
    (ct,) = cts
    flipped = dict(params, ordered=not params["ordered"])
    return _p["allreduce"].bind(ad.instantiate_zeros(ct), **flipped)


def _allreduce_batch(args, axes, **params):
    (x,), (axis,) = args, axes
    params = dict(params, out=_out(x.shape, x.dtype), count=x.size)
    return _p["allreduce"].bind(x, **params), [axis]


ad.primitive_jvps[_p["allreduce"]] = _allreduce_jvp
ad.primitive_transposes[_p["allreduce"]] = _allreduce_transpose
batching.primitive_batchers[_p["allreduce"]] = _allreduce_batch


def bcast(x, root, *, comm=None):
    """root's x on every rank (root gets x itself back)."""
    x = _array(x, "x")
    address, rank, size = _address(comm)
    root = _int(root, "root", 0, size - 1)
    (y,) = _p["bcast"].bind(x, out=_out(x.shape, x.dtype), ordered=True, kind=_xla.KIND_BCAST,
                            comm=address, dtype=_dtype(x.dtype), count=x.size, root=root)
    return x if rank == root else y


def reduce(x, op, root, *, comm=None):
    """The reduction on root; the other ranks get x back, as in mpi4jax."""
    x = _array(x, "x")
    address, rank, size = _address(comm)
    root = _int(root, "root", 0, size - 1)
    (y,) = _p["reduce"].bind(x, out=_out(x.shape, x.dtype), ordered=True, kind=_xla.KIND_REDUCE,
                             comm=address, dtype=_dtype(x.dtype), op=_reduction(op, x.dtype), count=x.size,
                             root=root)
    return y if rank == root else x


def allgather(x, *, comm=None):
    """Every rank's x, stacked: shape (size, *x.shape)."""
    x = _array(x, "x")
    address, _, size = _address(comm)
    (y,) = _p["allgather"].bind(x, out=_out((size, *x.shape), x.dtype), ordered=True,
                                kind=_xla.KIND_ALLGATHER, comm=address, dtype=_dtype(x.dtype),
                                count=x.size)
    return y


def alltoall(x, *, comm=None):
    """x[i] goes to rank i; row i of the result came from rank i. x.shape[0] must be the size."""
    x = _array(x, "x")
    address, _, size = _address(comm)
    _lib.check_arg(x.ndim >= 1 and x.shape[0] == size, "alltoall: argument 'x' has shape %s; its "
                   "first axis must be the communicator's size %d" % (x.shape, size))
    (y,) = _p["alltoall"].bind(x, out=_out(x.shape, x.dtype), ordered=True,
                               kind=_xla.KIND_ALLTOALL, comm=address, dtype=_dtype(x.dtype),
                               count=x.size)
    return y


def gather(x, root, *, comm=None):
    """Every rank's x stacked on root (shape (size, *x.shape)); the others get x back."""
    x = _array(x, "x")
    address, rank, size = _address(comm)
    root = _int(root, "root", 0, size - 1)
    shape = (size, *x.shape) if rank == root else x.shape
    (y,) = _p["gather"].bind(x, out=_out(shape, x.dtype), ordered=True, kind=_xla.KIND_GATHER,
                             comm=address, dtype=_dtype(x.dtype), count=x.size, root=root)
    return y if rank == root else x


def scatter(x, root, *, comm=None):
    """Row i of root's x (shape (size, ...)) on rank i. Elsewhere x gives the result's shape."""
    x = _array(x, "x")
    address, rank, size = _address(comm)
    root = _int(root, "root", 0, size - 1)
    if rank == root:
        _lib.check_arg(x.ndim >= 1 and x.shape[0] == size, "scatter: the root's 'x' has shape %s; "
                       "its first axis must be the communicator's size %d" % (x.shape, size))
    shape = x.shape[1:] if rank == root else x.shape
    (y,) = _p["scatter"].bind(x, out=_out(shape, x.dtype), ordered=True, kind=_xla.KIND_SCATTER,
                              comm=address, dtype=_dtype(x.dtype), count=int(np.prod(shape)),
                              root=root)
    return y


def barrier(*, comm=None):
    """Every rank arrives before any leaves."""
    address, _, _ = _address(comm)
    _p["barrier"].bind(out=(), ordered=True, kind=_xla.KIND_BARRIER, comm=address)


_SCAN_FOLDS = {"sum": jnp.add, "prod": jnp.multiply, "min": jnp.minimum, "max": jnp.maximum,
               "band": jnp.bitwise_and, "bor": jnp.bitwise_or, "bxor": jnp.bitwise_xor,
               "land": jnp.logical_and, "lor": jnp.logical_or, "lxor": jnp.logical_xor}


def scan(x, op, *, comm=None):
    """The inclusive prefix reduction (MPI_Scan): on rank r, op over the x of ranks 0..r. Built
    from allgather and a local fold (gmpi has no scan of its own): one collective, size times
    x's memory."""
    x = _array(x, "x")
    _, rank, _ = _address(comm)
    _reduction(op, x.dtype)
    _, name = _op(op)
    _lib.check_arg(name in _SCAN_FOLDS, "scan: op '%s' is not defined for MPI_Scan" % name)
    every = allgather(x, comm=comm)
    acc = every[0]
    for r in range(1, rank + 1):
        acc = _SCAN_FOLDS[name](acc, every[r])
    return acc.astype(x.dtype)


# ---- point to point -----------------------------------------------------------------------------

def send(x, dest, *, tag=0, comm=None):
    """Send x to rank dest."""
    x = _array(x, "x")
    address, _, size = _address(comm)
    _p["send"].bind(x, out=(), ordered=True, kind=_xla.KIND_SEND, comm=address,
                    dtype=_dtype(x.dtype), count=x.size, peer=_int(dest, "dest", -2, size - 1),
                    tag=_int(tag, "tag", 0))


def recv(x, source=ANY_SOURCE, *, tag=ANY_TAG, comm=None, status=None):
    """A new array of x's shape and dtype, received from source (x's values are not used)."""
    x = _array(x, "x")
    address, _, size = _address(comm)
    (y,) = _p["recv"].bind(out=_out(x.shape, x.dtype), ordered=True, kind=_xla.KIND_RECV,
                           comm=address, dtype=_dtype(x.dtype), count=x.size,
                           peer=_int(source, "source", -2, size - 1), tag=_int(tag, "tag", -1),
                           status=_status(status))
    return y


def sendrecv(sendbuf, recvbuf, source, dest, *, sendtag=0, recvtag=ANY_TAG, comm=None,
             status=None):
    """Send sendbuf to dest and receive, from source, a new array shaped as recvbuf."""
    sendbuf, recvbuf = _array(sendbuf, "sendbuf"), _array(recvbuf, "recvbuf")
    _lib.check_arg(sendbuf.dtype == recvbuf.dtype, "sendrecv: 'sendbuf' is %s and 'recvbuf' %s; "
                   "gmpi.jax sends and receives one dtype" % (sendbuf.dtype, recvbuf.dtype))
    address, _, size = _address(comm)
    (y,) = _p["sendrecv"].bind(
        sendbuf, out=_out(recvbuf.shape, recvbuf.dtype), ordered=True, kind=_xla.KIND_SENDRECV,
        comm=address, dtype=_dtype(recvbuf.dtype), count=recvbuf.size,
        peer=_int(dest, "dest", -2, size - 1), tag=_int(sendtag, "sendtag", 0),
        peer2=_int(source, "source", -2, size - 1), tag2=_int(recvtag, "recvtag", -1),
        status=_status(status))
    return y


def _sendrecv_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    (y,) = _p["sendrecv"].bind(x, **params)
    (dy,) = _p["sendrecv"].bind(ad.instantiate_zeros(t), **dict(params, status=0))
    return [y], [dy]


def _sendrecv_transpose(cts, x, **params):
    # The cotangent of what came from source goes back to it; ours comes from dest.
    (ct,) = cts
    back = dict(params, peer=params["peer2"], peer2=params["peer"], tag2=params["tag"],
                tag=max(params["tag2"], 0), status=0,
                out=_out(x.aval.shape, x.aval.dtype), count=int(np.prod(x.aval.shape)))
    return _p["sendrecv"].bind(ad.instantiate_zeros(ct), **back)


ad.primitive_jvps[_p["sendrecv"]] = _sendrecv_jvp
ad.primitive_transposes[_p["sendrecv"]] = _sendrecv_transpose

_slots = itertools.count(1)


class Request:
    """A posted isend or irecv inside (or outside) jax.jit, completed by wait or waitall. Its
    handle is a traced int32 scalar (the slot), which orders the wait after the post."""

    def __init__(self, handle, slot, is_recv, shape, dtype, params):
        self.handle, self.slot, self.is_recv = handle, slot, is_recv
        self.shape, self.dtype, self._params = shape, dtype, params

    def __repr__(self):
        return "gmpi.jax.Request(%s, slot %d)" % ("irecv" if self.is_recv else "isend", self.slot)


def isend(x, dest, *, tag=0, comm=None):
    """Start sending x to dest; the data is copied, so x may be dropped. Returns a Request."""
    x = _array(x, "x")
    address, _, size = _address(comm)
    slot = next(_slots)
    params = dict(comm=address, dtype=_dtype(x.dtype), count=x.size, slot=slot)
    (handle,) = _p["isend"].bind(x, out=_out((), np.int32), ordered=True, kind=_xla.KIND_ISEND,
                                 peer=_int(dest, "dest", -2, size - 1), tag=_int(tag, "tag", 0),
                                 **params)
    return Request(handle, slot, False, (), x.dtype, params)


def irecv(x, source=ANY_SOURCE, *, tag=ANY_TAG, comm=None):
    """Start receiving an array of x's shape and dtype; wait(request) returns it."""
    x = _array(x, "x")
    address, _, size = _address(comm)
    slot = next(_slots)
    params = dict(comm=address, dtype=_dtype(x.dtype), count=x.size, slot=slot)
    (handle,) = _p["irecv"].bind(out=_out((), np.int32), ordered=True, kind=_xla.KIND_IRECV,
                                 peer=_int(source, "source", -2, size - 1),
                                 tag=_int(tag, "tag", -1), **params)
    return Request(handle, slot, True, x.shape, x.dtype, params)


def wait(request, status=None):
    """Complete request: the received array for an irecv, None for an isend."""
    _lib.check_arg(isinstance(request, Request), "argument 'request' is a %s, not a "
                   "gmpi.jax.Request" % type(request).__name__)
    out = _out(request.shape, request.dtype) if request.is_recv else ()
    results = _p["wait"].bind(request.handle, out=out, ordered=True, kind=_xla.KIND_WAIT,
                              status=_status(status) if request.is_recv else 0,
                              **request._params)
    return results[0] if request.is_recv else None


def waitall(requests, statuses=None):
    """Complete every request, in order; a list of wait's results."""
    requests = list(requests)
    statuses = list(statuses) if statuses is not None else [None] * len(requests)
    _lib.check_arg(len(statuses) == len(requests), "waitall: %d statuses for %d requests"
                   % (len(statuses), len(requests)))
    return [wait(r, s) for r, s in zip(requests, statuses)]
