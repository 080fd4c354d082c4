"""Differential check: the native backend against the xla backend on the lax op table.

Two independent compilers of the same graphs, each the other's oracle. Run by hand
(it compiles every chunk twice, C and XLA, so it is not part of the suite):

    python tests/xla/native_vs_xla.py

Prints each case whose outputs differ beyond the sweep tolerances, and a count.
"""
from __future__ import annotations

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", ".."))     # this checkout's plait
sys.path.insert(0, os.path.join(_HERE, "..", "lax"))
sys.path.insert(0, _HERE)

from test_xla_sweep import CASES  # noqa: E402
from test_xla_sweep import compare, run_cases  # noqa: E402


def main() -> int:
    chunk = 200
    bad: list[str] = []
    for i in range(0, len(CASES), chunk):
        cases = CASES[i:i + chunk]
        args = [c.make_args(np.random.default_rng(7)) for c in cases]
        bad += compare(cases, run_cases(cases, "xla", args), run_cases(cases, "native", args))
    for b in bad:
        print(b)
    print(f"{len(bad)} of {len(CASES)} cases differ between native and xla")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
