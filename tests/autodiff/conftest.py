"""Make the helper modules in tests/autodiff importable by plain name."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
