"""lax op-table cases compiled by the opencl backend agree with the reference backend.

Cases are compiled in chunks (one jitted function computing many cases, so one OpenCL
program per chunk) and each output is compared with the interp backend's value, with
the tolerances of the xla sweep. PoCL generates machine code per kernel at its first
launch (about 0.3 s each on the CI machine), so by default the sweep runs the first
case of every primitive with a float first argument and the first with another
dtype; ``PLAIT_OPENCL_FULL=1`` runs all 3125 cases (they pass: 13 chunks).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("pyopencl")

import plait  # noqa: E402
from prim_table import CASES as ALL_CASES  # noqa: E402


def _representatives(cases) -> list:
    seen = {}
    for c in cases:
        args = c.make_args(np.random.default_rng(7))
        kind = np.asarray(args[0]).dtype.kind == "f" if args else False
        seen.setdefault((c.prim.name, kind), c)
    return list(seen.values())


CASES = ALL_CASES if os.environ.get("PLAIT_OPENCL_FULL") else _representatives(ALL_CASES)

CHUNK = 250
_TOL = {np.dtype("float16"): 4e-3, np.dtype("float32"): 3e-5, np.dtype("float64"): 1e-11,
        np.dtype("complex64"): 3e-5, np.dtype("complex128"): 1e-11}


def _chunks():
    return [CASES[i:i + CHUNK] for i in range(0, len(CASES), CHUNK)]


def run_cases(cases, backend, args):
    def f(*flat):
        outs, k = [], 0
        for c, a in zip(cases, args):
            r = c.fn(*flat[k:k + len(a)])
            k += len(a)
            outs.append(list(r) if isinstance(r, (list, tuple)) else [r])
        return outs
    flat = [x for a in args for x in a]
    return plait.jit(f, backend=backend)(*flat)


def compare(cases, got, want) -> list:
    """The ids of cases whose outputs differ (dtype, shape or value)."""
    bad = []
    for c, g, w in zip(cases, got, want):
        for gi, wi in zip(g, w):
            gi, wi = np.asarray(gi), np.asarray(wi)
            try:
                assert gi.dtype == wi.dtype and gi.shape == wi.shape
                if gi.dtype.kind in "fc":
                    tol = max(_TOL[gi.dtype], c.rtol or 0)
                    np.testing.assert_allclose(gi, wi, rtol=tol, atol=tol, equal_nan=True)
                else:
                    np.testing.assert_array_equal(gi, wi)
            except AssertionError as e:
                bad.append(f"{c.id}: {str(e)[:300]}")
                break
    return bad


@pytest.mark.parametrize("chunk", range(len(_chunks())))
def test_opencl_matches_interp(chunk):
    cases = _chunks()[chunk]
    args = [c.make_args(np.random.default_rng(7)) for c in cases]
    want = run_cases(cases, "interp", args)
    got = run_cases(cases, "opencl", args)
    bad = compare(cases, got, want)
    assert not bad, "\n".join(bad)
