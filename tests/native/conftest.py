"""The native sweeps reuse the op tables of tests/lax and tests/numpy."""
import os
import sys

_TESTS = os.path.dirname(os.path.dirname(__file__))
sys.path.insert(0, os.path.join(_TESTS, "lax"))
sys.path.insert(0, os.path.join(_TESTS, "numpy"))
