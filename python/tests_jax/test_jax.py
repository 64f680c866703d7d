# SPDX-License-Identifier: BSD-3-Clause
"""gmpi.jax inside jax.jit on CPU arrays, at any number of ranks: the values every rank gets,
against numpy references built from what each rank knows every rank contributed."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from mpi4py import MPI

import gmpi
import gmpi.jax as mj

world = MPI.COMM_WORLD
rank, size = world.rank, world.size

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX, "band": MPI.BAND,
           "bor": MPI.BOR, "bxor": MPI.BXOR, "land": MPI.LAND, "lor": MPI.LOR, "lxor": MPI.LXOR}
FOLD = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
        "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor,
        "land": np.logical_and, "lor": np.logical_or, "lxor": np.logical_xor}


def valid(dtype, op):
    from gmpi._lib import dtype_from_name, lib, op_from_name
    return bool(lib.gmpi_op_valid(dtype_from_name(dtype), op_from_name(op)))


def contribution(r, dtype, n=6):
    """What rank r puts in: small values, so sums and products fit every dtype."""
    v = (np.arange(n) + r) % 3 + 1
    if dtype in ("land", "lor", "lxor"):
        v = v % 2
    return v


def np_dtype(name):
    return jnp.dtype(name)


PAIRS = [(d, o) for d in INTS + FLOATS + ["bool"] for o in MPI_OPS if valid(d, o)]
NOT_PAIRS = [(d, o) for d in INTS + FLOATS + ["bool"] for o in MPI_OPS if not valid(d, o)]


@pytest.mark.parametrize("dtype,op", PAIRS)
def test_allreduce_jit_every_op_and_dtype(dtype, op):
    logical = op in ("land", "lor", "lxor")
    parts = [np.asarray(contribution(r, dtype) % 2 if logical or dtype == "bool"
                        else contribution(r, dtype)) for r in range(size)]
    expect = parts[0].astype(np_dtype(dtype))
    for p in parts[1:]:
        expect = FOLD[op](expect, p.astype(np_dtype(dtype))).astype(np_dtype(dtype))
    x = jnp.asarray(parts[rank].astype(np_dtype(dtype)))
    got = jax.jit(lambda v: mj.allreduce(v, op=MPI_OPS[op]))(x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(expect, np.float64))
    np.testing.assert_array_equal(np.asarray(x), parts[rank].astype(np_dtype(dtype)))  # untouched


@pytest.mark.parametrize("dtype,op", NOT_PAIRS)
def test_allreduce_refuses_what_gmpi_has_not(dtype, op):
    x = jnp.zeros(2, np_dtype(dtype))
    with pytest.raises(Exception, match="GMPI_ERR_INVALID_ARG|not valid|invalid"):
        np.asarray(jax.jit(lambda v: mj.allreduce(v, op=MPI_OPS[op]))(x))


def test_allreduce_gmpi_op_and_comm_and_eager():
    comm = gmpi.init()
    x = jnp.full(3, rank + 1, jnp.float32)
    y = mj.allreduce(x, op=gmpi.MAX, comm=comm)
    np.testing.assert_array_equal(y, np.full(3, size, np.float32))
    comm.Free()


def test_bcast_reduce_allgather_alltoall_gather_scatter():
    x = jnp.arange(4, dtype=jnp.int32) + 10 * rank

    def body(v):
        return (mj.bcast(v, size - 1), mj.reduce(v, MPI.SUM, 0), mj.allgather(v),
                mj.alltoall(jnp.stack([v + r for r in range(size)])), mj.gather(v, 0))

    b, red, ag, a2a, ga = jax.jit(body)(x)
    every = np.stack([np.arange(4) + 10 * r for r in range(size)]).astype(np.int32)
    np.testing.assert_array_equal(b, every[size - 1])
    np.testing.assert_array_equal(red, every.sum(0) if rank == 0 else every[rank])
    np.testing.assert_array_equal(ag, every)
    np.testing.assert_array_equal(a2a, np.stack([every[r] + rank for r in range(size)]))
    if rank == 0:
        np.testing.assert_array_equal(ga, every)
    else:
        np.testing.assert_array_equal(ga, every[rank])
    src = jnp.asarray(np.arange(size * 2, dtype=np.float64).reshape(size, 2)) if rank == 0 \
        else jnp.zeros(2, jnp.float64)
    sc = jax.jit(lambda v: mj.scatter(v, 0))(src)
    np.testing.assert_array_equal(sc, [2 * rank, 2 * rank + 1])


def test_scan_and_barrier():
    x = jnp.asarray([rank + 1, 2], jnp.int64)
    y = jax.jit(lambda v: mj.scan(v, MPI.SUM))(x)
    np.testing.assert_array_equal(y, [sum(range(1, rank + 2)), 2 * (rank + 1)])
    jax.jit(lambda: mj.barrier())()


def test_send_recv_with_status():
    if size < 2:
        pytest.skip("send/recv between two ranks needs 2 ranks")
    x = jnp.arange(5, dtype=jnp.float32) * (rank + 1)
    if rank == 0:
        st = MPI.Status()
        got = jax.jit(lambda v: mj.recv(v, MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st))(x)
        np.testing.assert_array_equal(got, np.arange(5, dtype=np.float32) * 2)
        assert st.Get_source() == 1 and st.Get_tag() == 7
        assert st.Get_count(MPI.FLOAT) == 5
    elif rank == 1:
        jax.jit(lambda v: mj.send(v, 0, tag=7))(x)
    # Rank 0's wildcard receive must not meet a later test's message: at 3 ranks rank 2 would
    # go on to the ring below and send to rank 0 with tag 0 (seen in CI: a truncation).
    world.Barrier()


def test_sendrecv_ring_and_its_gradient():
    left, right = (rank - 1) % size, (rank + 1) % size
    x = jnp.arange(3, dtype=jnp.float64) + 100 * rank
    st = MPI.Status()
    y = jax.jit(lambda v: mj.sendrecv(v, v, left, right, status=st))(x)
    np.testing.assert_array_equal(y, np.arange(3) + 100 * left)
    assert st.Get_source() == left
    # loss on every rank: sum(w * received); d/dx on rank r: the w of the rank r sent to (right)
    w = jnp.arange(3, dtype=jnp.float64) + rank
    g = jax.jit(jax.grad(lambda v: jnp.sum(w * mj.sendrecv(v, v, left, right))))(x)
    np.testing.assert_array_equal(g, np.arange(3) + right)


def test_isend_irecv_wait_waitall_any_source():
    x = jnp.arange(4, dtype=jnp.bfloat16) + rank

    def exchange(v):
        reqs = [mj.irecv(v, MPI.ANY_SOURCE, tag=3), mj.isend(v * 2, (rank + 1) % size, tag=3)]
        got, none = mj.waitall(reqs)
        assert none is None
        r = mj.isend(v, rank, tag=4)
        again = mj.wait(mj.irecv(v, rank, tag=4))
        mj.wait(r)
        return got, again

    got, again = jax.jit(exchange)(x)
    left = (rank - 1) % size
    np.testing.assert_array_equal(np.asarray(got, np.float32), (np.arange(4) + left) * 2)
    np.testing.assert_array_equal(np.asarray(again, np.float32), np.arange(4) + rank)


def test_grad_jvp_vmap_of_allreduce():
    x = jnp.arange(3, dtype=jnp.float32) + rank
    g = jax.grad(lambda v: jnp.sum(mj.allreduce(v, op=MPI.SUM) ** 2))(x)
    total = sum(np.arange(3) + r for r in range(size)).astype(np.float32)
    np.testing.assert_allclose(g, 2 * total)  # identity transpose: the loss is the same everywhere
    _, t = jax.jvp(lambda v: mj.allreduce(v, op=MPI.SUM), (x,), (jnp.ones(3, jnp.float32),))
    np.testing.assert_array_equal(t, np.full(3, size, np.float32))
    b = jax.vmap(lambda v: mj.allreduce(v, op=MPI.SUM))(jnp.stack([x, 2 * x]))
    np.testing.assert_array_equal(b, np.stack([total, 2 * total]))
    with pytest.raises(NotImplementedError):
        jax.grad(lambda v: jnp.sum(mj.allreduce(v, op=MPI.MAX)))(x)


def shallow_step(h, dt=0.1):
    """One diffusion-like update of a periodic 1-D field: h + dt*(left - 2h + right)."""
    return h[1:-1] + dt * (h[:-2] - 2 * h[1:-1] + h[2:])


def test_jitted_halo_exchange_against_numpy():
    n, steps = 8, 5
    whole = np.sin(np.linspace(0, 2 * np.pi, n * size, endpoint=False))
    left, right = (rank - 1) % size, (rank + 1) % size

    @jax.jit
    def run(mine):
        for _ in range(steps):
            from_left = mj.sendrecv(mine[-1:], mine[-1:], left, right, sendtag=1, recvtag=1)
            from_right = mj.sendrecv(mine[:1], mine[:1], right, left, sendtag=2, recvtag=2)
            mine = shallow_step(jnp.concatenate([from_left, mine, from_right]))
        return mine

    got = run(jnp.asarray(whole[rank * n:(rank + 1) * n]))
    ref = whole.copy()
    for _ in range(steps):
        ref = shallow_step(np.concatenate([ref[-1:], ref, ref[:1]]))
    np.testing.assert_allclose(got, ref[rank * n:(rank + 1) * n], rtol=1e-12, atol=1e-12)  # XLA fuses the stencil differently


def test_bad_arguments_are_gmpi_errors():
    x = jnp.zeros(2, jnp.float32)
    with pytest.raises(gmpi.GmpiError, match="op"):
        mj.allreduce(x, op="median")
    with pytest.raises(gmpi.GmpiError, match="root"):
        mj.bcast(x, size)
    with pytest.raises(gmpi.GmpiError, match="comm"):
        mj.allreduce(x, op=MPI.SUM, comm=42)
    with pytest.raises(gmpi.GmpiError, match="first axis"):
        mj.alltoall(jnp.zeros((size + 1, 2)))


def _forget_failed_tokens():
    """On a GPU a refused call's error rides XLA's ordered-effect token into every later ordered
    call, and into JAX's wait at exit (found on an H100: the second refusal below reported the
    first). A program that goes on after such an error drops JAX's tokens, as here."""
    from jax._src import dispatch
    tokens = getattr(dispatch, "runtime_tokens", None)
    if tokens is not None:  # JAX's private token set, present in the versions tested here
        tokens.clear()


def test_malformed_call_fields_are_refused_by_the_handler():
    """What only a lowering's bug could hand the FFI handler (gmpi.jax checks arguments first):
    the handler refuses it with the field named, and calls nothing."""
    from gmpi.jax import _p, _out
    x = jnp.ones(4, jnp.float32)

    def bound(**fields):
        return jax.jit(lambda a: _p["copy"].bind(a, out=_out(a.shape, a.dtype), ordered=True,
                                                 **fields)[0])(x)

    with pytest.raises(Exception, match="field 'kind' = 99 of attribute 'args' is not a call kind"):
        bound(kind=99).block_until_ready()
    _forget_failed_tokens()
    with pytest.raises(Exception, match="field 'root' = 4294967296 of attribute 'args' is out of"):
        bound(kind=mj._xla.KIND_COPY, root=2**32).block_until_ready()
    _forget_failed_tokens()
    np.testing.assert_array_equal(np.asarray(bound(kind=mj._xla.KIND_COPY)), np.ones(4))
