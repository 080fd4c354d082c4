"""The opencl tests reuse the op tables of tests/lax and tests/numpy and the xla tests'
chunked runner; they need pyopencl and an OpenCL platform (PoCL in CI)."""
import os
import sys

_TESTS = os.path.dirname(os.path.dirname(__file__))
sys.path.insert(0, os.path.join(_TESTS, "lax"))
sys.path.insert(0, os.path.join(_TESTS, "numpy"))
