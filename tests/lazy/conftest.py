"""Lazy tests run on the reference (interp) backend, each with an empty trace cache and
zeroed lazy counters; ``test_lazy_native.py`` covers the native backend."""
import os
import sys

import pytest

import plait
from plait import lazy

sys.path.insert(0, os.path.dirname(__file__))       # for lazy_mlp (import-mode=importlib)


@pytest.fixture(autouse=True)
def fresh_lazy_state():
    saved = plait.config.backend
    plait.config.backend = "interp"
    lazy.step()
    lazy.clear_cache()
    lazy.reset_metrics()
    yield
    plait.config.backend = saved
