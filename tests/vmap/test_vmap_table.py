"""The op table's vmap column: for every case of ``tests/lax/prim_table.py`` and
several ``in_axes`` choices, ``vmap(f)`` equals stacking ``f`` over a Python loop.

Everything runs eagerly (the reference semantics) with a batch of 3 lanes whose
operands come from different seeds. Integer and boolean results must agree
exactly; floating results within a dtype-aware tolerance.
"""
from __future__ import annotations

import numpy as np
import pytest

import plait.lax as lax  # noqa: F401  (registers every primitive)
from plait.core.primitive import ALL_PRIMITIVES
from plait.transforms.batching import vmap

from prim_table import CASES

B = 3
_TOL = {np.dtype("float16"): 2e-3, np.dtype("float32"): 2e-5, np.dtype("complex64"): 2e-5,
        np.dtype("float64"): 1e-12, np.dtype("complex128"): 1e-12}


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _variants(n: int) -> list[tuple[tuple, int]]:
    """``(in_axes, out_axis)`` choices for a function of ``n`` operands."""
    if n == 0:
        return [((), 0)]
    out = [((0,) * n, 0), ((-1,) * n, -1)]
    if n >= 2:
        out.append(((0,) + (None,) * (n - 1), 0))
        out.append(((None,) + (-1,) * (n - 1), -1))
        out.append(((-1,) + (0,) * (n - 1), 0))
    return out


def _stack(xs, axis):
    return np.stack([np.asarray(x) for x in xs], axis=axis if axis >= 0 else xs[0].ndim + 1 + axis)


def _compare(got, want, case):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind in "fc":
        tol = case.rtol or _TOL[got.dtype]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_vmap_matches_loop(case):
    lanes = [case.make_args(np.random.default_rng(seed)) for seed in range(B)]
    n = len(lanes[0])
    for in_axes, out_axis in _variants(n):
        args = [lanes[0][i] if a is None else _stack([lane[i] for lane in lanes], a)
                for i, a in enumerate(in_axes)]
        per_lane = [[lanes[0][i] if a is None else lanes[k][i] for i, a in enumerate(in_axes)]
                    for k in range(B)]
        want = [_stack(outs, out_axis) for outs in
                zip(*[[np.asarray(o) for o in _as_list(case.fn(*la))] for la in per_lane])]
        got = vmap(case.fn, in_axes=in_axes, out_axes=out_axis,
                   axis_size=B if n == 0 else None)(*args)
        got = [np.asarray(g) for g in _as_list(got)]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w, case)


def test_every_primitive_has_a_batch_rule():
    import plait  # noqa: F401  (registers the higher-order and custom primitives)
    missing = sorted(name for name, p in ALL_PRIMITIVES.items() if not p.has_rule("batch"))
    assert not missing, missing
