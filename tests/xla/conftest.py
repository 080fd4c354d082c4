"""The xla tests reuse the op tables of tests/lax and tests/numpy; they need jaxlib."""
import os
import sys

_TESTS = os.path.dirname(os.path.dirname(__file__))
sys.path.insert(0, os.path.join(_TESTS, "lax"))
sys.path.insert(0, os.path.join(_TESTS, "numpy"))
