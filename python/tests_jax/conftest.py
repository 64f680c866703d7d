# SPDX-License-Identifier: BSD-3-Clause
"""gmpi.jax's tests: every rank runs every test in the same order (the calls inside are matched)
and asserts its own values. 64-bit types on, so int64/float64 arrays stay 64-bit."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
