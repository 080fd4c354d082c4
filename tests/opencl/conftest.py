"""The opencl tests reuse the op tables of tests/lax and tests/numpy and the xla tests'
chunked runner; they need pyopencl and an OpenCL platform (PoCL in CI). PoCL builds
without optimization (``opencl_build_options``): its code generation is most of these
tests' time, and they test plait's kernels, not PoCL's optimizer (the benchmarks build
with the defaults)."""
import os
import sys

import plait

_TESTS = os.path.dirname(os.path.dirname(__file__))
sys.path.insert(0, os.path.join(_TESTS, "lax"))
sys.path.insert(0, os.path.join(_TESTS, "numpy"))

if "PLAIT_OPENCL_BUILD_OPTIONS" not in os.environ:
    plait.config.opencl_build_options = "-cl-opt-disable"
