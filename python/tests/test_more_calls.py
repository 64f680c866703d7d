# SPDX-License-Identifier: BSD-3-Clause
"""Issue 11's calls from Python: gather/scatter, the v-variants, unequal reduce_scatter,
nonblocking collectives mixed with point to point, waitany/testall, probe, PROC_NULL, Dup.
Values checked on every rank."""
import numpy as np
import pytest

import gmpi


def test_gather_scatter_every_root(comm):
    for root in range(comm.size):
        mine = np.arange(3, dtype=np.int32) + 10 * comm.rank
        out = np.full(3 * comm.size, -1, np.int32) if comm.rank == root else None
        comm.Gather(mine, out, root=root)
        if comm.rank == root:
            want = np.concatenate([np.arange(3) + 10 * r for r in range(comm.size)])
            np.testing.assert_array_equal(out, want)
        blocks = (np.arange(2 * comm.size, dtype=np.float64) + root) if comm.rank == root else None
        got = np.zeros(2)
        comm.Scatter(blocks, got, root=root)
        np.testing.assert_array_equal(got, np.arange(2) + 2 * comm.rank + root)


def test_v_variants_uneven(comm):
    counts = [(r * 3 + 1) % 4 for r in range(comm.size)]  # some zero
    displs = [sum(counts[:r]) for r in range(comm.size)]
    mine = np.full(counts[comm.rank], comm.rank + 1, np.int16)
    allv = np.zeros(sum(counts), np.int16)
    comm.Allgatherv(mine, [allv, counts, displs])
    want = np.concatenate([np.full(c, r + 1) for r, c in enumerate(counts)]).astype(np.int16)
    np.testing.assert_array_equal(allv, want)
    root = comm.size - 1
    g = np.zeros(sum(counts), np.int16) if comm.rank == root else None
    comm.Gatherv(mine, [g, counts] if comm.rank == root else None, root=root)
    if comm.rank == root:
        np.testing.assert_array_equal(g, want)
    got = np.zeros(counts[comm.rank], np.int16)
    comm.Scatterv([want, counts, displs] if comm.rank == 0 else None, got, root=0)
    np.testing.assert_array_equal(got, np.full(counts[comm.rank], comm.rank + 1))
    # alltoallv: rank a sends a + b + 1 elements valued 100a + b to rank b
    sc = [comm.rank + b + 1 for b in range(comm.size)]
    rc = [a + comm.rank + 1 for a in range(comm.size)]
    send = np.concatenate([np.full(c, 100 * comm.rank + b) for b, c in enumerate(sc)]).astype(
        np.int32)
    recv = np.zeros(sum(rc), np.int32)
    comm.Alltoallv([send, sc], [recv, rc])
    want = np.concatenate([np.full(c, 100 * a + comm.rank) for a, c in enumerate(rc)])
    np.testing.assert_array_equal(recv, want)


def test_reduce_scatter_unequal(comm):
    counts = [r + 1 for r in range(comm.size)]
    send = (np.arange(sum(counts)) + comm.rank).astype(np.float32)
    recv = np.zeros(counts[comm.rank], np.float32)
    comm.Reduce_scatter(send, recv, recvcounts=counts, op=gmpi.SUM)
    start = sum(counts[:comm.rank])
    want = comm.size * (np.arange(counts[comm.rank]) + start) + comm.size * (comm.size - 1) / 2
    np.testing.assert_allclose(recv, want)


def test_nonblocking_collectives_mixed_with_p2p(comm):
    x = np.full(1000, comm.rank + 1.0)
    y = np.zeros(1000)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    msg, got = np.full(8, float(comm.rank)), np.zeros(8)
    reqs = [comm.Iallreduce(x, y, op=gmpi.SUM), comm.Irecv(got, left, 5), comm.Isend(msg, right, 5)]
    b = np.arange(4, dtype=np.int64) if comm.rank == 0 else np.zeros(4, np.int64)
    reqs.append(comm.Ibcast(b, root=0))
    reqs.append(comm.Ibarrier())
    gmpi.Request.Waitall(reqs)
    np.testing.assert_allclose(y, comm.size * (comm.size + 1) / 2)
    np.testing.assert_array_equal(got, np.full(8, float(left)))
    np.testing.assert_array_equal(b, np.arange(4))
    ag = np.zeros(2 * comm.size, np.int32)
    r = comm.Iallgather(np.full(2, comm.rank, np.int32), ag)
    while not gmpi.Request.Testall([r]):
        pass
    np.testing.assert_array_equal(ag, np.repeat(np.arange(comm.size), 2))
    # A send buffer shorter than recvbuf's block is refused before the C library reads past it.
    with pytest.raises(gmpi.GmpiError, match="not size"):
        comm.Iallgather(np.full(1, comm.rank, np.int32), ag)


def test_waitany_probe_proc_null(comm):
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    flag = comm.Iprobe(left, 77)
    comm.Barrier()
    assert flag is False
    n = 5 + comm.rank  # the receiver learns the length from the probe
    s = comm.Isend(np.arange(n, dtype=np.float32), right, 77)
    st = gmpi.Status()
    comm.Probe(left, 77, st)
    assert (st.source, st.tag, st.count) == (left, 77, 5 + left)
    buf = np.zeros(st.count, np.float32)
    comm.Recv(buf, st.source, st.tag)
    np.testing.assert_array_equal(buf, np.arange(5 + left))
    idx = gmpi.Request.Waitany([s])
    assert idx == 0
    assert gmpi.Request.Waitany([s]) == gmpi.UNDEFINED
    nothing = np.full(3, 9.0)
    st = gmpi.Status()
    comm.Recv(nothing, gmpi.PROC_NULL, 0, st)
    comm.Send(nothing, gmpi.PROC_NULL, 0)
    assert (st.source, st.count) == (gmpi.PROC_NULL, 0)
    np.testing.assert_array_equal(nothing, 9.0)


def test_dup_isolates(comm):
    dup = comm.Dup()
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    a, b = np.zeros(1), np.zeros(1)
    r1 = dup.Irecv(a, left, 3)
    r2 = comm.Irecv(b, left, 3)
    s1 = dup.Isend(np.array([2.0 * comm.rank]), right, 3)
    s2 = comm.Isend(np.array([comm.rank + 0.5]), right, 3)
    gmpi.Request.Waitall([r1, r2, s1, s2])
    assert a[0] == 2.0 * left and b[0] == left + 0.5
    dup.Free()
