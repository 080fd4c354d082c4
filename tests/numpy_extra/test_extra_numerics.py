"""Numerical corner cases of issue 21 (defects 3, 6, 8) and issue 24 (items 9, 14, 15).

Every check runs eagerly and under ``plait.jit`` on both backends (``interp`` and
``native``) unless it is about eager-only behaviour, against NumPy, an analytic
derivative, or the text of the Array API standard (2024.12) where plait deliberately
follows the standard instead of NumPy (floor division by / of infinities, complex
``expm1`` at infinities: see those tests' docstrings).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import plait
import plait.nn as nn
import plait.numpy as pnp

BACKENDS = ("interp", "native")


def everywhere(fn, *args):
    """``fn(*args)`` eagerly, then under jit on each backend: ``[(where, result), ...]``."""
    out = [("eager", fn(*args))]
    for be in BACKENDS:
        out.append((be, plait.jit(fn, backend=be)(*args)))
    return out


def same_bits(got, want):
    """Equal values, NaN positions and signs of zeros and NaNs, and equal dtypes."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_array_equal(g, w)
    if w.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
    if w.dtype.kind == "c":
        for part in (np.real, np.imag):
            np.testing.assert_array_equal(np.signbit(part(g)), np.signbit(part(w)))


# --- issue 21.3: logaddexp, softplus, log_sigmoid in the tails -------------------------------
def _sigmoid(x):
    x = np.asarray(x, np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _sigmoid_derivs(x):
    """sigmoid(x) and its first two derivatives, accurate in both tails."""
    s, c = _sigmoid(x), _sigmoid(-np.asarray(x, np.float64))   # c = 1 - s without cancelling
    return s, s * c, s * c * (c - s)


def _derivs(f):
    """First, second and third derivative of scalar-summed ``f`` (elementwise)."""
    d1 = plait.grad(lambda v: pnp.sum(f(v)))
    d2 = plait.grad(lambda v: pnp.sum(d1(v)))
    d3 = plait.grad(lambda v: pnp.sum(d2(v)))
    return lambda v: (d1(v), d2(v), d3(v))


@pytest.mark.parametrize("dtype, xs", [
    (np.float32, [10.0, 89.0, -89.0, 0.0, 30.0, -30.0, 1e30, -1e30]),
    (np.float64, [800.0, -800.0, 0.0, 40.0, -40.0, 1e300, -1e300, 3.0])])
def test_logaddexp_derivatives_finite_and_right_in_the_tails(dtype, xs):
    """d^k/dx^k logaddexp(0, x) is sigmoid(x) and its derivatives: never NaN, also where
    exp(x) overflows (issue 21 defect 3: [0.99995, nan, nan] before)."""
    x = np.array(xs, dtype)
    want = _sigmoid_derivs(x)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for where, got in everywhere(_derivs(lambda v: pnp.logaddexp(0.0, v)), x):
        for k, (g, w) in enumerate(zip(got, want)):
            g = np.asarray(g)
            assert g.dtype == dtype and np.isfinite(g).all(), (where, k, g)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * 1e-2, err_msg=f"{where} d{k + 1}")
    for where, got in everywhere(lambda v: pnp.logaddexp(0.0, v), x):
        np.testing.assert_allclose(np.asarray(got), np.logaddexp(dtype(0), x), rtol=tol,
                                   err_msg=where)


def test_issue_reproducer_logaddexp_grad():
    g = plait.grad(lambda x: pnp.sum(pnp.logaddexp(0.0, x)))(np.array([10., 89., -89.], np.float32))
    np.testing.assert_allclose(np.asarray(g), [0.9999546, 1.0, 0.0], atol=1e-6)


