# SPDX-License-Identifier: BSD-3-Clause
"""The XLA side of gmpi.jax: libgmpi_xla (its FFI handler), the ordered effect that keeps MPI
calls in program order inside jax.jit, and one lowering for every call.

Every call lowers to the one FFI target gmpi_xla_call (src/xla/gmpi_xla.cc): the call's input
buffers and an ordering token in, its output buffers and the next token out, and one attribute
whose fields name the call (KIND_*), the gmpi comm's address, dtype, op, count, root, peers,
tags, the address of an mpi4py status to fill and the request slot of isend/irecv/wait."""
import ctypes
import os

import numpy as np

import jax
from jax._src import effects
from jax._src.core import abstract_token
from jax.interpreters import mlir

from .. import _lib

# The calls, as src/xla/gmpi_xla.cc numbers them (enum Kind).
(KIND_ALLREDUCE, KIND_BCAST, KIND_REDUCE, KIND_ALLGATHER, KIND_ALLTOALL, KIND_GATHER,
 KIND_SCATTER, KIND_BARRIER, KIND_SEND, KIND_RECV, KIND_SENDRECV, KIND_ISEND, KIND_IRECV,
 KIND_WAIT, KIND_COPY) = range(15)

TARGET = "gmpi_xla_call"


def _load():
    """libgmpi_xla: GMPI_XLA_LIBRARY, else beside the libgmpi that gmpi loaded."""
    env = os.environ.get("GMPI_XLA_LIBRARY")
    path = env or os.path.join(os.path.dirname(os.path.abspath(_lib.lib._name)),
                               "libgmpi_xla.so")
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            "gmpi.jax: cannot load libgmpi_xla (%s). It is built with libgmpi when CMake finds a "
            "Python with jax (cmake -DGMPI_JAX_PYTHON=/path/to/python; with pip, in a Python "
            "that has jax: pip install --no-build-isolation ./python); set GMPI_XLA_LIBRARY to "
            "its path otherwise" % e) from None


_handlers = _load()
jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(_handlers.gmpi_xla_call), platform="cpu")


def _register_cuda():
    """The CUDA handler, when libgmpi_xla was built with the cuda backend and jax has a CUDA
    plugin: True when registered."""
    if not hasattr(_handlers, "gmpi_xla_call_cuda"):
        return False
    try:
        jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(_handlers.gmpi_xla_call_cuda),
                                    platform="CUDA")
    except Exception:  # no CUDA plugin in this jax
        return False
    return True


CUDA = _register_cuda()


class _OrderedMpi(effects.Effect):
    """MPI calls happen in program order on every rank: an ordered effect, threaded by a token."""

    def __eq__(self, other):
        return isinstance(other, _OrderedMpi)

    def __hash__(self):
        return hash(_OrderedMpi)

    def __repr__(self):
        return "gmpi.jax ordered MPI"


for _kind in (effects.lowerable_effects, effects.ordered_effects,
              effects.control_flow_allowed_effects, effects.custom_derivatives_allowed_effects):
    _kind.add_type(_OrderedMpi)
ORDERED = _OrderedMpi()


def attributes(kind, comm=0, dtype=0, op=0, count=0, root=0, peer=0, tag=0, peer2=0, tag2=0,
               status=0, slot=0):
    """The handler's one attribute, "args": every field of a call packed into an int64 array in
    the order src/xla/gmpi_xla.cc decodes it (enum Field). One array attribute costs XLA a third
    of what twelve scalar ones did per call (docs/performance.md)."""
    return dict(args=np.array([kind, comm, dtype, op, count, root, peer, tag, peer2, tag2, status,
                               slot], dtype=np.int64))


_rule = jax.ffi.ffi_lowering(TARGET, has_side_effect=True)


def lower(ctx, *operands, attrs):
    """Lower one call: operands and results as the primitive has them, the token threaded."""
    token = ctx.tokens_in.get(ORDERED)
    ctx_token = ctx.replace(avals_in=(*ctx.avals_in, abstract_token),
                            avals_out=(*ctx.avals_out, abstract_token))
    results = list(_rule(ctx_token, *operands, token, **attrs))
    ctx.set_tokens_out(mlir.TokenSet({ORDERED: results.pop()}))
    return results
