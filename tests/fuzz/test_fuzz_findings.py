"""Regression tests for plait bugs the differential fuzzer found (each a shrunk reproducer)."""
from __future__ import annotations

import numpy as np
import pytest

import plait
import plait.numpy as pnp


def _engines(f, *args):
    """``f`` eagerly, under interp and under native, as NumPy arrays."""
    return [np.asarray(f(*plait.device_put(args))),
            np.asarray(plait.jit(f, backend="interp")(*args)),
            np.asarray(plait.jit(f, backend="native")(*args))]


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_sinc_at_zero_is_one(dt):
    """float16 sinc(0) was NaN: the 1e-20 stand-in for 0 underflowed to 0 (0/0)."""
    x = np.array([0.0, -0.0, 0.25, 3.0], dt)
    want = np.sinc(x)
    for got in _engines(pnp.sinc, x):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=4e-3 if dt == "float16" else 1e-6)


def test_sinc_gradient_at_zero():
    g = plait.grad(lambda v: pnp.sum(pnp.sinc(v)))(np.array([0.0, 0.5]))
    h = 1e-6
    fd = (np.sinc(np.array([0.0, 0.5]) + h) - np.sinc(np.array([0.0, 0.5]) - h)) / (2 * h)
    np.testing.assert_allclose(np.asarray(g), fd, atol=1e-6)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_native_sign_of_negative_zero_is_positive_zero(dt):
    """Native sign(-0.0) returned -0.0; NumPy (and eager plait) give +0.0."""
    x = np.array([-0.0, 0.0, np.nan, -2.0, 3.0], dt)
    want = np.sign(x)
    for got in _engines(pnp.sign, x):
        np.testing.assert_array_equal(got, want)
        assert not np.signbit(got[:2]).any()


@pytest.mark.parametrize("dt", ["float32", "float64", "bool", "int8", "complex64"])
def test_outer_is_elementwise_products(dt):
    """outer(-1.5, 0.0) was +0.0 (an empty-contraction sum); NumPy multiplies: -0.0."""
    a = np.array([-1.5, 2.0, 0.0], dt) if dt != "bool" else np.array([True, False, True])
    b = np.array([0.0, -0.0, 1.0, np.inf], dt) if dt in ("float32", "float64") else \
        (np.array([True, True, False, False]) if dt == "bool" else np.array([0, 1, 2, 3], dt))
    with np.errstate(all="ignore"):
        want = np.outer(a, b)
    for got in _engines(pnp.outer, a, b):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        if dt in ("float32", "float64"):
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_round_of_bool_is_float16():
    """NumPy rounds booleans through rint (float16); plait returned bool."""
    x = np.array([True, False])
    want = np.round(x)
    for got in _engines(lambda v: pnp.round(v), x):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["log2", "log10"])
def test_float16_log2_log10_round_once(name):
    """float16 log2 rounded log(x) and the scaling separately: 2 ulps from NumPy."""
    x = np.array([0.004241943359375, 0.3, 7.0, 1000.0, 1.0, 0.0, np.inf], np.float16)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    for got in _engines(getattr(pnp, name), x):
        assert got.dtype == want.dtype
        np.testing.assert_array_max_ulp(got, want, maxulp=1)


@pytest.mark.parametrize("name,ref", [("relu", lambda x: np.maximum(x, 0)),
                                      ("relu6", lambda x: np.minimum(np.maximum(x, 0), 6))])
def test_relu_propagates_nan(name, ref):
    """nn.relu(NaN) was 0: a NaN (a diverged activation) vanished silently."""
    import plait.nn as nn
    x = np.array([np.nan, -1.0, 0.0, 2.5, 7.0, np.inf, -np.inf], np.float32)
    for got in _engines(getattr(nn, name), x):
        np.testing.assert_array_equal(got, ref(x))
    g = plait.grad(lambda v: pnp.sum(getattr(nn, name)(v)))(np.array([-1.0, 0.0, 2.0, 7.0]))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0, 1.0, 0.0 if name == "relu6" else 1.0])


