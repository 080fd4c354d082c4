"""Sorting and searching vs NumPy: sort, argsort, lexsort, partition, searchsorted,
digitize, unique (eager and size=), bincount, histogram."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import ConcretizationError, PlaitValueError

from extra_helpers import assert_same, check, rand, ijit

DTYPES = [np.bool_, np.int8, np.uint32, np.int64, np.float16, np.float32, np.float64,
          np.complex64]


def _with_specials(x):
    """Ties, NaN and signed zeros for float inputs."""
    x = x.copy()
    if x.dtype.kind == "f" and x.size >= 6:
        flat = x.reshape(-1)
        flat[0], flat[1], flat[2], flat[3] = np.nan, -0.0, 0.0, flat[5]
    return x


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_argsort(dtype):
    x = _with_specials(rand((4, 7), dtype))
    for axis in (-1, 0, None):
        check(lambda a: pnp.sort(a, axis), lambda a: np.sort(a, axis), x)
        check(lambda a: pnp.argsort(a, axis), lambda a: np.argsort(a, axis, stable=True), x)
    check(lambda a: a.sort(), lambda a: np.sort(a), x)
    check(lambda a: a.argsort(axis=0), lambda a: np.argsort(a, axis=0, stable=True), x)


def test_sort_descending_is_stable():
    x = np.array([3, 1, 3, 2, 1, 3])
    assert_same(pnp.sort(x, descending=True), np.array([3, 3, 3, 2, 1, 1]))
    assert_same(pnp.argsort(x, descending=True), np.array([0, 2, 5, 3, 1, 4]))


def test_lexsort():
    a, b = rand((10,), np.int8, 1), rand((10,), np.int8, 2)
    check(lambda a, b: pnp.lexsort((a, b)), lambda a, b: np.lexsort((a, b)), a, b)
    check(lambda a, b: pnp.lexsort([a, b, a]), lambda a, b: np.lexsort([a, b, a]), a, b)
    k = rand((3, 8), np.float32)
    check(pnp.lexsort, np.lexsort, k)
    m = rand((2, 4, 5), np.int32)
    check(lambda m: pnp.lexsort(m, axis=0), lambda m: np.lexsort(m, axis=0), m)


@pytest.mark.parametrize("kth", [0, 3, -1, (1, 4)])
def test_partition_property(kth):
    x = rand((3, 9), np.float32)
    for fn in (lambda a: pnp.partition(a, kth), lambda a: ijit(lambda b: pnp.partition(b, kth))(a)):
        p = np.asarray(fn(x))
        assert p.dtype == x.dtype
        for k in np.atleast_1d(kth):
            np.testing.assert_array_equal(p[:, k], np.partition(x, kth)[:, k])
            assert (p[:, :k % 9] <= p[:, [k]]).all() and (p[:, k % 9:] >= p[:, [k]]).all()
    i = np.asarray(pnp.argpartition(x, kth, axis=-1))
    assert i.dtype == np.int64
    np.testing.assert_array_equal(np.take_along_axis(x, i, -1)[:, np.atleast_1d(kth)],
                                  np.partition(x, kth)[:, np.atleast_1d(kth)])
    with pytest.raises(PlaitValueError, match="out of bounds"):
        pnp.partition(x, 9)


def test_sort_complex():
    for dt in (np.bool_, np.int16, np.uint8, np.int32, np.float16, np.float32, np.complex64):
        check(pnp.sort_complex, np.sort_complex, rand((5,), dt))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64, np.uint8, np.bool_,
                                   np.complex128])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(dtype, side):
    a = np.sort(_with_specials(rand((11,), dtype, 1)))
    v = _with_specials(rand((3, 4), dtype, 2))
    for method in (None, "sort"):
        check(lambda a, v: pnp.searchsorted(a, v, side, method=method),
              lambda a, v: np.searchsorted(a, v, side), a, v)
    check(lambda a, v: a.searchsorted(v[0, 0], side=side),
          lambda a, v: np.searchsorted(a, v[0, 0], side=side), a, v)
    perm = np.argsort(a[::-1], stable=True)
    check(lambda a, v: pnp.searchsorted(a, v, side, sorter=perm),
          lambda a, v: np.searchsorted(a, v, side, sorter=perm), a[::-1].copy(), v)


def test_searchsorted_large_uses_sort():
    a = np.sort(rand((700,), np.float32, 1))
    v = rand((5, 30), np.float32, 2)
    v[0, :3] = a[:3]
    for side in ("left", "right"):
        check(lambda a, v: pnp.searchsorted(a, v, side), lambda a, v: np.searchsorted(a, v, side),
              a, v)
    text = str(plait.make_graph(lambda a, v: pnp.searchsorted(a, v))(a, v))
    assert "sort" in text and "reduce_sum" not in text


def test_searchsorted_mixed_dtypes_and_scalars():
    a = np.array([1, 3, 5], np.int32)
    assert_same(pnp.searchsorted(a, 2.5), np.searchsorted(a, 2.5))
    assert_same(pnp.searchsorted(a, np.array([2.5, 5.0], np.float32), "right"),
                np.searchsorted(a, np.array([2.5, 5.0], np.float32), "right"))


def test_digitize():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 3.0, 7.0])
    for bins in (np.array([0.0, 1.0, 2.5, 3.0]), np.array([3.0, 2.5, 1.0, 0.0]), np.array([1.0])):
        for right in (False, True):
            check(lambda x, b: pnp.digitize(x, b, right), lambda x, b: np.digitize(x, b, right),
                  x, bins)


@pytest.mark.parametrize("dtype", [np.int16, np.float32, np.bool_])
def test_unique_eager(dtype):
    x = _with_specials(rand((4, 5), dtype, 3))
    assert_same(pnp.unique(x), np.unique(x))
    assert_same(pnp.unique(x, True, True, True), np.unique(x, True, True, True))
    assert_same(pnp.unique(x, return_inverse=True, axis=0),
                np.unique(x, return_inverse=True, axis=0))
    assert_same(pnp.unique_values(x), np.sort(np.unique_values(x)))   # NumPy's order is unspecified
    assert_same(tuple(pnp.unique_counts(x)), tuple(np.unique_counts(x)))


@pytest.mark.parametrize("dtype", [np.int16, np.float32, np.float64])
def test_unique_sized_under_jit(dtype):
    x = _with_specials(rand((4, 5), dtype, 3))
    if dtype != np.int16:
        x.reshape(-1)[7] = np.nan      # two NaNs: equal_nan merges them
    vals, idx, inv, cnt = np.unique(x, True, True, True)
    n = len(vals)
    for size in (n - 2, n, n + 3):
        def want(a, size=size):
            pad = max(size - n, 0)
            return (np.concatenate([vals[:size], np.full(pad, vals[0], x.dtype)]),
                    np.concatenate([idx[:size], np.zeros(pad, np.int64)]),
                    inv.reshape(x.shape),
                    np.concatenate([cnt[:size], np.zeros(pad, np.int64)]))
        check(lambda a, size=size: pnp.unique(a, True, True, True, size=size), want, x)
    check(lambda a: pnp.unique(a, size=n + 1, fill_value=-7),
          lambda a: np.concatenate([vals, np.array([-7], x.dtype)]), x)


def test_unique_under_jit_without_size_raises():
    with pytest.raises(ConcretizationError, match="size=") as e:
        ijit(pnp.unique)(np.array([1, 2, 2]))
    assert "test_extra_sorting.py" in str(e.value)


def test_bincount_and_histogram():
    x = np.array([0, 1, 1, 3, 2, 1, 7])
    assert_same(pnp.bincount(x), np.bincount(x))
    assert_same(pnp.bincount(x, minlength=10), np.bincount(x, minlength=10))
    w = rand((7,), np.float32)
    assert_same(pnp.bincount(x, w), np.bincount(x, w))
    check(lambda x: pnp.bincount(x, length=9), lambda x: np.bincount(x, minlength=9), x)
    with pytest.raises(ConcretizationError, match="length="):
        ijit(pnp.bincount)(x)
    a = rand((50,), np.float32)
    for kw in ({}, {"bins": 4}, {"bins": [-2, 0, 0.5, 2]}, {"range": (-1, 1)},
               {"density": True}, {"weights": rand((50,), np.float64)}):
        assert_same(pnp.histogram(a, **kw), np.histogram(a, **kw))
    assert_same(pnp.histogram_bin_edges(a, 3), np.histogram_bin_edges(a, 3))
    with pytest.raises(ConcretizationError, match="histogram"):
        ijit(pnp.histogram)(a)