def test_logaddexp_at_ties_and_second_operand():
    """Derivatives of every order are exact at x == y too (both branches are analytic)."""
    f = lambda a, b: pnp.logaddexp(a, b)
    for a, b in ((2.0, 2.0), (1e3, 1e3), (-5.0, 300.0)):
        sx = _sigmoid(a - b)
        np.testing.assert_allclose(float(plait.grad(f, 0)(a, b)), sx, rtol=1e-14)
        np.testing.assert_allclose(float(plait.grad(f, 1)(a, b)), 1 - sx, rtol=1e-14)
        np.testing.assert_allclose(float(plait.grad(plait.grad(f, 0), 0)(a, b)), sx * (1 - sx),
                                   rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(float(plait.grad(plait.grad(f, 0), 1)(a, b)), -sx * (1 - sx),
                                   rtol=1e-12, atol=1e-300)


def test_logaddexp_and_logaddexp2_special_values_match_numpy():
    inf, nan = np.inf, np.nan
    a = np.array([inf, -inf, inf, -inf, nan, 1.0, inf, -inf, 3.0, -1e308, 0.0])
    b = np.array([inf, -inf, -inf, inf, 1.0, nan, 1.0, 1.0, 3.0, 1e308, -0.0])
    for fn, ref in ((pnp.logaddexp, np.logaddexp), (pnp.logaddexp2, np.logaddexp2)):
        for where, got in everywhere(fn, a, b):
            np.testing.assert_allclose(np.asarray(got), ref(a, b), rtol=1e-15, err_msg=where)


def test_logaddexp2_derivatives_in_the_tails():
    x = np.array([200.0, -200.0, 2000.0, -2000.0, 0.0])
    s, ds, _ = _sigmoid_derivs(x * math.log(2.0))   # d/dx log2(1 + 2^x) = sigmoid(x ln 2)
    for where, (d1, d2, _) in everywhere(_derivs(lambda v: pnp.logaddexp2(0.0, v)), x):
        np.testing.assert_allclose(np.asarray(d1), s, rtol=1e-13, atol=1e-300, err_msg=where)
        np.testing.assert_allclose(np.asarray(d2), math.log(2.0) * ds, rtol=1e-12,
                                   atol=1e-300, err_msg=where)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softplus_and_log_sigmoid_tails(dtype):
    x = np.array([-1e4, -100.0, -30.0, 0.0, 30.0, 100.0, 1e4], dtype)
    s, ds, _ = _sigmoid_derivs(x)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for where, (d1, d2, _) in everywhere(_derivs(nn.softplus), x):
        assert np.isfinite(np.asarray(d1)).all() and np.isfinite(np.asarray(d2)).all(), where
        np.testing.assert_allclose(np.asarray(d1), s, rtol=tol, atol=1e-30, err_msg=where)
        np.testing.assert_allclose(np.asarray(d2), ds, rtol=tol, atol=1e-30, err_msg=where)
    for where, (d1, d2, _) in everywhere(_derivs(nn.log_sigmoid), x):
        np.testing.assert_allclose(np.asarray(d1), _sigmoid(-x), rtol=tol, atol=1e-30,
                                   err_msg=where)
        np.testing.assert_allclose(np.asarray(d2), -ds, rtol=tol, atol=1e-30, err_msg=where)
    np.testing.assert_allclose(np.asarray(nn.log_sigmoid(x)), -np.logaddexp(0, -x.astype(np.float64)),
                               rtol=tol, atol=1e-43)   # float32 subnormals near exp(-100)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_tails(dtype):
    """logsumexp subtracts its (gradient-stopped) maximum: finite values and derivatives
    (softmax and its Jacobian) for huge inputs."""
    x = np.array([1e4, 0.0, -1e4, 9990.0], dtype)
    x64 = x.astype(np.float64)
    p = np.exp(x64 - x64.max()) / np.exp(x64 - x64.max()).sum()
    tol = 2e-6 if dtype == np.float32 else 1e-13
    f = lambda v: nn.logsumexp(v)
    d1 = plait.grad(f)
    d2 = plait.grad(lambda v: d1(v)[0])     # d/dv of softmax_0: p0 (e_0 - p)
    for where, (val, g, h) in everywhere(lambda v: (f(v), d1(v), d2(v)), x):
        np.testing.assert_allclose(float(val), 1e4 + np.log1p(np.exp(-10.0)), rtol=tol,
                                   err_msg=where)
        np.testing.assert_allclose(np.asarray(g), p, rtol=tol, atol=1e-30, err_msg=where)
        e0_minus_p = np.concatenate([[p[1:].sum()], -p[1:]])   # no cancellation in 1 - p0
        # (float32 forms 1 - p0 from p0 ~ 0.99995: an absolute error of ~eps/2 is inherent)
        np.testing.assert_allclose(np.asarray(h), p[0] * e0_minus_p, rtol=tol * 10,
                                   atol=1e-7 if dtype == np.float32 else 1e-30, err_msg=where)


# --- issue 21.6: nanargmax / nanargmin of an all-NaN slice -----------------------------------
_A = np.array([[np.nan, 1.0, 2.0, np.nan], [np.nan, np.nan, np.nan, np.nan],
               [3.0, np.nan, 0.0, 3.0]])


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanarg_all_nan_raises_eagerly(name):
    fn = getattr(pnp, name)
    for call in (lambda: fn(_A, axis=1), lambda: fn(np.full(3, np.nan)),
                 lambda: fn(np.full((2, 2), np.nan), axis=0, keepdims=True)):
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            call()
    rows = _A[[0, 2]]   # no all-NaN slice: NumPy's answer
    same_bits(fn(rows, axis=1), getattr(np, name)(rows, axis=1))
    same_bits(fn(_A), getattr(np, name)(_A))


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanarg_all_nan_is_minus_one_under_transformations(name):
    """Under jit/vmap the values are unknown at trace time: an all-NaN slice gives -1
    (as jax.numpy documents), never a valid-looking index."""
    fn = getattr(pnp, name)
    ref = getattr(np, name)
    want = np.array([ref(_A[0]), -1, ref(_A[2])])
    for be in BACKENDS:
        same_bits(plait.jit(lambda v: fn(v, axis=1), backend=be)(_A), want)
        same_bits(plait.jit(lambda v: fn(v, axis=1, keepdims=True), backend=be)(_A),
                  want[:, None])
    same_bits(plait.vmap(fn)(_A), want)
    cols = plait.jit(lambda v: fn(v, axis=0), backend="native")(_A)
    same_bits(cols, ref(_A, axis=0))


# --- issue 21.8 / 24.9: the sign bit of NaN --------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_signbit_and_copysign_see_the_sign_of_nan(dtype):
    neg_nan = np.copysign(np.nan, -1.0)
    with np.errstate(invalid="ignore"):
        x86_nan = np.divide(np.float64(0.0), np.float64(0.0))   # -nan on x86
    x = np.array([neg_nan, np.nan, x86_nan, -0.0, 0.0, -1.5, 2.0, -np.inf, np.inf], dtype)
    for where, got in everywhere(pnp.signbit, x):
        same_bits(got, np.signbit(x))
    mag = np.full(x.shape, 3.0, dtype)
    for where, got in everywhere(pnp.copysign, mag, x):
        same_bits(got, np.copysign(mag, x))
    for where, got in everywhere(lambda v: pnp.copysign(v, -1.0), x):   # NaN takes the sign
        same_bits(pnp.signbit(got), np.signbit(np.copysign(x, dtype(-1))))


def test_issue_reproducer_signbit_negative_nan():
    assert bool(pnp.signbit(pnp.asarray(-np.nan))) is True
    assert bool(np.signbit(-np.nan)) is True


def test_copysign_gradient():
    f = lambda a, b: pnp.copysign(a, b)
    assert float(plait.grad(f)(-3.0, 2.0)) == -1.0
    assert float(plait.grad(f)(3.0, 2.0)) == 1.0
    assert float(plait.grad(f)(3.0, -0.0)) == -1.0
    assert float(plait.grad(f, 1)(3.0, 2.0)) == 0.0


# --- issue 21.8: integer reciprocal of 0 -------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                   "uint64", "bool"])
def test_integer_reciprocal_of_zero_matches_numpy(dtype):
    x = np.array([0, 1, 2, 3, 0, 1], dtype) if dtype != "bool" else np.array([False, True])
    if dtype.startswith("int"):
        x = np.concatenate([x, np.array([-1, -2, -3], dtype)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.reciprocal(x)
    for where, got in everywhere(pnp.reciprocal, x):
        same_bits(got, want)


# --- issue 21.8: cumsum keeps -0.0 under jit ----------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_cumsum_keeps_negative_zero(dtype):
    x = np.array([[-0.0, -0.0, 1.0, -1.0, -0.0], [-0.0, 2.0, -0.0, -0.0, -2.0],
                  [-0.0, -0.0, -0.0, -0.0, -0.0]], dtype)
    for ax in (0, 1, None):
        for where, got in everywhere(lambda v: pnp.cumsum(v, axis=ax), x):
            same_bits(got, np.cumsum(x, axis=ax))
    long = np.full((3, 700), -0.0, dtype)
    for where, got in everywhere(lambda v: pnp.cumsum(v, axis=1), long):
        same_bits(got, np.cumsum(long, axis=1))
    # sums keep NumPy's +0.0 start (np.sum of -0.0 values is +0.0)
    for where, got in everywhere(lambda v: pnp.sum(v, axis=1), long):
        same_bits(got, np.sum(long, axis=1))


# --- issue 21.8: empty inputs -------------------------------------------------------------------
@pytest.mark.parametrize("shape, axis", [((0,), -1), ((2, 0), -1), ((0, 3), 0), ((0, 3), 1)])
def test_grad_of_sort_of_empty(shape, axis):
    x = np.zeros(shape)
    f = plait.grad(lambda v: pnp.sum(pnp.sort(v, axis=axis) ** 2))
    for where, got in everywhere(f, x):
        same_bits(got, np.zeros(shape))


@pytest.mark.parametrize("x, kw", [
    (np.zeros(0), {}), (np.zeros((0, 3)), dict(axis=0)), (np.zeros((2, 0)), dict(axis=1)),
    (np.zeros((0, 3)), dict(axis=1)), (np.zeros(0, np.float32), {}), (np.zeros(0, np.int32), {}),
    (np.zeros((2, 0)), dict(axis=1, keepdims=True))])
def test_median_of_empty_is_nan_as_numpy(x, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.asarray(np.median(x, **kw))
    for where, got in everywhere(lambda v: pnp.median(v, **kw), x):
        g = np.asarray(got)
        assert g.dtype == want.dtype and g.shape == want.shape, where
        np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_sign_at_every_special_value_as_numpy(dtype):
    """sign(z) = z/|z|: one infinite part gives +-1 along it, two give inf/inf = NaN+NaNj
    (plait gave the diagonal direction; found by the fuzzer), a NaN part NaN+NaNj."""
    parts = [np.inf, -np.inf, np.nan, 1.0, -2.5, 0.0, -0.0]
    z = np.array([complex(a, b) for a in parts for b in parts], dtype)
    want = np.sign(z)
    eps = np.finfo(want.real.dtype).eps
    for where, got in everywhere(pnp.sign, z):
        g = np.asarray(got)
        assert g.dtype == want.dtype, where
        for part in (np.real, np.imag):   # NaNs where NumPy's are; values to rounding
            np.testing.assert_array_equal(np.isnan(part(g)), np.isnan(part(want)), where)
        np.testing.assert_allclose(g, want, rtol=4 * eps, atol=0, err_msg=where)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_complex_keeps_signed_zeros_and_infinities_of_its_parts(dtype):
    """lax.complex(x, y) is x + iy part by part: a -0.0 imaginary part stays -0.0 (so
    complex rint of -0.4j is -0j, as NumPy's; found by the fuzzer) and an infinite
    imaginary part leaves the real part alone (1j * inf would make it NaN)."""
    x = np.array([1.0, np.inf, -0.0, np.nan, 2.0], dtype)
    y = np.array([-0.0, 1.0, np.inf, -np.inf, -0.4], dtype)
    want = np.empty(5, np.result_type(dtype, np.complex64))
    want.real, want.imag = x, y
    for where, got in everywhere(plait.lax.complex, x, y):
        assert np.asarray(got).dtype == want.dtype, where
        same_bits(got, want)
    z = want[[0, 4]]
    for where, got in everywhere(pnp.rint, z):
        same_bits(got, np.rint(z))


@pytest.mark.parametrize("fn", ["median", "nanmedian"])
def test_float16_median_of_values_near_the_maximum_does_not_overflow(fn):
    """NumPy's median averages the two middle values in the mean's float32 accumulator,
    so two values whose float16 sum overflows still give a finite median (found by the
    fuzzer). nanmedian is the median of each row's non-NaN values; NumPy's own
    nanmedian agrees on 1-D input but overflows along an axis of fewer than 600 values
    (its masked-array path sums in float16), so the oracle is the definition."""
    x = np.array([[60000, 60000, 1, 65000], [-65000, -64000, np.nan, -65000],
                  [-65000, 1, 2, 65000]], np.float16)
    want = np.array([np.median(r if fn == "median" else r[~np.isnan(r)]) for r in x])
    for where, got in everywhere(lambda v: getattr(pnp, fn)(v, axis=1), x):
        g = np.asarray(got)
        assert g.dtype == np.float16, where
        np.testing.assert_array_equal(g, want, err_msg=where)


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8"])
def test_integer_negative_power_of_empty(dtype):
    x = np.zeros((2, 0), dtype)
    # (NumPy itself rejects the Python int -2 for a uint8 array: it is out of range)
    for y in ((-2,) if dtype != "uint8" else ()) + (np.array([-2], np.int64),):
        want = x ** y
        for where, got in everywhere(lambda v: v ** y, x):
            same_bits(got, want)
        same_bits(pnp.power(x, y), want)
    with pytest.raises(ValueError, match="negative integer powers"):
        pnp.asarray(np.ones(2, dtype)) ** np.array([-2], np.int64)


# --- issue 21.8: jit results never alias a NumPy argument ------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_result_is_independent_of_numpy_input(backend):
    fns = {"identity": lambda v: v, "reshape": lambda v: v.reshape(-1),
           "transpose": lambda v: v.T, "row": lambda v: v[0], "pytree": lambda v: {"a": v},
           "same dtype cast": lambda v: v.astype(v.dtype), "pair": lambda v: (v, v + 1)}
    for name, fn in fns.items():
        jf = plait.jit(fn, backend=backend)
        for _ in range(2):        # first call (compile) and the cached fast path
            x = np.arange(6.0).reshape(2, 3)
            before = [np.array(o) for o in plait.tree_util.tree_leaves(jf(x))]
            out = jf(x)
            x[...] = -7.0
            for o, b in zip(plait.tree_util.tree_leaves(out), before):
                np.testing.assert_array_equal(np.asarray(o), b, err_msg=name)


# --- issue 21.8: big-endian inputs -------------------------------------------------------------
def test_big_endian_inputs_are_converted():
    x = np.arange(6, dtype=">f8").reshape(2, 3)
    i = np.arange(3, dtype=">i4")
    want = np.sin(x.astype("<f8")) * 2 + i
    for where, got in everywhere(lambda a, b: pnp.sin(a) * 2 + b, x, i):
        g = np.asarray(got)
        assert g.dtype == np.float64 and g.dtype.isnative, where
        np.testing.assert_allclose(g, want, rtol=1e-14, atol=1e-15, err_msg=where)
    assert pnp.asarray(x).dtype == np.float64
    g = plait.grad(lambda a: pnp.sum(pnp.sin(a)))(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(x.astype("<f8")), rtol=1e-15)
    import plait.lazy as lazy
    lz = pnp.sin(lazy.asarray(x)) * 2 + i
    np.testing.assert_allclose(np.asarray(lz), want, rtol=1e-14, atol=1e-15)


# --- issue 24.14: hypot's second derivative at x == y ------------------------------------------
def test_hypot_second_derivative_at_equal_arguments():
    f = lambda a, b: pnp.hypot(a, b)
    exact = math.sqrt(2.0) / 8.0       # d2/dx2 sqrt(x^2 + y^2) = y^2 / r^3 at (2, 2)
    d_xx = plait.grad(plait.grad(f, 0), 0)
    d_xy = plait.grad(plait.grad(f, 0), 1)
    args = (np.float64(2.0), np.float64(2.0))
    for where, got in everywhere(d_xx, *args):
        np.testing.assert_allclose(float(got), exact, rtol=1e-14, err_msg=where)
    for where, got in everywhere(d_xy, *args):
        np.testing.assert_allclose(float(got), -exact, rtol=1e-14, err_msg=where)
    # third derivative away from ties: d3/dx3 = -3 x y^2 / r^5 at (3, -4)
    d_xxx = plait.grad(plait.grad(plait.grad(f)))
    np.testing.assert_allclose(float(d_xxx(3.0, -4.0)), -3 * 3 * 16 / 5 ** 5, rtol=1e-13)
    # the origin: value and derivatives 0, not NaN
    assert float(plait.grad(f)(0.0, 0.0)) == 0.0
    # values still match NumPy on the special cases (no overflow, inf beats nan)
    a = np.array([0.0, 1e300, 1e-310, np.inf, -np.inf, np.nan, np.nan, 3.0, -3.0, 1e38])
    b = np.array([0.0, 1e300, 1e-310, np.nan, 1.0, np.inf, 1.0, -4.0, 4.0, 1e38])
    for where, got in everywhere(pnp.hypot, a, b):
        np.testing.assert_allclose(np.asarray(got), np.hypot(a, b), rtol=1e-15, err_msg=where)
    for where, got in everywhere(pnp.hypot, a.astype(np.float32), b.astype(np.float32)):
        with np.errstate(over="ignore"):
            want32 = np.hypot(a.astype(np.float32), b.astype(np.float32))
        np.testing.assert_allclose(np.asarray(got), want32, rtol=1e-6, err_msg=where)


# --- issue 24.15: floor division with infinite operands; complex expm1 at infinities ----------
_INF, _NAN = np.inf, np.nan
# (x1, x2, the Array API standard's floor_divide result) for the infinite operands
_FLOORDIV_STANDARD = [
    (_INF, 2.0, _INF), (_INF, -2.0, -_INF), (-_INF, 2.0, -_INF), (-_INF, -2.0, _INF),
    (1.0, _INF, 0.0), (1.0, -_INF, -0.0), (-1.0, _INF, -0.0), (-1.0, -_INF, 0.0),
    (_INF, _INF, _NAN), (-_INF, _INF, _NAN), (_INF, 0.0, _INF), (-_INF, -0.0, _INF),
    (_NAN, _INF, _NAN), (_INF, _NAN, _NAN)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floor_divide_with_infinities_follows_the_standard(dtype):
    """plait follows the Array API standard (2024.12, ``floor_divide`` special cases),
    which prefers ``x1 // x2 == floor(x1 / x2)`` when an operand is infinite:
    ``±inf // finite`` is ``±inf`` (NumPy: ``nan``) and ``±finite // ∓inf`` is ``-0.0``
    (NumPy and Python: ``-1.0``). Every other case, finite operands and division by
    zero included, is NumPy's ``npy_divmod`` result. ``//``, ``floor_divide`` and the
    quotient of ``divmod`` agree, on every backend."""
    a = np.array([c[0] for c in _FLOORDIV_STANDARD], dtype)
    b = np.array([c[1] for c in _FLOORDIV_STANDARD], dtype)
    want = np.array([c[2] for c in _FLOORDIV_STANDARD], dtype)
    for fn in (pnp.floor_divide, lambda x, y: pnp.asarray(x) // y,
               lambda x, y: pnp.divmod(x, y)[0]):
        for where, got in everywhere(fn, a, b):
            g = np.asarray(got)
            np.testing.assert_array_equal(g, want, err_msg=where)
            np.testing.assert_array_equal(np.signbit(g[~np.isnan(want)]),
                                          np.signbit(want[~np.isnan(want)]), err_msg=where)
    # finite operands and zero divisors: exactly NumPy
    fa = np.array([7.5, -7.5, 7.5, -7.5, 1.0, -1.0, 0.0, -0.0, 5.0, 1e300], dtype)
    fb = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 0.0, 3.0, 3.0, -0.0, 1e-300], dtype)
    with np.errstate(all="ignore"):
        fwant = np.floor_divide(fa, fb)
    for where, got in everywhere(pnp.floor_divide, fa, fb):
        same_bits(got, fwant)


def test_complex_expm1_at_infinities_follows_the_standard():
    """The Array API standard's ``expm1`` special cases for complex operands (C99
    Annex G's ``cexp(z) - 1``): ``expm1(+inf + 0j)`` is ``+inf + 0j`` where NumPy's
    ``expm1`` gives ``inf + nanj``; ``expm1(-inf ± inf j)`` and ``expm1(-inf + nan j)``
    are ``-1 + 0j`` (NumPy: ``nan + nanj``); ``expm1(+inf + nan j)`` is
    ``inf + nan j``; ``expm1(nan + 0j)`` is ``nan + 0j``. Finite values keep NumPy's
    accurate ``expm1`` (checked at a tiny argument)."""
    z = np.array([complex(_INF, 0.0), complex(-_INF, 1.0), complex(_INF, 1.0),
                  complex(-_INF, _INF), complex(_INF, _INF), complex(-_INF, _NAN),
                  complex(_INF, _NAN), complex(_NAN, 0.0), complex(1.0, _INF),
                  complex(_NAN, _NAN), complex(1e-10, 1e-10)])
    want_re = np.array([_INF, -1.0, _INF * math.cos(1.0), -1.0, _INF, -1.0, _INF, _NAN, _NAN,
                        _NAN, 1e-10])
    want_im = np.array([0.0, 0.0, _INF, 0.0, _NAN, 0.0, _NAN, 0.0, _NAN, _NAN, 1e-10])
    for dt in (np.complex64, np.complex128):
        for where, got in everywhere(pnp.expm1, z.astype(dt)):
            g = np.asarray(got)
            assert g.dtype == dt, where
            np.testing.assert_allclose(g.real, want_re, rtol=1e-6, equal_nan=True, err_msg=where)
            np.testing.assert_allclose(np.where(np.isnan(want_im), np.nan, np.abs(g.imag)),
                                       np.abs(want_im), rtol=1e-6, equal_nan=True, err_msg=where)
