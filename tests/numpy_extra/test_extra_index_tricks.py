"""Index helpers vs NumPy: unravel/ravel_multi_index, indices, *_indices, choose, select,
compress, extract, isin."""
import numpy as np
import pytest

import plait.numpy as pnp
from plait.errors import PlaitValueError, NonConcreteBooleanIndexError

from extra_helpers import assert_same, check, rand, ijit


def test_unravel_and_ravel_multi_index():
    idx = np.array([[0, 5], [17, 23]])
    for order in ("C", "F"):
        check(lambda i: pnp.unravel_index(i, (2, 3, 4), order),
              lambda i: np.unravel_index(i, (2, 3, 4), order), idx)
        multi = np.unravel_index(idx, (2, 3, 4), order)
        check(lambda a, b, c: pnp.ravel_multi_index((a, b, c), (2, 3, 4), order=order),
              lambda a, b, c: np.ravel_multi_index((a, b, c), (2, 3, 4), order=order), *multi)
    for mode in ("wrap", "clip"):
        check(lambda a, b: pnp.ravel_multi_index((a, b), (3, 4), mode=mode),
              lambda a, b: np.ravel_multi_index((a, b), (3, 4), mode=mode),
              np.array([-1, 3, 7]), np.array([[5], [-6]]))
    with pytest.raises(PlaitValueError, match="out of bounds"):
        pnp.unravel_index(24, (2, 3, 4))
    with pytest.raises(PlaitValueError, match="invalid entry"):
        pnp.ravel_multi_index(([0, 3],), (3,))


def test_indices_and_triangles():
    for dims in [(2, 3), (4,), (2, 1, 3)]:
        assert_same(pnp.indices(dims), np.indices(dims))
        assert_same(pnp.indices(dims, sparse=True), np.indices(dims, sparse=True))
    assert_same(pnp.indices((2, 2), dtype=np.int8), np.indices((2, 2), dtype=np.int8))
    assert_same(pnp.diag_indices(3, 3), np.diag_indices(3, 3))
    assert_same(pnp.diag_indices_from(np.ones((2, 2))), np.diag_indices_from(np.ones((2, 2))))
    for k in (-1, 0, 2):
        assert_same(pnp.tril_indices(4, k, 5), np.tril_indices(4, k, 5))
        assert_same(pnp.triu_indices(4, k), np.triu_indices(4, k))
        x = np.ones((3, 5))
        assert_same(pnp.tril_indices_from(x, k), np.tril_indices_from(x, k))
        assert_same(pnp.triu_indices_from(x, k), np.triu_indices_from(x, k))
    x = rand((4, 4), np.float32)
    check(lambda a: a[pnp.triu_indices(4, 1)], lambda a: a[np.triu_indices(4, 1)], x)


def test_choose_and_select():
    a = np.array([[0, 2, 1], [2, 2, 0]])
    choices = [rand((3,), np.int8, 1), rand((2, 3), np.float32, 2), np.float64(7.0)]
    check(lambda a, c0, c1: pnp.choose(a, [c0, c1, 7.0]),
          lambda a, c0, c1: np.choose(a, [c0, c1, 7.0]), a, choices[0], choices[1])
    for mode in ("wrap", "clip"):
        check(lambda a: pnp.choose(a, [1, 2, 3], mode=mode),
              lambda a: np.choose(a, [1, 2, 3], mode=mode), np.array([-2, 0, 5, 3]))
    with pytest.raises(PlaitValueError, match="invalid entry"):
        pnp.choose([3], [1, 2, 3])
    x = np.arange(8, dtype=np.int8)
    for default in (0, 0.5, np.int64(3)):
        check(lambda x: pnp.select([x > 5, x < 2], [x, x * 2], default),
              lambda x: np.select([x > 5, x < 2], [x, x * 2], default), x)


def test_compress_extract_isin():
    x = np.arange(12).reshape(3, 4)
    cond = np.array([True, False, True])
    for axis in (0, 1, None):
        assert_same(pnp.compress(cond, x, axis), np.compress(cond, x, axis))
    check(lambda c, x: pnp.compress(c, x, 1, size=3),
          lambda c, x: np.concatenate([np.compress(c, x, 1), np.zeros((3, 1), x.dtype)], 1),
          cond, x)
    assert_same(pnp.extract(x % 3 == 0, x), np.extract(x % 3 == 0, x))
    with pytest.raises(NonConcreteBooleanIndexError):
        ijit(lambda c, x: pnp.compress(c, x))(cond, x)
    t = np.array([[1, 5], [7, 11]])
    for invert in (False, True):
        check(lambda x, t: pnp.isin(x, t, invert=invert), lambda x, t: np.isin(x, t, invert=invert),
              x, t)
    check(lambda x: pnp.isin(x, [2.5, 3.0]), lambda x: np.isin(x, [2.5, 3.0]), x)
