"""Lazy arrays through ``plait.numpy``: values equal eager plait and NumPy."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lazy

RNG = np.random.default_rng(0)
A = RNG.standard_normal((6, 5)).astype(np.float32)
B = RNG.standard_normal((5, 4)).astype(np.float32)
IDX = np.array([4, 0, 2])

PROGRAMS = {
    "op_chain": lambda m, a, b: m.tanh(a * 2.0 - 1.0) / (1.0 + m.exp(-a)) + a ** 2,
    "matmul": lambda m, a, b: m.maximum(a @ b, 0.0) @ b.T,
    "reductions": lambda m, a, b: (m.sum(a, axis=0), a.mean(), m.prod(a[:2], axis=1),
                                   m.cumsum(a, axis=1)),
    "indexing": lambda m, a, b: (a[1:4, ::2], a[IDX], a[:, -1], a[2], a[None, 3, 1:]),
    "shapes": lambda m, a, b: m.concatenate([a.reshape(5, 6), b.T.reshape(4, 5).T], axis=1),
    "broadcast_where": lambda m, a, b: m.where(a > 0, a, 0.1 * a) + b[:, 0][None, :5],
    "dtype_promotion": lambda m, a, b: (a.astype(m.int32) + 1) * 0.5,
}


def _leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_values_match_eager_and_numpy(name):
    f = PROGRAMS[name]
    expect = _leaves(f(np, A, B))
    eager = _leaves(f(pnp, plait.device_put(A), plait.device_put(B)))
    lazy_out = _leaves(f(pnp, lazy.asarray(A), lazy.asarray(B)))
    assert all(isinstance(o, lazy.LazyArray) for o in lazy_out)
    lazy.step()
    assert lazy.metrics()["materializations"] == 1
    for e, p, l in zip(expect, eager, lazy_out):
        assert l.dtype == p.dtype and l.shape == e.shape
        np.testing.assert_array_equal(np.asarray(l), np.asarray(p))
        np.testing.assert_allclose(np.asarray(l), e, rtol=2e-5, atol=1e-6)


def test_dynamic_index_with_a_lazy_index_array():
    x = lazy.asarray(A)
    i = lazy.asarray(IDX)
    np.testing.assert_array_equal(np.asarray(x[i]), A[IDX])


def test_shape_error_from_numpy_api_at_user_line():
    a = lazy.asarray(A)
    with pytest.raises(plait.errors.PlaitError) as info:
        a @ a                                             # (6,5) @ (6,5)
    assert f"test_lazy_numpy.py:{info.tb.tb_lineno}" in str(info.value)
    assert lazy.metrics()["materializations"] == 0


def test_python_comparison_operators_materialize():
    total = pnp.sum(lazy.asarray(np.arange(5.0)))
    n = 0
    while total > 1.0:
        total = total * 0.5
        n += 1
    assert n == 4 and float(total) == pytest.approx(0.625)
