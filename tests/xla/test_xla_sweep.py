"""Every lax op-table case compiled by the xla backend agrees with the reference backend.

Cases are compiled in chunks (one jitted function computing many cases, so one XLA
compile per chunk) and each output is compared with the interp backend's value.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402
from plait.backends.xla.rules import REFUSED, lowering_rule  # noqa: E402
from plait.core.primitive import ALL_PRIMITIVES  # noqa: E402
from prim_table import CASES  # noqa: E402

CHUNK = 200
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


def test_every_row_is_swept_and_the_one_refusal_is_clear():
    """No op-table row is left out of the sweep: the only refused primitive is
    custom_lin, which no executable graph holds (its impl raises on every backend)."""
    assert sorted(REFUSED) == ["custom_lin"]
    assert not [c.id for c in CASES if c.prim.name in REFUSED]
    with pytest.raises(plait.errors.PlaitValueError, match="cannot lower custom_lin"):
        lowering_rule(ALL_PRIMITIVES["custom_lin"])


@pytest.mark.parametrize("chunk", range(len(_chunks())))
def test_xla_matches_interp(chunk):
    cases = _chunks()[chunk]
    args = [c.make_args(np.random.default_rng(7)) for c in cases]
    want = run_cases(cases, "interp", args)
    got = run_cases(cases, "xla", args)
    bad = compare(cases, got, want)
    assert not bad, "\n".join(bad)
