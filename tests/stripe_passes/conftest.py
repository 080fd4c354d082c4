"""Stripe pass tests use the shared Tile programs of tests/stripe."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "stripe"))
