"""The jax.lax names added on top of plait's primitives: one-dimension slicing, select_n,
associative_scan, generic reduce / reduce_window, special functions (vs SciPy),
custom_root / custom_linear_solve (values and implicit gradients vs analytic ones)."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax
from plait.test_util import check_grads

special = pytest.importorskip("scipy.special")
X = np.arange(24.0).reshape(4, 6)


def test_slicing_in_dim():
    np.testing.assert_array_equal(np.asarray(lax.slice_in_dim(X, 1, 5, 2, axis=1)), X[:, 1:5:2])
    np.testing.assert_array_equal(np.asarray(lax.slice_in_dim(X, -3, None, axis=0)), X[-3:])
    np.testing.assert_array_equal(np.asarray(lax.index_in_dim(X, -1, 1, keepdims=False)), X[:, -1])
    f = plait.jit(lambda x, i: (lax.dynamic_slice_in_dim(x, i, 2, axis=1),
                                lax.dynamic_index_in_dim(x, i, 0, keepdims=False),
                                lax.dynamic_update_slice_in_dim(x, pnp.zeros((4, 2)), i, 1),
                                lax.dynamic_update_index_in_dim(x, pnp.ones(6), i, 0)),
                  backend="interp")
    a, b, c, d = f(X, 5)      # out-of-range starts clamp, as in XLA
    np.testing.assert_array_equal(np.asarray(a), X[:, 4:6])
    np.testing.assert_array_equal(np.asarray(b), X[3])
    want = X.copy(); want[:, 4:6] = 0
    np.testing.assert_array_equal(np.asarray(c), want)
    want = X.copy(); want[3] = 1
    np.testing.assert_array_equal(np.asarray(d), want)


def test_select_n_and_small_helpers():
    w = np.array([0, 2, 1, 2])
    cases = [np.full(4, float(i)) for i in range(3)]
    np.testing.assert_array_equal(np.asarray(lax.select_n(w, *cases)), w.astype(float))
    np.testing.assert_array_equal(np.asarray(lax.select_n(np.array([True, False]), np.zeros(2),
                                                          np.ones(2))), [1, 0])
    assert lax.collapse(pnp.zeros((2, 3, 4)), 1).shape == (2, 12)
    assert lax.broadcast_to_rank(pnp.zeros((3,)), 3).shape == (1, 1, 3)
    np.testing.assert_array_equal(np.asarray(lax.square(X)), X ** 2)
    np.testing.assert_array_equal(np.asarray(lax.reciprocal(X + 1)), 1 / (X + 1))
    np.testing.assert_array_equal(np.asarray(lax.full_like(X, 7, np.int32)), np.full((4, 6), 7))
    assert lax.optimization_barrier((X, 1))[1] == 1


def test_associative_scan():
    for n in (1, 2, 7, 8):
        v = np.arange(1.0, n + 1)
        np.testing.assert_allclose(np.asarray(lax.associative_scan(lax.add, v)), np.cumsum(v))
        np.testing.assert_allclose(np.asarray(lax.associative_scan(lax.mul, v, reverse=True)),
                                   np.cumprod(v[::-1])[::-1])
    # a pytree of (a, b) affine maps x -> a x + b composed along axis 1 (a linear recurrence)
    a = np.random.default_rng(0).uniform(0.5, 1.0, (3, 9))
    b = np.random.default_rng(1).standard_normal((3, 9))
    comp = lambda p, q: (q[0] * p[0], q[0] * p[1] + q[1])
    _, h = lax.associative_scan(comp, (a, b), axis=1)
    want = np.zeros_like(b); acc = np.zeros(3)
    for t in range(9):
        acc = a[:, t] * acc + b[:, t]
        want[:, t] = acc
    np.testing.assert_allclose(np.asarray(h), want, rtol=1e-12)
    check_grads(lambda v: lax.associative_scan(lax.mul, v), (np.arange(1.0, 6.0),), order=1,
                modes=("rev",))


def test_generic_reduce_and_reduce_window():
    np.testing.assert_array_equal(np.asarray(lax.reduce(X, 0.0, lax.add, (1,))), X.sum(1))
    np.testing.assert_array_equal(np.asarray(lax.reduce(X, -np.inf, lax.max, (0,))), X.max(0))
    got = lax.reduce(X, 0.0, lambda a, b: a + b, (0, 1))     # Python computation: tree path
    assert float(got) == X.sum()
    s, m = lax.reduce((X, -X), (0.0, -np.inf), lambda a, b: (a[0] + b[0],
                                                             pnp.maximum(a[1], b[1])), (1,))
    np.testing.assert_array_equal(np.asarray(s), X.sum(1))
    np.testing.assert_array_equal(np.asarray(m), (-X).max(1))
    # a non-monoid init (5) is folded in once, as XLA does for a single reduction
    assert float(lax.reduce(np.arange(4.0), 5.0, lax.add, (0,))) == 11.0
    for pad in ("SAME", "VALID", ((1, 0), (0, 2))):
        mono = lax.reduce_window(X, 0.0, lax.add, (2, 3), (1, 2), pad)
        gen = lax.reduce_window(X, 0.0, lambda a, b: a + b, (2, 3), (1, 2), pad)
        np.testing.assert_array_equal(np.asarray(gen), np.asarray(mono))
    mx = lax.reduce_window(X, -np.inf, lambda a, b: pnp.maximum(a, b), (2, 2), (2, 2), "VALID",
                           window_dilation=(1, 2))
    np.testing.assert_array_equal(np.asarray(mx), np.asarray(
        lax.reduce_window_max(X, (2, 2), (2, 2), "VALID", None, (1, 2))))


def test_special_functions_vs_scipy():
    x = np.concatenate([np.linspace(-6, 6, 97), [-25.0, 0.0, 2.0, 25.0]])
    np.testing.assert_allclose(np.asarray(lax.erf(x)), special.erf(x), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(np.asarray(lax.erfc(x)), special.erfc(x), rtol=1e-12, atol=0)
    x32 = x.astype(np.float32)
    e32 = np.asarray(lax.erf(x32))
    assert e32.dtype == np.float32
    np.testing.assert_allclose(e32, special.erf(x32.astype(float)), rtol=1.2e-7, atol=1e-30)
    u = np.linspace(-0.999, 0.999, 101)
    np.testing.assert_allclose(np.asarray(lax.erf_inv(u)), special.erfinv(u), rtol=1e-12, atol=1e-15)
    u32 = u.astype(np.float32)
    np.testing.assert_allclose(np.asarray(lax.erf_inv(u32)), special.erfinv(u32.astype(float)),
                               rtol=2e-6, atol=1e-7)
    g = np.concatenate([np.linspace(0.01, 40, 97), [-0.5, -1.5, -2.7, 1.0, 2.0]])
    np.testing.assert_allclose(np.asarray(lax.lgamma(g)), special.gammaln(g), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(np.asarray(lax.digamma(g)), special.digamma(g), rtol=1e-12, atol=1e-12)
    poles = np.array([0.0, -0.0, -3.0])     # SciPy's values at the poles: -inf, inf, nan
    np.testing.assert_array_equal(np.asarray(lax.digamma(poles)), special.digamma(poles))
    assert np.asarray(lax.erf_inv(np.array([1.0, -1.0]))).tolist() == [np.inf, -np.inf]
    y = np.array([0.3, 1.7, 3.2])
    check_grads(lax.erf, (y,), order=2)
    check_grads(lax.lgamma, (y,), order=1)
    np.testing.assert_allclose(np.asarray(plait.grad(lambda t: pnp.sum(lax.lgamma(t)))(y)),
                               special.digamma(y), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(plait.grad(lambda t: pnp.sum(lax.erf_inv(t)))(y / 4)),
                               np.sqrt(np.pi) / 2 * np.exp(special.erfinv(y / 4) ** 2), rtol=1e-10)


def _sqrt_by_root(a):
    f = lambda x: x * x - a
    solve = lambda f, x0: lax.while_loop(lambda x: pnp.abs(f(x)) > 1e-13,
                                         lambda x: x - f(x) / (2 * x), x0)
    return lax.custom_root(f, pnp.asarray(1.0), solve, lambda g, y: y / g(1.0))


def test_custom_root_and_linear_solve():
    assert abs(float(_sqrt_by_root(2.0)) - np.sqrt(2)) < 1e-15
    # the implicit gradient, although the solver is a while_loop
    assert abs(float(plait.grad(_sqrt_by_root)(2.0)) - 0.5 / np.sqrt(2)) < 1e-14
    assert abs(float(plait.jvp(_sqrt_by_root, (3.0,), (1.0,))[1]) - 0.5 / np.sqrt(3)) < 1e-14
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, 2.0])

    def lin(A, b):
        def solve(mv, r):                     # Jacobi iterations in a fori_loop
            D = pnp.diagonal(A)
            return lax.fori_loop(0, 80, lambda i, x: (r - (A @ x - D * x)) / D, pnp.zeros_like(r))
        return lax.custom_linear_solve(lambda x: A @ x, b, solve)

    x = np.linalg.solve(A, b)
    np.testing.assert_allclose(np.asarray(lin(A, b)), x, rtol=1e-14)
    gA, gb = plait.grad(lambda A, b: pnp.sum(lin(A, b) ** 2), argnums=(0, 1))(A, b)
    lam = np.linalg.solve(A.T, 2 * x)
    np.testing.assert_allclose(np.asarray(gb), lam, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gA), -np.outer(lam, x), rtol=1e-12, atol=1e-14)


def test_conv_transpose_matches_jax():
    from jax_convT_reference import REF
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 5, 4, 3))
    w = rng.standard_normal((3, 2, 3, 4))
    x1 = rng.standard_normal((2, 7, 2))
    w1 = rng.standard_normal((3, 2, 3))
    got = {"tk_same": lax.conv_transpose(x, w, (2, 1), "SAME", transpose_kernel=True,
                                         dimension_numbers=("NHWC", "HWOI", "NHWC")),
           "dil_valid": lax.conv_transpose(x, w.transpose(0, 1, 3, 2)[:, :, :3], (2, 2),
                                           "VALID", rhs_dilation=(2, 1)),
           "pairs_1d": lax.conv_transpose(x1, w1, (3,), ((1, 2),))}
    for name, val in got.items():
        shape, vals = REF[name]
        want = np.array([float.fromhex(v) for v in vals]).reshape(shape)
        np.testing.assert_allclose(np.asarray(val), want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_batch_matmul_split_broadcast_shapes_conv_with_general_padding():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    f = plait.jit(lambda a, b: (lax.batch_matmul(a, b), lax.split(a, (1, 3), axis=2)))
    mm, (s1, s2) = f(a, b)
    np.testing.assert_allclose(np.asarray(mm), a @ b, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(s1), a[..., :1])
    np.testing.assert_array_equal(np.asarray(s2), a[..., 1:])
    with pytest.raises(plait.errors.PlaitTypeError, match="batch_matmul"):
        lax.batch_matmul(a, b[0])
    with pytest.raises(plait.errors.PlaitValueError, match="sum to the size"):
        lax.split(a, (1, 2), axis=2)
    assert lax.broadcast_shapes((3, 1), (1, 4), (4,)) == (3, 4)
    with pytest.raises(plait.errors.PlaitValueError, match="broadcast_shapes"):
        lax.broadcast_shapes((3,), (4,))
    x, w = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))
    got = np.asarray(lax.conv_with_general_padding(x, w, (1, 1), ((1, 1), (1, 1))))
    want = np.asarray(lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1))))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_cumlogsumexp():
    x = np.array([[0., 1., -np.inf, 1000., 2.], [-np.inf, -np.inf, 3., 4., 5.]])
    got = plait.jit(lambda x: (lax.cumlogsumexp(x, axis=1),
                               lax.cumlogsumexp(x, axis=1, reverse=True)))(x)
    np.testing.assert_allclose(np.asarray(got[0]), np.logaddexp.accumulate(x, axis=1))
    want_rev = np.logaddexp.accumulate(x[:, ::-1], axis=1)[:, ::-1]
    np.testing.assert_allclose(np.asarray(got[1]), want_rev)
    y = np.random.default_rng(4).standard_normal((3, 4))
    check_grads(lambda v: lax.cumlogsumexp(v, axis=1), (y,), order=2)


def test_precision_is_accepted_as_in_jax():
    # JAX code passes precision= to contractions; plait multiplies in the operands' dtype
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    want = a.astype(np.float64) @ b
    hi = lax.Precision.HIGHEST
    for got in (pnp.dot(a, b, precision=hi), pnp.matmul(a, b, precision="highest"),
                pnp.einsum("ij,jk->ik", a, b, precision=(hi, hi)),
                lax.dot(a, b, precision=lax.Precision.DEFAULT),
                lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=hi)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    x, w = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))
    np.testing.assert_array_equal(
        np.asarray(lax.conv_general_dilated(x, w, (1, 1), "SAME", precision=hi)),
        np.asarray(lax.conv_general_dilated(x, w, (1, 1), "SAME")))
    with pytest.raises(plait.errors.PlaitValueError, match="precision must be"):
        pnp.dot(a, b, precision="fast")
