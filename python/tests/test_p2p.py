# SPDX-License-Identifier: BSD-3-Clause
"""Point to point on numpy arrays: matching, statuses, requests, errors."""
import gc
import weakref

import numpy as np
import pytest

import gmpi


def ring(comm):
    return (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size


def test_send_recv_ring_with_status(comm):
    right, left = ring(comm)
    out = np.arange(5, dtype=np.float32) + comm.rank
    got = np.zeros(8, np.float32)  # longer than the message: count says how much came
    st = gmpi.Status()
    if comm.rank % 2 == 0:
        comm.Send(out, dest=right, tag=7)
        comm.Recv(got, source=gmpi.ANY_SOURCE, tag=gmpi.ANY_TAG, status=st)
    else:
        comm.Recv(got, source=left, tag=7, status=st)
        comm.Send(out, dest=right, tag=7)
    assert (st.source, st.tag, st.count) == (left, 7, 5)
    assert (st.Get_source(), st.Get_tag(), st.Get_count()) == (left, 7, 5)
    np.testing.assert_array_equal(got[:5], np.arange(5) + left)


def test_sendrecv(comm):
    right, left = ring(comm)
    got = np.zeros(3, np.int64)
    st = gmpi.Status()
    comm.Sendrecv(np.full(3, comm.rank, np.int64), dest=right, sendtag=3, recvbuf=got,
                  source=left, recvtag=3, status=st)
    assert got.tolist() == [left] * 3 and st.source == left and st.count == 3


def test_isend_irecv_waitall(comm):
    right, left = ring(comm)
    big = 100000  # over the eager limit: the send completes only with its receive
    recvs = [np.zeros(big, np.uint8), np.zeros(4, np.float64)]
    reqs = [comm.Irecv(recvs[0], source=left, tag=1), comm.Irecv(recvs[1], source=left, tag=2)]
    reqs.append(comm.Isend(np.full(4, comm.rank * 1.5), dest=right, tag=2))
    reqs.append(comm.Isend(np.full(big, comm.rank % 256, np.uint8), dest=right, tag=1))
    sts = [gmpi.Status() for _ in reqs]
    gmpi.Request.Waitall(reqs, sts)
    assert (recvs[0] == left % 256).all() and (recvs[1] == left * 1.5).all()
    assert (sts[0].tag, sts[0].count, sts[1].tag, sts[1].count) == (1, big, 2, 4)
    assert all(r.Test() for r in reqs)  # completed requests test true


def test_wait_and_test(comm):
    right, left = ring(comm)
    got = np.zeros(2, np.int32)
    r = comm.Irecv(got, source=left, tag=9)
    s = comm.Isend(np.array([comm.rank, -comm.rank], np.int32), dest=right, tag=9)
    st = gmpi.Status()
    for _ in range(100000):
        if r.Test(status=st):
            break
    else:
        r.Wait(status=st)  # bounded by GMPI_TIMEOUT
    s.Wait()
    assert got.tolist() == [left, -left] and st.source == left


def test_pending_request_keeps_buffer_alive(comm):
    right, left = ring(comm)
    buf = np.zeros(16, np.int32)
    ref = weakref.ref(buf)
    r = comm.Irecv(buf, source=left, tag=11)
    del buf
    gc.collect()
    assert ref() is not None  # the request holds it
    comm.Send(np.full(16, left * 0 + comm.rank, np.int32), dest=right, tag=11)
    got = ref()
    r.Wait()
    assert (got == left).all()
    del got, r
    gc.collect()
    assert ref() is None  # and lets go once complete


def test_truncation_is_an_error(comm):
    """The status still names the message that overflowed (source, tag; count 0), as MPI's."""
    right, left = ring(comm)
    req = comm.Isend(np.zeros(10, np.float32), dest=right, tag=5)
    st = gmpi.Status()
    with pytest.raises(gmpi.GmpiError) as e:
        comm.Recv(np.zeros(4, np.float32), source=gmpi.ANY_SOURCE, tag=5, status=st)
    assert e.value.status == gmpi.ERR_TRUNCATE
    assert (st.source, st.tag, st.count) == (left, 5, 0)
    req.Wait()
    req = comm.Isend(np.zeros(10, np.float32), dest=right, tag=6)
    small, st = np.zeros(4, np.float32), gmpi.Status()
    recv = comm.Irecv(small, source=left, tag=gmpi.ANY_TAG)
    with pytest.raises(gmpi.GmpiError) as e:
        recv.Wait(status=st)
    assert e.value.status == gmpi.ERR_TRUNCATE
    assert (st.source, st.tag, st.count) == (left, 6, 0)
    req.Wait()


def test_bad_peer(comm):
    with pytest.raises(gmpi.GmpiError) as e:
        comm.Send(np.zeros(1), dest=comm.size + 5)
    assert e.value.status == gmpi.ERR_INVALID_ARG and "dest" in e.value.detail
