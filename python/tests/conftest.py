# SPDX-License-Identifier: BSD-3-Clause
"""Every rank runs every test in the same order (collectives inside tests are matched); each
test asserts its values on every rank. One gmpi communicator on the world for the session."""
import os
import sys

import pytest

# The package from this source tree unless PYTHONPATH names another (the installed one).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
try:  # mpi4py, when present, owns MPI's init and finalize (gmpi then leaves them alone)
    from mpi4py import MPI  # noqa: F401
except ImportError:
    pass

import gmpi  # noqa: E402


@pytest.fixture(scope="session")
def comm():
    c = gmpi.init()
    yield c
    c.Free()
