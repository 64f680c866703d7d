# SPDX-License-Identifier: BSD-3-Clause
"""Device buffers on the cuda backend, no copies: CuPy arrays and PyTorch CUDA tensors
(__cuda_array_interface__, and DLPack for bfloat16). Skipped, with the reason, on the cpu
backend or without the module. Run on a GPU machine by python/tests/run-gpu."""
import numpy as np
import pytest

import gmpi


@pytest.fixture(scope="module")
def dev(comm):
    if comm.backend != "cuda":
        pytest.skip("backend is %s, not cuda (GMPI_BACKEND=cuda on a GPU machine)" % comm.backend)
    return comm.device


@pytest.fixture(scope="module")
def cp(dev):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    cupy.cuda.Device(dev).use()
    return cupy


@pytest.fixture(scope="module")
def torch(dev):
    t = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not t.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    t.cuda.set_device(dev)
    return t


def ring(comm):
    return (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size


# ---- CuPy ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "int32", "int64", "complex64"])
def test_cupy_allreduce(comm, cp, dt):
    x = (cp.arange(1000) % 7 + comm.rank).astype(dt)
    ptr = x.data.ptr
    comm.Allreduce(gmpi.IN_PLACE, x, op=gmpi.SUM)
    assert x.data.ptr == ptr  # the same memory: no copy
    want = (np.arange(1000) % 7 * comm.size + comm.size * (comm.size - 1) // 2).astype(dt)
    np.testing.assert_array_equal(cp.asnumpy(x), want)


def test_cupy_send_recv_and_requests(comm, cp):
    right, left = ring(comm)
    got = cp.zeros(50000, cp.float32)  # over the eager limit
    r = comm.Irecv(got, source=left, tag=4)
    s = comm.Isend(cp.full(50000, comm.rank, cp.float32), dest=right, tag=4)
    st = gmpi.Status()
    r.Wait(status=st)
    s.Wait()
    assert st.source == left and st.count == 50000
    assert float(got.min()) == left == float(got.max())


def test_cupy_collectives(comm, cp):
    b = cp.arange(8, dtype=cp.int64) if comm.rank == 0 else cp.zeros(8, cp.int64)
    comm.Bcast(b, root=0)
    assert cp.asnumpy(b).tolist() == list(range(8))
    g = cp.zeros(2 * comm.size, cp.float32)
    comm.Allgather(cp.full(2, comm.rank, cp.float32), g)
    assert cp.asnumpy(g).tolist() == [float(r) for r in range(comm.size) for _ in range(2)]
    a = cp.zeros(comm.size, cp.int32)
    comm.Alltoall(cp.arange(comm.size, dtype=cp.int32) + 10 * comm.rank, a)
    assert cp.asnumpy(a).tolist() == [10 * p + comm.rank for p in range(comm.size)]


def test_cupy_plan(comm, cp):
    x = cp.zeros(64, cp.float32)
    with comm.plan() as plan:
        comm.Allreduce(gmpi.IN_PLACE, x, op=gmpi.MAX)
    for step in range(3):
        x.fill(comm.rank + step)
        plan.run()
        assert float(x.min()) == comm.size - 1 + step == float(x.max())
    plan.Free()


def test_cupy_non_contiguous_refused(comm, cp):
    with pytest.raises(gmpi.GmpiError, match="not contiguous"):
        comm.Bcast(cp.zeros((4, 4), cp.float32)[:, 1])


# ---- PyTorch ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "int64", "bool"])
def test_torch_allreduce(comm, torch, dt):
    d = getattr(torch, dt)
    x = torch.full((4, 3), comm.rank % 2 if dt == "bool" else comm.rank + 1, device="cuda")
    x = x.to(d)
    ptr = x.data_ptr()
    op = gmpi.LOR if dt == "bool" else gmpi.SUM
    comm.Allreduce(gmpi.IN_PLACE, x, op=op)
    assert x.data_ptr() == ptr
    want = (comm.size > 1) if dt == "bool" else comm.size * (comm.size + 1) // 2
    assert bool((x.float() == float(want)).all())


def test_torch_send_recv_and_reduce_scatter(comm, torch):
    right, left = ring(comm)
    out = torch.arange(10, device="cuda", dtype=torch.float64) + comm.rank
    got = torch.zeros(10, device="cuda", dtype=torch.float64)
    comm.Sendrecv(out, dest=right, recvbuf=got, source=left)
    assert got.tolist() == [float(i + left) for i in range(10)]
    send = torch.ones(3 * comm.size, device="cuda")
    recv = torch.zeros(3, device="cuda")
    comm.Reduce_scatter_block(send, recv, op=gmpi.SUM)
    assert recv.tolist() == [float(comm.size)] * 3


def test_torch_host_tensor_and_errors(comm, torch):
    h = torch.full((5,), comm.rank, dtype=torch.int32)  # a CPU tensor, through DLPack
    comm.Allreduce(gmpi.IN_PLACE, h, op=gmpi.MAX)
    assert h.tolist() == [comm.size - 1] * 5
    with pytest.raises(gmpi.GmpiError, match="not contiguous"):
        comm.Bcast(torch.zeros(4, 4, device="cuda").t())
