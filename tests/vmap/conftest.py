"""The vmap sweep reuses the primitive op table of tests/lax."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "lax"))
