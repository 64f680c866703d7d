# SPDX-License-Identifier: BSD-3-Clause
"""Issue 27's calls from Python: Ssend/Issend and the nonblocking forms of every collective
the C API has (Ireduce, Ireduce_scatter(_block), Igather, Iscatter, Iallgatherv, Igatherv,
Iscatterv, Ialltoallv), each started before any is waited, values checked on every rank."""
import numpy as np
import pytest

import gmpi


def test_ssend_issend_ring(comm):
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    got = np.zeros(5, np.int64)
    req = comm.Irecv(got, source=left, tag=11)
    comm.Ssend(np.arange(5, dtype=np.int64) + 100 * comm.rank, right, tag=11)
    req.Wait()
    np.testing.assert_array_equal(got, np.arange(5) + 100 * left)
    got2 = np.zeros(3, np.float32)
    reqs = [comm.Irecv(got2, source=left, tag=12),
            comm.Issend(np.full(3, comm.rank, np.float32), right, tag=12)]
    gmpi.Request.Waitall(reqs)
    np.testing.assert_array_equal(got2, np.full(3, left))


def test_nonblocking_collectives_started_together(comm):
    p, me = comm.size, comm.rank
    root = p - 1
    red = np.zeros(4, np.float64) if me == root else None
    rsb = np.zeros(2, np.int32)
    gat = np.full(2 * p, -1, np.int16) if me == 0 else None
    sca = np.zeros(3, np.float32)
    counts = [r + 1 for r in range(p)]
    agv = np.zeros(sum(counts), np.int32)
    gv = np.zeros(sum(counts), np.int32) if me == root else None
    sv = np.zeros(counts[me], np.int32)
    a2v_sc = [me + b + 1 for b in range(p)]
    a2v_rc = [a + me + 1 for a in range(p)]
    a2v_send = np.concatenate([np.full(c, 100 * me + b) for b, c in enumerate(a2v_sc)]).astype(np.int32)
    a2v_recv = np.zeros(sum(a2v_rc), np.int32)
    everyone = np.concatenate([np.full(c, r + 1) for r, c in enumerate(counts)]).astype(np.int32)
    reqs = [
        comm.Ireduce(np.full(4, me + 1.0), red, op=gmpi.SUM, root=root),
        comm.Ireduce_scatter_block(np.arange(2 * p, dtype=np.int32), rsb, op=gmpi.SUM),
        comm.Igather(np.full(2, me, np.int16), gat, root=0),
        comm.Iscatter(np.arange(3 * p, dtype=np.float32) if me == 0 else None, sca, root=0),
        comm.Iallgatherv(np.full(counts[me], me + 1, np.int32), [agv, counts]),
        comm.Igatherv(np.full(counts[me], me + 1, np.int32), [gv, counts] if me == root else None,
                      root=root),
        comm.Iscatterv([everyone, counts] if me == 0 else None, sv, root=0),
        comm.Ialltoallv([a2v_send, a2v_sc], [a2v_recv, a2v_rc]),
    ]
    gmpi.Request.Waitall(reqs)
    if me == root:
        np.testing.assert_array_equal(red, np.full(4, p * (p + 1) / 2))
        np.testing.assert_array_equal(gv, everyone)
    np.testing.assert_array_equal(rsb, (np.arange(2) + 2 * me) * p)
    if me == 0:
        np.testing.assert_array_equal(gat, np.repeat(np.arange(p), 2))
    np.testing.assert_array_equal(sca, np.arange(3, dtype=np.float32) + 3 * me)
    np.testing.assert_array_equal(agv, everyone)
    np.testing.assert_array_equal(sv, np.full(counts[me], me + 1))
    want = np.concatenate([np.full(c, 100 * a + me) for a, c in enumerate(a2v_rc)])
    np.testing.assert_array_equal(a2v_recv, want)


def test_ireduce_scatter_equal_blocks_only(comm):
    got = np.zeros(1, np.int32)
    req = comm.Ireduce_scatter(np.ones(comm.size, np.int32), got, recvcounts=[1] * comm.size)
    req.Wait()
    np.testing.assert_array_equal(got, [comm.size])
    if comm.size > 1:
        with pytest.raises(gmpi.GmpiError, match="equal blocks"):
            comm.Ireduce_scatter(np.ones(comm.size + 1, np.int32), np.zeros(2, np.int32),
                                 recvcounts=[2] + [1] * (comm.size - 1))


def test_nonblocking_bad_argument_raises_before_starting(comm):
    # the blocking method's checks apply: sendbuf is not size x recvbuf, on every rank
    with pytest.raises(gmpi.GmpiError):
        comm.Ireduce_scatter_block(np.ones(comm.size * 3 + 1, np.int32), np.zeros(3, np.int32))
    comm.Barrier()  # the comm still works and nothing was left started
    x = np.ones(1, np.int32)
    comm.Allreduce(gmpi.IN_PLACE, x)
    assert x[0] == comm.size


def test_world_free_leaves_mpi_running(comm):
    # A second world comm, freed: MPI must stay up (the session's comm goes on working).
    other = gmpi.init()
    other.Free()
    again = gmpi.init()
    x = np.full(2, comm.rank, np.int64)
    again.Allreduce(gmpi.IN_PLACE, x)
    np.testing.assert_array_equal(x, np.full(2, comm.size * (comm.size - 1) // 2))
    again.Free()
    y = np.ones(1, np.int32)
    comm.Allreduce(gmpi.IN_PLACE, y)
    assert y[0] == comm.size


def test_import_names_missing_numpy():
    # A Python without numpy: `import gmpi` fails at once, naming numpy and the interpreter.
    import os
    import subprocess
    import sys

    code = "import sys; sys.modules['numpy'] = None; import gmpi"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(gmpi.__file__)))
    p = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
    assert p.returncode != 0
    assert "gmpi needs numpy" in p.stdout, p.stdout
    assert sys.executable in p.stdout, p.stdout