def test_native_float16_rounds_between_fused_ops():
    """Native float16 chains kept float32 precision between ops: cosh(37) stayed finite
    inside the kernel, so log2(cosh(x)) was 52.4 where NumPy (and plait eagerly) give inf."""
    x = np.array([-37, 3, 0], np.int8)
    with np.errstate(all="ignore"):
        want = np.log2(np.cosh(x))
        want_std = np.std(np.array([0.0, 16544.0], np.float16))
    for got in _engines(lambda v: pnp.log2(pnp.cosh(v)), x):
        np.testing.assert_array_equal(got, want)
    a, b = np.array([1.5], np.float16), np.array([1.5], np.float32)
    for got in _engines(lambda u, v: pnp.fmin(v, pnp.log2(u)), a, b):
        np.testing.assert_array_equal(got, np.fmin(b, np.log2(a)))
    for got in _engines(pnp.std, np.array([0.0, 16544.0], np.float16)):
        np.testing.assert_array_equal(got, want_std)


@pytest.mark.parametrize("name", ["log2", "log10"])
def test_complex_log2_log10_of_zero(name):
    """log2(0j) was -inf+nanj: dividing by a complex log(2) turned the 0 imaginary part
    into nan; NumPy scales the parts: -inf+0j."""
    x = np.array([0j, 1 + 1j, -2 + 0j, 1e-300 + 0j], np.complex128)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    for got in _engines(getattr(pnp, name), x):
        np.testing.assert_array_equal(np.isnan(got.imag), np.isnan(want.imag))
        np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("name,deriv", [("arccosh", lambda x: 1 / np.sqrt(x * x - 1)),
                                        ("log1p", lambda x: 1 / (1 + x))])
def test_gradient_of_a_python_float(name, deriv):
    """grad(arccosh)(2.0) and grad(log1p)(2.0) raised "sub/add requires the same dtype,
    float64, int64": the JVP combined the Python int 1 with the raw Python-float primal."""
    f = getattr(pnp, name)
    for x in (2.0, np.float64(2.0), np.array([2.0, 3.5], np.float32)):
        g = plait.grad(lambda v: pnp.sum(f(v)))(x)
        np.testing.assert_allclose(np.asarray(g), deriv(np.asarray(x, np.float64)), rtol=1e-6)
    _, t = plait.jvp(f, (2.0,), (1.0,))
    np.testing.assert_allclose(float(t), deriv(2.0))


def test_power_gradient_of_python_floats():
    """grad(power, (0, 1))(1.5, 0.7) raised the same dtype error (``y - 1`` in the JVP)."""
    gx, gy = plait.grad(pnp.power, argnums=(0, 1))(1.5, 0.7)
    np.testing.assert_allclose([float(gx), float(gy)], [0.7 * 1.5 ** -0.3, np.log(1.5) * 1.5 ** 0.7])


