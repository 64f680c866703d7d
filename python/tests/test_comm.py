# SPDX-License-Identifier: BSD-3-Clause
"""Communicators from mpi4py, Split, Free, plans."""
import numpy as np
import pytest

import gmpi


def test_init_from_mpi4py():
    MPI = pytest.importorskip("mpi4py.MPI")
    with gmpi.init(MPI.COMM_WORLD) as c:
        assert (c.rank, c.size) == (MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size())
        x = np.array([c.rank], np.int64)
        c.Allreduce(gmpi.IN_PLACE, x)
        assert x[0] == c.size * (c.size - 1) // 2
    sub = MPI.COMM_WORLD.Split(MPI.COMM_WORLD.Get_rank() % 2, 0)
    c = gmpi.init(sub)
    assert (c.rank, c.size) == (sub.Get_rank(), sub.Get_size())
    c.Free()
    sub.Free()
    with pytest.raises(gmpi.GmpiError, match="COMM_NULL"):
        gmpi.init(MPI.COMM_NULL)
    with pytest.raises(gmpi.GmpiError, match="not an mpi4py"):
        gmpi.init(42)


def test_split_and_free(comm):
    half = comm.Split(color=comm.rank % 2, key=-comm.rank)
    members = [r for r in range(comm.size) if r % 2 == comm.rank % 2]
    assert half.size == len(members)
    assert half.rank == sorted(members, reverse=True).index(comm.rank)  # key orders ranks
    x = np.array([comm.rank], np.int32)
    half.Allreduce(gmpi.IN_PLACE, x)
    assert x[0] == sum(members)
    half.Free()
    half.Free()  # a second Free is harmless
    with pytest.raises(gmpi.GmpiError, match="freed"):
        half.Barrier()
    none = comm.Split(color=gmpi.UNDEFINED if comm.rank == 0 else 1)
    assert (none is None) == (comm.rank == 0)
    if none is not None:
        assert none.size == comm.size - 1
        none.Free()


def test_free_ends_each_comm_as_gmpi_h_says(comm, monkeypatch):
    """Split and Dup results end with gmpi_comm_free; gmpi_finalize is for the Comm of init."""
    called = []
    real_call = gmpi._comm.call

    def recording_call(name, *args):
        called.append(name)
        return real_call(name, *args)

    monkeypatch.setattr(gmpi._comm, "call", recording_call)
    half, copy = comm.Split(color=comm.rank % 2), comm.Dup()
    own = gmpi.init()
    for c in (copy, half, own):
        del called[:]
        c.Free()
        assert called == ["gmpi_finalize" if c is own else "gmpi_comm_free"]
    x = np.array([comm.rank], np.int32)
    comm.Allreduce(gmpi.IN_PLACE, x)  # the session's comm is untouched
    assert x[0] == comm.size * (comm.size - 1) // 2


def test_plan_records_and_replays(comm):
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    g = np.zeros(8, np.float32)
    halo = np.zeros(2, np.int64)
    edge = np.zeros(2, np.int64)
    with comm.plan() as plan:
        comm.Allreduce(gmpi.IN_PLACE, g, op=gmpi.SUM)
        r = [comm.Irecv(halo, source=left, tag=1), comm.Isend(edge, dest=right, tag=1)]
        gmpi.Request.Waitall(r)
    for step in range(3):
        g[:] = comm.rank + step
        edge[:] = [comm.rank, step]
        plan.run()
        np.testing.assert_array_equal(g, comm.size * step + comm.size * (comm.size - 1) / 2)
        assert halo.tolist() == [left, step]
    plan.Free()
    with pytest.raises(gmpi.GmpiError, match="not recorded"):
        plan.run()


def test_plan_body_error_propagates(comm):
    with pytest.raises(gmpi.GmpiError, match="root"):
        with comm.plan():
            comm.Bcast(np.zeros(1), root=-1)
    comm.Barrier()  # the comm works after the failed recording
    x = np.ones(2)
    comm.Allreduce(gmpi.IN_PLACE, x)
    assert (x == comm.size).all()
