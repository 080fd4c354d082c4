"""The op-table sweep: each case's lax function (eager) against its oracle, and
each primitive's abstract_eval against the shape/dtype its impl returns."""
from __future__ import annotations

import numpy as np
import pytest

import plait.lax as lax  # noqa: F401  (registers every primitive)
from plait.core.aval import ShapedArray

from prim_table import CASES

_TOL = {np.dtype("float16"): 2e-3, np.dtype("float32"): 2e-5, np.dtype("complex64"): 2e-5,
        np.dtype("float64"): 1e-12, np.dtype("complex128"): 1e-12}


def _args(case, seed=0):
    return case.make_args(np.random.default_rng(seed))


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_values_against_oracle(case):
    args = _args(case)
    got = _as_list(case.fn(*args))
    want = _as_list(case.oracle(*[a.copy() for a in args]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if g.dtype.kind in "fc":
            tol = case.rtol or _TOL[g.dtype]
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_abstract_eval_matches_impl(case):
    args = _args(case, seed=1)
    avals = [ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args]
    abstract = _as_list(case.prim.abstract_eval(*avals, **case.params))
    concrete = _as_list(case.prim.impl(*args, **case.params))
    assert len(abstract) == len(concrete)
    for a, c in zip(abstract, concrete):
        c = np.asarray(c)   # some elementwise impls return NumPy scalars for 0-d inputs
        assert a.shape == c.shape and a.dtype == c.dtype, (a, c.shape, c.dtype)


def test_impl_does_not_modify_inputs():
    for case in CASES:
        args = _args(case, seed=2)
        frozen = []
        for a in args:
            a = np.array(a)
            a.flags.writeable = False
            frozen.append(a)
        case.prim.impl(*frozen, **case.params)   # raises if an impl writes to an input


def test_table_covers_lax_primitives():
    """Every primitive defined in the modules this table owns has at least one row."""
    import importlib
    from plait.lax import (elementwise, shape_ops, reductions, cumulative, contractions,
                           windowed, indexing, sorting, linalg)
    from plait.core.primitive import Primitive
    fft = importlib.import_module("plait.lax.fft")   # plait.lax.fft is the function
    defined = {v for m in (elementwise, shape_ops, reductions, cumulative, contractions, windowed,
                           indexing, sorting, fft, linalg)
               for k, v in vars(m).items() if k.endswith("_p") and isinstance(v, Primitive)}
    covered = {c.prim for c in CASES}
    assert not defined - covered, sorted(p.name for p in defined - covered)


def test_static_params_are_hashable():
    for case in CASES:
        hash(tuple(sorted(case.params.items())))
