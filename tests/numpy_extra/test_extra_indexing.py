"""NumPy indexing on plait arrays: x[idx] (basic, advanced, mixed, boolean), x.at[...]
updates, take/take_along_axis/put_along_axis, nonzero family, diagonal, trace, ix_."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import (NonConcreteBooleanIndexError, TracerIntegerConversionError,
                          PlaitValueError)

from extra_helpers import assert_same, check, rand, ijit

X = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
_rng = np.random.default_rng(1)
M4 = np.array([True, False, True, True])
M45 = _rng.random((4, 5)) < 0.4
M456 = _rng.random((4, 5, 6)) < 0.3
M5 = np.array([False, True, True, False, False])
M6 = np.array([True, False, False, False, False, True])
M6B = np.array([True, True, False, False, False, True])

BASIC = [
    0, -1, 3, (1, 2), (1, -2, 5), (-4, -5, -6), slice(None), slice(1, 3), slice(None, None, 2),
    slice(None, None, -1), slice(-2, None), slice(3, 0, -2), slice(10, 20), slice(-10, 2),
    slice(2, 2), Ellipsis, (Ellipsis, 0), (0, Ellipsis), None, (None, 0),
    (0, None, slice(None), None), (Ellipsis, None),
    (slice(1, None), Ellipsis, slice(None, None, -2)),
    (1, slice(None), 2), (), (slice(None, None, 3), slice(4, 0, -3), slice(None, None, -4)),
    np.int64(2), np.array(-1), (np.int32(1), slice(None), np.uint8(3)),
]
ADVANCED = [
    [0, 2], np.array([3, -1, 0]), ([0, 1], [2, 3]), ([0, 1], slice(None), [2, 3]),
    (slice(None), [0, 4], [1, 5]), (0, slice(None), [0, 1]), ([[0], [1]], [0, 1, 2]),
    ([1, 0], None, [0, 1]), (Ellipsis, [0, -1]), (None, Ellipsis, [0]),
    (slice(1, 3), [2, 0, 1], slice(None, None, 2)), ([0, 0, 0],), ([],), (slice(None), []),
    (np.array([[1, 2], [3, 0]]),), (slice(None), np.array([[1, 2], [3, 0]]), 0),
    (1, [1, 2], [3, 4]), ([1], 2, slice(None, 2)), (np.array(2), [1, 2]),
    (np.array([0, 1], np.uint8),), ([0, 1], [[0], [2]], [[[1]]]),
    (slice(None, None, -1), [0, 1], None, [2, 3]), (None, [1, 2], slice(None), -1),
    ([3, 2], slice(None, None, -2), [5, -6]), (np.array([-4, 3], np.int8), Ellipsis),
    (slice(None), slice(None), [5, 0, 5]),
]
BOOLEAN = [
    True, False, (Ellipsis, True), ([0, 1], Ellipsis, True), (None, False, 1), M4, M45, M456,
    (slice(None), M5), (M4, [0, 1, 4]), (0, M5), (M4, slice(None), M6B),
    (Ellipsis, M6), (1, M5, M6), (M45, 2), (slice(None, None, -1), M5, [0, 1]),
]


def _ids(table):
    return [repr(i)[:60] for i in table]


@pytest.mark.parametrize("idx", BASIC + ADVANCED + BOOLEAN, ids=_ids(BASIC + ADVANCED + BOOLEAN))
def test_getitem_matches_numpy(idx):
    check(lambda x: x[idx], lambda x: x[idx], X)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.float16, np.complex64])
def test_getitem_dtypes(dtype):
    x = rand((3, 4), dtype)
    for idx in [(1, slice(None, None, -1)), ([0, 2], [1, 3]), x[:, 0] if dtype == np.bool_ else 0]:
        check(lambda a: a[idx], lambda a: a[idx], x)


def test_traced_index_arrays():
    i, j = np.array([0, -1, 2]), np.array([[1], [-2]])
    check(lambda x, i: x[i], lambda x, i: x[i], X, i)
    check(lambda x, i, j: x[i, :, j], lambda x, i, j: x[i, :, j], X, i, j)
    check(lambda x, i, j: x[:, i, j], lambda x, i, j: x[:, i, j], X, i, j)
    check(lambda x, i, j: x[j, 1:3, None, i[:1]], lambda x, i, j: x[j, 1:3, None, i[:1]], X, i, j)


def test_traced_scalar_indices():
    for k in (0, 3, -1, -4):
        check(lambda x, k: x[k], lambda x, k: x[k], X, np.int64(k))
        check(lambda x, k: x[1, ..., k], lambda x, k: x[1, ..., k], X, np.int32(k))
        check(lambda x, k: x[k, :, [0, 2]], lambda x, k: x[k, :, [0, 2]], X, np.int64(k))
    check(lambda x, i, j: x[i, :, j], lambda x, i, j: x[i, :, j], X, np.int64(2),
          np.uint8(5))


def test_list_of_traced_scalars():
    f = ijit(lambda x, i, j: x[[i, j]])
    assert_same(f(X, np.int64(3), np.int64(-1)), X[[3, -1]])


def test_traced_out_of_range_index_is_clamped():
    got = ijit(lambda x, i: x[i])(X, np.array([7, -9]))
    assert_same(got, X[[3, 0]])


def test_index_errors():
    x = pnp.asarray(X)
    for bad in [4, -5, (0, 5), (0, 0, 6), [0, 4], ([0], [-6])]:
        with pytest.raises(IndexError, match="out of bounds"):
            x[bad]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(IndexError, match="only integers"):
        x[1.0]
    with pytest.raises(IndexError, match="integer \\(or boolean\\) type"):
        x[np.array([1.0])]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.array([True, False])]
    with pytest.raises(IndexError, match="out of bounds"):
        ijit(lambda a: a[4])(X)


def test_boolean_mask_under_jit_raises():
    f = ijit(lambda x: x[x > 3])
    with pytest.raises(NonConcreteBooleanIndexError, match="where|size=") as e:
        f(X)
    assert "test_extra_indexing.py" in str(e.value)


def test_traced_slice_bound_raises():
    with pytest.raises(TracerIntegerConversionError, match="dynamic_slice"):
        ijit(lambda x, i: x[i:i + 2])(X, np.int64(1))


def test_concrete_mask_under_jit_is_fine():
    m = M45
    check(lambda x: x[m], lambda x: x[m], X)


def test_iteration_and_len():
    x = pnp.asarray(X)
    assert [r.shape for r in x] == [(5, 6)] * 4
    assert_same(ijit(lambda a: [r for r in a][2])(X), X[2])


# --- .at updates ---------------------------------------------------------------------------
UPDATE_INDICES = [
    1, -1, (1, 2), slice(1, 3), (slice(None), 2), (Ellipsis, slice(None, None, 2)),
    (slice(None, None, -1), 0), ([0, 2],), ([3, 0], slice(1, 4), [5, 0]),
    (slice(None), [0, 4], [1, 5]), (0, slice(None), [0, 1]), ([[0], [1]], [0, 1, 2]),
    ([1, 0], None, [0, 1]), (None, 1), (Ellipsis, [0, -1]), M4, (M4, 1), (True,),
    (slice(1, None, 2), [1, 1], slice(None, None, -3)), (),
]


def _np_update(x, idx, v, op):
    y = x.copy()
    if op == "set":
        y[idx] = v
    else:
        getattr(np, op).at(y, idx, v)
    return y


@pytest.mark.parametrize("idx", UPDATE_INDICES, ids=_ids(UPDATE_INDICES))
def test_at_updates_unique(idx):
    shape = X[idx].shape
    v = rand(shape, np.float32, 3)
    for op, meth in [("set", "set"), ("add", "add"), ("multiply", "multiply"),
                     ("minimum", "min"), ("maximum", "max"), ("subtract", "subtract")]:
        check(lambda x, v: getattr(x.at[idx], meth)(v), lambda x, v: _np_update(x, idx, v, op),
              X, v, jit=op in ("set", "add"))
    check(lambda x: x.at[idx].get(), lambda x: x[idx], X, jit=False)


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.bool_, np.uint8])
def test_at_duplicates_accumulate(dtype):
    x = rand((6, 3), dtype, 1)
    idx = (np.array([0, 2, 0, 5, 2, 0]),)
    v = rand((6, 3), dtype, 2)
    ops = [("add", "add"), ("multiply", "multiply"), ("minimum", "min"), ("maximum", "max")]
    for op, meth in ops:
        np_op = {"add": np.logical_or, "multiply": np.logical_and}.get(op) \
            if dtype == np.bool_ else None
        want_fn = (lambda x, v, op=op, np_op=np_op: _np_update(x, idx, v, op)) if np_op is None \
            else (lambda x, v, np_op=np_op: _bool_at(x, idx, v, np_op))
        check(lambda x, v, meth=meth: getattr(x.at[idx], meth)(v), want_fn, x, v)


def _bool_at(x, idx, v, ufunc):
    y = x.copy()
    ufunc.at(y, idx, v)
    return y


def test_at_set_duplicates_last_wins_and_scalar_values():
    x = np.zeros(5, np.int64)
    assert_same(pnp.asarray(x).at[np.array([1, 3, 1])].set(np.array([7, 8, 9])),
                np.array([0, 9, 0, 8, 0]))
    assert_same(pnp.asarray(x).at[1:4].add(2), np.array([0, 2, 2, 2, 0]))
    assert_same(pnp.asarray(x.astype(np.float32)).at[0].set(2.5),
                np.array([2.5, 0, 0, 0, 0], np.float32))


def test_at_traced_indices_and_drop():
    f = ijit(lambda x, i, v: x.at[i].add(v))
    i = np.array([0, 3, 0, -1])
    v = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    assert_same(f(X, i, v), _np_update(X, (i,), v, "add"))
    g = ijit(lambda x, i: x.at[i].set(-1.0))
    want = X.copy()
    want[0] = -1
    assert_same(g(X, np.array([0, 9])), want)        # out of range: dropped
    h = ijit(lambda x, k: x.at[k, 1].set(0.0))
    want = X.copy()
    want[-2, 1] = 0
    assert_same(h(X, np.int64(-2)), want)


def test_at_modes_and_errors():
    x = pnp.asarray(np.zeros(4, np.float32))
    assert_same(x.at[np.array([1, 7])].set(1.0, mode="clip"), np.array([0, 1, 0, 1], np.float32))
    assert_same(x.at[np.array([1, 7])].set(1.0, mode="drop"), np.array([0, 1, 0, 0], np.float32))
    with pytest.raises(IndexError, match="out of bounds"):
        x.at[4].set(1.0)
    with pytest.raises(IndexError, match="out of bounds"):
        x.at[[0, 4]].add(1.0)
    assert_same(x.at[np.array([1, 7])].get(mode="fill", fill_value=-1.0),
                np.array([0, -1], np.float32))
    assert_same(x.at[np.array([1, 7])].get(mode="clip"), np.array([0, 0], np.float32))
    with pytest.raises(PlaitValueError):
        x.at[0].set(1.0, mode="bogus")


# --- take / take_along_axis / put_along_axis ------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take(axis):
    for ind in ([0, 2, -1], np.array([[1, 0], [3, 2]]), 1, [], [[], []], ()):
        check(lambda x: pnp.take(x, ind, axis=axis), lambda x: np.take(x, ind, axis=axis), X)
    for mode in ("wrap", "clip"):
        ind = np.array([-7, 0, 9, 3])
        check(lambda x, i: pnp.take(x, i, axis=axis, mode=mode),
              lambda x, i: np.take(x, i, axis=axis, mode=mode), X, ind)
    check(lambda x, i: x.take(i, axis=axis), lambda x, i: x.take(i, axis=axis), X,
          np.array([1, 0]))


def test_take_fill_and_raise():
    x = np.arange(4.0)
    assert_same(pnp.take(x, np.array([0, 5, -1]), mode="fill"), np.array([0, np.nan, 3]))
    with pytest.raises(IndexError):
        pnp.take(x, [4])


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_take_along_axis(axis):
    x = rand((3, 4, 5), np.float64)
    idx = np.argsort(x, axis=axis)
    check(lambda x, i: pnp.take_along_axis(x, i, axis), lambda x, i: np.take_along_axis(x, i, axis),
          x, idx)
    if axis is not None:
        small = np.take(np.argsort(x, axis=axis), [0, 1], axis=axis)   # fewer along axis
        check(lambda x, i: pnp.take_along_axis(x, i, axis),
              lambda x, i: np.take_along_axis(x, i, axis), x, small)


def test_take_along_axis_broadcasts():
    x = rand((3, 4), np.float32)
    idx = np.array([[0], [3], [1]])
    check(lambda x, i: pnp.take_along_axis(x, i, 1), lambda x, i: np.take_along_axis(x, i, 1),
          x, idx)
    idx2 = np.array([[2, 0, 1, 1]])
    check(lambda x, i: pnp.take_along_axis(x, i, 0), lambda x, i: np.take_along_axis(x, i, 0),
          x, idx2)


def test_put_along_axis():
    x = rand((3, 4), np.float32)
    idx = np.array([[0], [3], [1]])

    def want(x, i, v):
        y = x.copy()
        np.put_along_axis(y, i, v, 1)
        return y
    check(lambda x, i, v: pnp.put_along_axis(x, i, v, 1, inplace=False), want, x, idx,
          np.float32(9.0))
    with pytest.raises(PlaitValueError, match="inplace=False"):
        pnp.put_along_axis(x, idx, 1.0, 1)


# --- nonzero family ---------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2), (0, 3)])
def test_nonzero_eager_and_sized(shape):
    x = rand(shape, np.int32, 5) * (rand(shape, np.bool_, 6))
    assert_same(pnp.nonzero(x), np.nonzero(x))
    assert_same(pnp.argwhere(x), np.argwhere(x))
    assert_same(pnp.flatnonzero(x), np.flatnonzero(x))
    assert_same(pnp.asarray(x).nonzero(), np.nonzero(x))
    n = int(np.count_nonzero(x))
    for size in (0, max(n - 1, 0), n, n + 3):
        want = tuple(np.concatenate([i[:size], np.full(max(size - n, 0), -1, np.int64)])
                     for i in np.nonzero(x))
        check(lambda a: pnp.nonzero(a, size=size, fill_value=-1), lambda a: want, x)
        check(lambda a: pnp.argwhere(a, size=size, fill_value=-1),
              lambda a: np.stack(want, -1).reshape(size, len(shape)), x)
        check(lambda a: pnp.flatnonzero(a, size=size),
              lambda a: np.concatenate([np.flatnonzero(a)[:size],
                                        np.zeros(max(size - n, 0), np.int64)]), x)


def test_nonzero_errors():
    with pytest.raises(NonConcreteBooleanIndexError, match="size="):
        ijit(pnp.nonzero)(np.ones(3))
    with pytest.raises(NonConcreteBooleanIndexError, match="size="):
        ijit(pnp.argwhere)(np.ones(3))
    with pytest.raises(PlaitValueError, match="0d"):
        pnp.nonzero(np.float32(1))
    assert_same(pnp.argwhere(np.array(3)), np.argwhere(np.array(3)))


# --- diagonal / trace / ix_ ---------------------------------------------------------------
@pytest.mark.parametrize("offset", [0, 1, 2, -1, -3, 7, -7])
def test_diagonal_and_trace(offset):
    for axes in [(0, 1), (1, 0), (0, 2), (2, 1), (-1, -3)]:
        check(lambda x: pnp.diagonal(x, offset, *axes), lambda x: np.diagonal(x, offset, *axes), X)
        check(lambda x: pnp.trace(x, offset, *axes), lambda x: np.trace(x, offset, *axes), X)
    for dt in (np.int8, np.uint16, np.bool_, np.complex64):
        m = rand((4, 3), dt)
        check(lambda x: pnp.trace(x, offset), lambda x: np.trace(x, offset), m)
        check(lambda x: x.trace(offset), lambda x: x.trace(offset), m)
        check(lambda x: x.diagonal(offset), lambda x: x.diagonal(offset), m)


def test_diagonal_errors():
    with pytest.raises(PlaitValueError, match="two dimensions"):
        pnp.diagonal(np.ones(3))
    with pytest.raises(PlaitValueError, match="cannot be the same"):
        pnp.diagonal(np.ones((3, 3)), 0, 1, -1)


def test_ix():
    rows, cols = np.array([0, 3]), np.array([True, False, True, True, False])
    check(lambda x: x[pnp.ix_(rows, cols)], lambda x: x[np.ix_(rows, cols)], X[:, :, 0], jit=False)
    assert_same(pnp.ix_([1, 2], [0])[0], np.ix_([1, 2], [0])[0])


EDGE = [(np.array(3, np.float32), [(), Ellipsis, None, True, False, (None, Ellipsis)]),
        (np.zeros((0, 3)), [([],), (slice(None), [1]), (np.zeros(0, bool),), (Ellipsis, [0, 2])]),
        (np.zeros((2, 0, 3)), [([1, 0], slice(None), [2, 2]), (0, []), ([], [])])]


@pytest.mark.parametrize("k", range(len(EDGE)))
def test_zero_dim_and_empty_arrays(k):
    x, idxs = EDGE[k]
    for idx in idxs:
        check(lambda a: a[idx], lambda a: a[idx], x)
        check(lambda a: a.at[idx].set(1), lambda a: _np_update(a, idx, 1, "set"), x)
    if x.size == 0:
        with pytest.raises(IndexError, match="out of bounds"):
            pnp.asarray(x)[(0,) * x.ndim]
