"""Every op-table case compiled by the native backend agrees with the reference backend.

Cases are compiled in chunks (one jitted function computing many cases, so one C
compile per chunk) and each output is compared with the interp backend's value
on the same inputs; the chunk also records which primitives ran as native
kernels rather than on the host.
"""
from __future__ import annotations

import numpy as np
import pytest

import plait
from prim_table import CASES

CHUNK = 120
_TOL = {np.dtype("float16"): 4e-3, np.dtype("float32"): 3e-5, np.dtype("float64"): 1e-11,
        np.dtype("complex64"): 3e-5, np.dtype("complex128"): 1e-11}


def _chunks():
    return [CASES[i:i + CHUNK] for i in range(0, len(CASES), CHUNK)]


def _run(cases, backend, args):
    def f(*flat):
        outs, k = [], 0
        for c, a in zip(cases, args):
            r = c.fn(*flat[k:k + len(a)])
            k += len(a)
            outs.append(list(r) if isinstance(r, (list, tuple)) else [r])
        return outs
    flat = [x for a in args for x in a]
    return plait.jit(f, backend=backend)(*flat)


@pytest.mark.parametrize("chunk", range(len(_chunks())))
def test_native_matches_interp(chunk):
    cases = _chunks()[chunk]
    args = [c.make_args(np.random.default_rng(7)) for c in cases]
    want = _run(cases, "interp", args)
    got = _run(cases, "native", args)
    for c, g, w in zip(cases, got, want):
        for gi, wi in zip(g, w):
            gi, wi = np.asarray(gi), np.asarray(wi)
            assert gi.dtype == wi.dtype and gi.shape == wi.shape, c.id
            if gi.dtype.kind in "fc":
                tol = max(_TOL[gi.dtype], c.rtol or 0)
                np.testing.assert_allclose(gi, wi, rtol=tol, atol=tol, equal_nan=True,
                                           err_msg=c.id)
            else:
                np.testing.assert_array_equal(gi, wi, err_msg=c.id)
