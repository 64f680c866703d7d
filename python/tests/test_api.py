# SPDX-License-Identifier: BSD-3-Clause
"""Non-communicating parts: statuses against the header, names, errors, buffer checks."""
import os
import re

import numpy as np
import pytest

import gmpi

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "gmpi.h")


def header_statuses():
    text = open(HEADER).read()
    pairs = re.findall(r"\bGMPI_(SUCCESS|ERR_\w+)\s*=\s*(\d+)", text)  # plain members
    return {int(v): "GMPI_" + n for n, v in pairs}


@pytest.mark.skipif(not os.path.exists(HEADER), reason="no include/gmpi.h beside the package")
def test_status_table_matches_header():
    assert header_statuses() == gmpi.STATUS_NAMES
    assert gmpi.GMPI_ERR_TIMEOUT == 7 and gmpi.ERR_INVALID_ARG == 1 and gmpi.SUCCESS == 0


def test_ops_have_values_and_names():
    ops = [gmpi.SUM, gmpi.PROD, gmpi.MIN, gmpi.MAX, gmpi.AVG, gmpi.BAND, gmpi.BOR, gmpi.BXOR,
           gmpi.LAND, gmpi.LOR, gmpi.LXOR]
    assert [int(o) for o in ops] == list(range(11))
    assert repr(gmpi.MAX) == "gmpi.MAX"


def test_unknown_op_name_is_gmpi_error():
    with pytest.raises(gmpi.GmpiError) as e:
        gmpi.Op("plus")
    assert e.value.status == gmpi.ERR_INVALID_ARG
    assert e.value.name == "GMPI_ERR_INVALID_ARG"
    assert "plus" in e.value.detail and "gmpi_op_from_name" in e.value.detail
    assert isinstance(e.value, RuntimeError)


def test_versions():
    g, m, n = gmpi.versions()
    assert g.startswith("gmpi ") and gmpi.__version__ in g
    assert m and n


def test_comm_properties(comm):
    assert 0 <= comm.rank < comm.size
    assert comm.Get_rank() == comm.rank and comm.Get_size() == comm.size
    assert comm.backend in ("cpu", "cuda")
    assert (comm.device == -1) == (comm.backend == "cpu")


def test_non_contiguous_refused(comm):
    a = np.zeros(8, np.float32)
    with pytest.raises(gmpi.GmpiError) as e:
        comm.Allreduce(gmpi.IN_PLACE, a[::2])
    assert "not contiguous" in str(e.value) and e.value.status == gmpi.ERR_INVALID_ARG


def test_bad_buffers_refused(comm):
    ro = np.zeros(4, np.int32)
    ro.flags.writeable = False
    with pytest.raises(gmpi.GmpiError, match="read-only"):
        comm.Bcast(ro)
    with pytest.raises(gmpi.GmpiError, match="dtype object"):
        comm.Bcast(np.array([None, 1], dtype=object))
    with pytest.raises(gmpi.GmpiError, match="not a buffer"):
        comm.Bcast([1, 2, 3])
    with pytest.raises(gmpi.GmpiError, match="byte order"):
        comm.Bcast(np.zeros(2, ">f4"))
    with pytest.raises(gmpi.GmpiError, match="holds 3 elements and 'recvbuf' 4"):
        comm.Allreduce(np.zeros(3, np.float32), np.zeros(4, np.float32))


def test_c_error_carries_last_error(comm):
    """A bad root fails in C on every rank alike: status, name and gmpi_last_error()."""
    with pytest.raises(gmpi.GmpiError) as e:
        comm.Bcast(np.zeros(2, np.int8), root=comm.size)
    assert e.value.status == gmpi.ERR_INVALID_ARG
    assert "root" in e.value.detail and "gmpi_bcast" in e.value.detail
    assert e.value.detail == gmpi.last_error()
    assert "(rank %d)" % comm.rank in e.value.detail


class DLPackOnly:
    """A producer seen only through DLPack (as a PyTorch tensor is), here over numpy memory."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_host_buffer_no_copy(comm):
    a = np.full(6, comm.rank + 1, np.int64)
    comm.Allreduce(gmpi.IN_PLACE, DLPackOnly(a), op=gmpi.SUM)  # written through a's memory
    assert (a == comm.size * (comm.size + 1) // 2).all()
    with pytest.raises(gmpi.GmpiError, match="not contiguous"):
        comm.Bcast(DLPackOnly(np.zeros(8)[::2]))


class FakeDevice:
    def __init__(self, typestr, strides=None):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": typestr, "data": (4096, False),
                                         "strides": strides, "version": 3}


def test_cuda_array_interface_checked(comm):
    with pytest.raises(gmpi.GmpiError, match="dtype datetime64"):
        comm.Bcast(FakeDevice("<M8[s]"))
    with pytest.raises(gmpi.GmpiError, match="not contiguous"):
        comm.Bcast(FakeDevice("<f4", strides=(8,)))
    if comm.backend == "cpu":  # never dereferenced: refused before the C call
        with pytest.raises(gmpi.GmpiError, match="device memory, and this comm's backend is cpu"):
            comm.Bcast(FakeDevice("<f4"))


PYPROJECT = os.path.join(os.path.dirname(__file__), "..", "pyproject.toml")


@pytest.mark.skipif(not os.path.exists(PYPROJECT), reason="no pyproject.toml beside the tests")
def test_pyproject_version_is_the_library_version():
    text = open(PYPROJECT).read()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == gmpi.__version__
