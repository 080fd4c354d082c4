"""The vmap sweeps reuse the op tables of tests/lax (primitives) and tests/numpy
(plait.numpy functions)."""
import os
import sys

_TESTS = os.path.dirname(os.path.dirname(__file__))
for _d in ("lax", "numpy"):
    sys.path.insert(0, os.path.join(_TESTS, _d))