def test_float16_hypot_rounds_once_as_numpy():
    """float16 hypot(3.625, 0.5) was 3.656 (NumPy 3.66): computed in float16 it rounded
    five times; NumPy's loop computes in float32 and rounds once. Bit-exact over a sweep."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(4096) * rng.choice([1e-3, 1.0, 100.0, 1e4], 4096)).astype(np.float16)
    y = (rng.standard_normal(4096) * 3).astype(np.float16)
    x[:5] = [3.625, np.inf, -np.inf, np.nan, 0.0]
    y[:5] = [0.5, np.nan, 1.0, np.inf, 0.0]
    want = np.hypot(x, y)
    for got in _engines(pnp.hypot, x, y):
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, want)


def test_float16_floor_divide_and_remainder_round_once_as_numpy():
    """float16 ``-4.5078125 // 0.004631`` was -975 (NumPy -974, the true floor of
    -973.39): plait ran NumPy's divmod in float16, rounding ``a - mod`` and the quotient;
    NumPy's loop computes in float32 and rounds once. Bit-exact over a sweep of finite
    operands (an infinite one follows the Array API standard, see ``floor_divide``)."""
    rng = np.random.default_rng(1)
    scale = rng.choice([1e-3, 1.0, 100.0, 1e4], 4096)
    x = (rng.standard_normal(4096) * scale).astype(np.float16)
    y = (rng.standard_normal(4096) * rng.choice([1e-3, 0.1, 1.0, 10.0], 4096)).astype(np.float16)
    x[:4] = [-4.5078125, 0.0, -0.0, 7.0]
    y[:4] = [0.00463104248046875, 3.0, 3.0, 0.0]
    with np.errstate(all="ignore"):
        want = np.divmod(x, y)
    for f, w in ((pnp.floor_divide, want[0]), (pnp.remainder, want[1])):
        for got in _engines(f, x, y):
            assert got.dtype == np.float16
            np.testing.assert_array_equal(got, w)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(w))


def _ulp16(v):
    """The float16 spacing at each of ``v`` (float64), at least the smallest subnormal."""
    return np.spacing(np.abs(v).astype(np.float16)).astype(np.float64)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_float16_softmax_rounds_once(name):
    """float16 softmax of [-1.6855, 2.828, -2.875] gave 0.01078 for 0.0108 (3 ulps off):
    each step rounded to float16, the shift ``x - max`` by up to 2^-9 (log_softmax's
    results near 0 were off by ~1900 ulps). Computed in float32 and rounded once, every
    value is within an ulp of the float64 one; log_softmax, which returns the shift minus
    the log of the sum unscaled, also within float32's rounding of those two terms."""
    import plait.nn as nn
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((256, 7)) * rng.choice([0.1, 1.0, 4.0, 30.0], (256, 1))).astype(np.float16)
    x[0, :3] = [-1.685546875, 2.828125, -2.875]
    x[0, 3:] = -np.inf
    w = x.astype(np.float64)
    e = np.exp(w - w.max(axis=1, keepdims=True))
    lse = np.log(e.sum(axis=1, keepdims=True)) + w.max(axis=1, keepdims=True)
    want = {"softmax": e / e.sum(axis=1, keepdims=True), "log_softmax": w - lse,
            "logsumexp": lse[:, 0]}[name]
    f = {"softmax": lambda v: nn.softmax(v, axis=1), "log_softmax": lambda v: nn.log_softmax(v, axis=1),
         "logsumexp": lambda v: nn.logsumexp(v, axis=1)}[name]
    for got in _engines(f, x):
        assert got.dtype == np.float16
        g = got.astype(np.float64)
        finite = np.isfinite(want)
        np.testing.assert_array_equal(g[~finite], want[~finite])
        f32 = 2.0 ** -22 * (np.abs(w - w.max(axis=1, keepdims=True)) + 1) if name == "log_softmax" else 0
        err = (np.abs(g[finite] - want[finite]) - np.broadcast_to(f32, g.shape)[finite]) / _ulp16(want[finite])
        assert np.all(err <= 1), np.max(err)


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_reciprocal_is_numpys(dt):
    """complex ``reciprocal(-1.5e-323+0j)`` was ``-inf+nanj`` (NumPy ``-inf-0j``): it was
    ``1 / x``, whose complex division multiplies by the denominator's reciprocal
    (0 * inf). NumPy's reciprocal divides each part by the denominator: bit-exact now over
    zeros, subnormals, huge values, infinities and NaNs (native: within the ulp its
    contraction of ``a + b r`` into an FMA moves a finite part), and its derivative is
    -1/x^2."""
    vals = [0.0, -0.0, 1e-323, -1.5e-323, 1e-300, 1e300, 3.0, -2.5, 1e-40, 2e38,
            np.inf, -np.inf, np.nan]
    with np.errstate(all="ignore"):
        x = np.array([complex(a, b) for a in vals for b in vals]).astype(dt)
        want = np.reciprocal(x)
    eps = np.finfo(x.real.dtype).eps
    for engine, got in zip(("eager", "interp", "native"), _engines(pnp.reciprocal, x)):
        assert got.dtype == x.dtype
        for g, w in ((got.real, want.real), (got.imag, want.imag)):
            exact = ~np.isfinite(w) | (w == 0) | (engine != "native")
            np.testing.assert_array_equal(g[exact], w[exact])
            np.testing.assert_allclose(g[~exact], w[~exact], rtol=2 * eps, atol=0)
            num = ~np.isnan(w)
            np.testing.assert_array_equal(np.signbit(g[num]), np.signbit(w[num]))
    z = np.array([3.0 - 4.0j, -0.5 + 2.0j, 1e-3 + 1e-4j]).astype(dt)
    t = np.array([1.0 + 0.5j, -2.0j, 1.0]).astype(dt)
    _, dz = plait.jvp(pnp.reciprocal, (z,), (t,))
    np.testing.assert_allclose(np.asarray(dz), -t / z ** 2, rtol=1e-5 if dt == "complex64" else 1e-12)


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_scalar_powers_numpy_computes_as_sqrt_square_reciprocal(dt):
    """float32 ``power(-inf, 0.5)`` was inf (NumPy nan): NumPy's float32/float64 loops
    compute a scalar exponent of 0.5, 2 or -1 as sqrt, square and reciprocal, so
    ``(-0.0) ** 0.5`` is -0.0 too; an array of exponents (and float16) keeps pow's inf
    and 0.0. Bit-exact, signs of zeros included, on every engine (pow within libm's
    ulps)."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(512) * 10.0 ** rng.uniform(-30, 30, 512)).astype(dt)
    x[:6] = [-np.inf, -0.0, 0.0, np.inf, np.nan, -1.0]
    exponents = [0.5, 2.0, -1.0, np.float32(0.5), np.float64(-1.0), np.array(2.0),
                 np.full(x.shape, 0.5, dt)]
    for e in exponents:
        with np.errstate(all="ignore"):
            want = np.power(x, e)
        for got in _engines(lambda v, e=e: pnp.power(v, e), x):
            assert got.dtype == want.dtype
            num = ~np.isnan(want)
            np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]))
            if np.ndim(e) == 0:
                np.testing.assert_array_equal(got, want)
            else:       # pow: the special values exactly, the rest within libm's ulps
                np.testing.assert_array_equal(got[:6], want[:6])
                np.testing.assert_allclose(got[6:], want[6:], rtol=4 * np.finfo(dt).eps)


@pytest.mark.parametrize("shape", [(), (3,)])
def test_float_power_and_lax_pow_are_cs_pow_at_a_half(shape):
    """float16 ``float_power(-0.0, 0.5)`` was -0.0 (NumPy 0.0): ``lax.pow`` ran NumPy's
    ``power``, whose float loops compute an exponent of 0.5 broadcast over the base (a
    0-d operand) as sqrt, and GCC vectorized the native ``pow(x, 0.5)`` as sqrt while
    the loop's remainder called pow (``[-0.0] * 3`` gave ``[-0.0, -0.0, 0.0]``).
    ``lax.pow`` is C's pow on every engine and shape, as ``float_power`` is in NumPy:
    +0.0 and +inf at -0.0 and -inf."""
    from plait import lax
    base = np.array([-0.0, -np.inf, 2.25])
    for dt in ("float16", "float32", "float64"):
        for v in base:
            x = np.full(shape, v, dt)
            with np.errstate(all="ignore"):
                want = np.float_power(x, 0.5)
            for f in (lambda a: pnp.float_power(a, 0.5), lambda a: lax.pow(a, 0.5)):
                for got in _engines(f, x):
                    np.testing.assert_array_equal(got, want.astype(got.dtype))
                    assert not np.signbit(got).any()


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_sign_of_a_subnormal_is_a_unit(dt):
    """``sign(-4e-323j)`` was nan-infj: plait divided by the complex (|z|, 0), whose
    division takes 1 / |z| (inf for a subnormal |z|); NumPy divides each part by |z|.
    Within 2 ulps of NumPy (|z| is plait's own, NumPy's is libm's hypot) over magnitudes
    from subnormal to near overflow."""
    fi = np.finfo(np.dtype(dt).char.lower())
    rng = np.random.default_rng(7)
    mag = np.exp(rng.uniform(np.log(fi.smallest_subnormal), np.log(fi.max) - 1, (2, 400)))
    z = (rng.standard_normal((2, 400)) * mag).astype(fi.dtype)
    x = np.concatenate([z[0] + 1j * z[1],
                        np.array([-4e-323j, 5e-324 + 5e-324j, 3 + 4j, 0j,
                                  complex(np.inf, 1), complex(np.nan, 1)])]).astype(dt)
    want = np.sign(x)
    for got in _engines(pnp.sign, x):
        assert np.isfinite(got).sum() == np.isfinite(want).sum()
        for part in (np.real, np.imag):
            np.testing.assert_array_max_ulp(part(got), part(want), maxulp=2)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16"])
def test_integer_round_to_tens_breaks_ties_to_even(dt):
    """``round(int8(50), -2)`` was 100 (NumPy 0): where 2r would overflow the integer
    type, a remainder of exactly f / 2 counted as rounding up instead of a tie. Every
    value of the type (int16: every 7th), decimals -1 to -4, as NumPy's."""
    info = np.iinfo(dt)
    x = np.arange(info.min, info.max + 1, 1 if info.bits == 8 else 7, dtype=dt)
    for d in (-1, -2, -3, -4):
        want = np.round(x, d)
        for got in _engines(lambda v, d=d: pnp.round(v, d), x):
            np.testing.assert_array_equal(got, want, err_msg=f"{dt} decimals={d}")
