"""cumsum/cumprod round every running value to the input's dtype, as NumPy does, on
every path: the eager impl, the ``interp`` backend and the default (native) backend.
In float16 a float32 accumulator gives different answers (an overflow to inf that a
float32 product survives, sums that drift by an ulp), and the order of the steps shows,
so ``reverse`` must accumulate from the end as ``flip(cumsum(flip(x)))`` does."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import plait
from plait import lax
from plait.core import dtypes

_rng = np.random.default_rng(7)
F16_CASES = [
    (np.array([-548.5, 20688, 0], np.float16), 0),               # -inf * 0 is nan
    ((_rng.standard_normal(300) * 100).astype(np.float16), 0),  # float32 sums drift
    ((_rng.random((5, 40)) * 3).astype(np.float16), 1),
    ((_rng.random((40, 3)) * 3).astype(np.float16), 0),
]


def _numpy(x, name, axis, reverse):
    fn = getattr(np, name)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if reverse:
            return np.flip(fn(np.flip(x, axis), axis=axis), axis)
        return fn(x, axis=axis)


def _all(xs):
    return tuple(getattr(lax, name)(x, axis, reverse)
                 for x, (_, axis) in zip(xs, F16_CASES)
                 for name in ("cumsum", "cumprod") for reverse in (False, True))


@pytest.mark.parametrize("backend", ["eager", "interp", None])
def test_float16_cumsum_cumprod_round_each_step_like_numpy(backend):
    xs = [x for x, _ in F16_CASES]
    fn = _all if backend == "eager" else plait.jit(_all, backend=backend)
    got = iter(fn(xs))
    for x, axis in F16_CASES:
        for name in ("cumsum", "cumprod"):
            for reverse in (False, True):
                g, want = np.asarray(next(got)), _numpy(x, name, axis, reverse)
                assert g.dtype == np.float16
                np.testing.assert_array_equal(g, want, err_msg=f"{name} rev={reverse}")


@pytest.mark.skipif(dtypes.bfloat16 is None, reason="bfloat16 needs ml_dtypes")
def test_bfloat16_cumsum_rounds_each_step_eagerly():
    x = (_rng.standard_normal(64) * 50).astype(dtypes.bfloat16)
    want, run = [], None
    for v in x.astype(np.float32):
        run = v if run is None else np.float32(run) + v
        run = float(np.asarray(run, np.float32).astype(dtypes.bfloat16))
        want.append(run)
    got = np.asarray(lax.cumsum(x, 0)).astype(np.float32)
    np.testing.assert_array_equal(got, np.asarray(want, np.float32))
