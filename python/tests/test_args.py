# SPDX-License-Identifier: BSD-3-Clause
"""Arguments Python cannot pass to C as given: ranks, roots and tags beyond 32 bits, counts that
are not integers, arguments of a wrong type. Each is GmpiError(GMPI_ERR_INVALID_ARG) naming
the argument on every rank, before anything is sent (ctypes would wrap 2**32 + 1 to 1)."""
import numpy as np
import pytest

import gmpi


def refused(match, f, *args, **kwargs):
    with pytest.raises(gmpi.GmpiError, match=match) as e:
        f(*args, **kwargs)
    assert e.value.status == gmpi.ERR_INVALID_ARG, e.value


def test_ranks_roots_tags_beyond_32_bits(comm):
    a = np.zeros(4, np.int32)
    refused("'dest' = 4294967297 does not fit a C int", comm.Send, a, dest=2 ** 32 + 1)
    refused("'root' = 4294967296 does not fit a C int", comm.Bcast, a, root=2 ** 32)
    refused("'tag' = 4294967296 does not fit", comm.Isend, a, dest=comm.rank, tag=2 ** 32)
    refused("'source' = -4294967297", comm.Recv, a, source=-(2 ** 32) - 1)
    refused("'root'", comm.Reduce, a, np.zeros(4, np.int32), root=2 ** 40)
    refused("'color'", comm.Split, color=2 ** 33)
    # Nothing was sent: a message to self with tag 1 (what 2**32 + 1 would wrap to) is absent.
    assert not comm.Iprobe(source=comm.rank, tag=1)


def test_wrong_types(comm):
    a = np.zeros(4, np.int32)
    refused("'dest' of gmpi_send = '1' is not an integer", comm.Send, a, dest="1")
    refused("is not an integer \\(float\\)", comm.Send, a, dest=1.0)
    refused("is not an integer \\(bool\\)", comm.Bcast, a, root=True)
    refused("bad argument", comm.Allreduce, a, np.zeros(4, np.int32), op="sum")
    refused("bad argument", comm.Send)


def test_wrong_requests_and_statuses(comm):
    """Request's static calls and every status argument are checked too, the status before the
    receive: a refused Recv leaves its message for the next one."""
    a, b = np.arange(4, dtype=np.int32) + comm.rank, np.zeros(4, np.int32)
    refused("'requests' is a int", gmpi.Request.Waitall, 5)
    recv = comm.Irecv(b, comm.rank, 4)
    refused("'requests\\[1\\]' is a int", gmpi.Request.Waitany, [recv, 2])
    refused("'requests' is a str", gmpi.Request.Testall, "xy")
    refused("'statuses' is a int", gmpi.Request.Waitall, [], statuses=3)
    refused("'status' is a int", comm.Iprobe, source=comm.rank, tag=4, status=5)
    send = comm.Isend(a, dest=comm.rank, tag=4)
    refused("'status' is a str", send.Wait, status="s")
    refused("'statuses\\[0\\]' is a int", gmpi.Request.Testall, [send], statuses=[1])
    # Nothing above waited: the receive takes the message now.
    st = gmpi.Status()
    recv.Wait(status=st)
    send.Wait()
    assert (b == a).all() and st.Get_source() == comm.rank and st.Get_tag() == 4
    req = comm.Isend(a, dest=comm.rank, tag=5)
    b[:] = 0
    refused("'status' is a int", comm.Recv, b, source=comm.rank, tag=5, status=7)
    assert (b == 0).all()
    comm.Recv(b, source=comm.rank, tag=5)
    req.Wait()
    assert (b == a).all()


def test_float_counts_refused(comm):
    n = comm.size
    a = np.zeros(4 * n, np.int32)
    refused("'recvcounts'\\[0\\] = 1.5 is not an integer", comm.Reduce_scatter, a,
            np.zeros(4, np.int32), recvcounts=[1.5] * n)
    refused("counts\\[0\\] = 2.0 is not an integer", comm.Allgatherv, np.zeros(2, np.int32),
            [a, [2.0] * n])
    refused("displs\\[0\\] = 0.0 is not an integer", comm.Allgatherv, np.zeros(2, np.int32),
            [a, [2] * n, [0.0] * n])
    refused("not a list of integers", comm.Reduce_scatter, a, np.zeros(4, np.int32),
            recvcounts=3)
