# SPDX-License-Identifier: BSD-3-Clause
"""Collectives on numpy arrays, values checked on every rank."""
import numpy as np
import pytest

import gmpi

DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dt", DTYPES)
def test_allreduce_sum(comm, dt):
    n = 37
    send = (np.arange(n) % 5 + comm.rank).astype(dt)
    recv = np.zeros(n, dt)
    comm.Allreduce(send, recv, op=gmpi.SUM)
    want = (np.arange(n) % 5 * comm.size + comm.size * (comm.size - 1) // 2).astype(dt)
    np.testing.assert_array_equal(recv, want)


def test_allreduce_in_place_2d_and_ops(comm):
    x = np.full((3, 4), comm.rank + 1, np.float64)
    comm.Allreduce(gmpi.IN_PLACE, x, op=gmpi.MAX)
    assert (x == comm.size).all()
    y = np.full(5, comm.rank + 1, np.int64)
    comm.Allreduce(gmpi.IN_PLACE, y, op=gmpi.PROD)
    assert (y == np.prod(np.arange(1, comm.size + 1))).all()
    z = np.full(5, 2 * comm.rank, np.float32)
    comm.Allreduce(gmpi.IN_PLACE, z, op=gmpi.AVG)
    np.testing.assert_allclose(z, comm.size - 1)


def test_allreduce_bool(comm):
    b = np.array([comm.rank == 0, True, False])
    comm.Allreduce(gmpi.IN_PLACE, b, op=gmpi.LOR)
    assert b.tolist() == [True, True, False]
    c = np.array([comm.rank == 0, True])
    comm.Allreduce(gmpi.IN_PLACE, c, op=gmpi.LAND)
    assert c.tolist() == [comm.size == 1, True]


def test_bcast(comm):
    root = comm.size - 1
    buf = np.arange(10, dtype=np.complex64) * (1 + 1j) if comm.rank == root \
        else np.zeros(10, np.complex64)
    comm.Bcast(buf, root=root)
    np.testing.assert_array_equal(buf, np.arange(10, dtype=np.complex64) * (1 + 1j))


def test_reduce(comm):
    send = np.full(6, comm.rank, np.int32)
    recv = np.full(6, -1, np.int32)
    comm.Reduce(send, recv, op=gmpi.SUM, root=0)
    if comm.rank == 0:
        assert (recv == comm.size * (comm.size - 1) // 2).all()
    else:
        assert (recv == -1).all()  # a non-root's recvbuf is not written
    only_root = np.zeros(6, np.int32) if comm.rank == 0 else None  # mpi4py's convention
    comm.Reduce(np.full(6, comm.rank + 1, np.int32), only_root, op=gmpi.MAX, root=0)
    if comm.rank == 0:
        assert (only_root == comm.size).all()
    r2 = np.full(3, comm.rank + 1.0)
    comm.Reduce(gmpi.IN_PLACE if comm.rank == 1 % comm.size else r2.copy(), r2, op=gmpi.MIN,
                root=1 % comm.size)
    if comm.rank == 1 % comm.size:
        assert (r2 == 1.0).all()


def test_allgather(comm):
    send = np.array([comm.rank, 10 * comm.rank], np.int16)
    recv = np.zeros(2 * comm.size, np.int16)
    comm.Allgather(send, recv)
    assert recv.tolist() == [v for r in range(comm.size) for v in (r, 10 * r)]
    inplace = np.zeros((comm.size, 3), np.float32)
    inplace[comm.rank] = comm.rank + 0.5
    comm.Allgather(gmpi.IN_PLACE, inplace)
    np.testing.assert_array_equal(inplace[:, 1], np.arange(comm.size) + 0.5)


def test_alltoall(comm):
    send = np.array([100 * comm.rank + peer for peer in range(comm.size)], np.int64)
    recv = np.zeros(comm.size, np.int64)
    comm.Alltoall(send, recv)
    assert recv.tolist() == [100 * peer + comm.rank for peer in range(comm.size)]


def test_reduce_scatter(comm):
    send = np.arange(2 * comm.size, dtype=np.float64) + comm.rank
    recv = np.zeros(2)
    comm.Reduce_scatter_block(send, recv, op=gmpi.SUM)
    base = np.arange(2 * comm.rank, 2 * comm.rank + 2)
    np.testing.assert_array_equal(recv, base * comm.size + comm.size * (comm.size - 1) / 2)
    recv2 = np.zeros(2)
    comm.Reduce_scatter(send, recv2, [2] * comm.size, op=gmpi.SUM)
    np.testing.assert_array_equal(recv2, recv)


def test_barrier(comm):
    comm.Barrier()
