"""A reshape inside a kernel is read or written through, not copied: a strided slice of
a flattened matrix (``diagonal``) reads the matrix at ``[i, i]``, a zero pad of a
vector reshaped to a matrix (the diagonal's transpose in a backward pass) scatters
into the matrix directly, and neither leaves a dead full-size copy or zero fill behind
(the Gaussian-process gradient's ``pad`` wrote and copied two 8 MB temporaries)."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax


def _tile(f, *args):
    return plait.jit(f, backend="native").lower(*args).compile().as_text("tile")


def _check(f, *args):
    got = plait.jit(f, backend="native")(*args)
    want = plait.jit(f, backend="interp")(*args)
    for g, w in zip(plait.tree_util.tree_leaves(got), plait.tree_util.tree_leaves(want)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("shape,offset", [((6, 6), 0), ((5, 7), 2), ((7, 5), -3),
                                          ((3, 4, 4), 0), ((3, 4, 6), 1), ((1, 1), 0)])
def test_diagonal_reads_the_matrix(shape, offset):
    a = np.random.default_rng(0).standard_normal(shape)

    def f(x):
        return pnp.diagonal(x * 3.0, offset, -2, -1) + 2.0
    _check(f, a)
    np.testing.assert_array_equal(np.asarray(plait.jit(f, backend="native")(a)),
                                  np.diagonal(a * 3.0, offset, -2, -1) + 2.0)
    n_el = int(np.prod(shape))
    if n_el > 1:
        tile = _tile(f, a)
        assert f"[{n_el}]" not in tile, tile      # no flat copy of the matrix


def test_diagonal_backward_scatters_once():
    a = np.random.default_rng(1).standard_normal((8, 8)) + 4 * np.eye(8)

    def f(x):
        return pnp.sum(pnp.log(pnp.abs(pnp.diagonal(x))) * pnp.arange(1.0, 9.0))
    g = plait.jit(plait.grad(f), backend="native")
    want = np.diag(np.arange(1.0, 9.0) / np.diag(a))
    np.testing.assert_allclose(np.asarray(g(a)), want, rtol=1e-14)
    tile = _tile(plait.grad(f), a)
    assert "[64]" not in tile, tile               # no flat padded temporary


def test_zero_pad_without_fill_and_signed_zero_pad_kept():
    v = np.arange(1.0, 5.0)

    def f(x, val):
        return lax.pad(x, val, [(1, 2, 1)])
    for val in (0.0, -0.0, 3.5):
        got = np.asarray(plait.jit(lambda x: f(x, val), backend="native")(v))
        want = np.asarray(plait.jit(lambda x: f(x, val), backend="interp")(v))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    zi = np.arange(1, 5, dtype=np.int32)
    np.testing.assert_array_equal(
        np.asarray(plait.jit(lambda x: lax.pad(x, 0, [(2, 0, 2)]).reshape(3, 4),
                             backend="native")(zi)),
        np.array([[0, 0, 1, 0], [0, 2, 0, 0], [3, 0, 0, 4]], np.int32))


@pytest.mark.parametrize("cfg,shape", [((0, 3, 3), (4, 4)), ((1, 4, 2), (3, 5)),
                                        ((0, 0, 4), (4, 4)), ((2, 0, 0), (2, 3)),
                                        ((0, 0, 4), (2, 8))])
def test_pad_then_reshape(cfg, shape):
    v = np.random.default_rng(2).standard_normal(4)

    def f(x):
        return lax.pad(x * 2.0, 0.0, [cfg]).reshape(shape) + 1.0
    _check(f, v)


def test_negative_padding_still_correct():
    v = np.arange(1.0, 7.0)

    def f(x):
        return lax.pad(x, 0.0, [(-1, -2, 1)])
    _check(f, v)
    np.testing.assert_array_equal(np.asarray(plait.jit(f, backend="native")(v)),
                                  np.array([0.0, 2.0, 0.0, 3.0, 0.0, 4.0, 0.0, 5.0]))
