"""The native sweeps reuse the op tables of tests/lax and tests/numpy; ``x86_gcc`` is the
toolchain of the tests that read GCC's vectorization report."""
import os
import platform
import sys

import pytest

from plait.codegen import toolchain

_TESTS = os.path.dirname(os.path.dirname(__file__))
sys.path.insert(0, os.path.join(_TESTS, "lax"))
sys.path.insert(0, os.path.join(_TESTS, "numpy"))


@pytest.fixture
def x86_gcc():
    """The toolchain when it is GCC targeting x86-64 (whose -fopt-info these tests read)."""
    tc = toolchain.find_toolchain()
    if tc is None or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("needs a C compiler targeting x86-64 (the vectorization report is "
                    "GCC's -fopt-info on x86-64 targets)")
    if "clang" in tc.version.lower():
        pytest.skip(f"the vectorization report is GCC's; the compiler is {tc.version}")
    return tc
