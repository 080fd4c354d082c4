"""Regression tests for xla lowering bugs the differential fuzzer found
(``python -m plait.fuzz --mode values --backend xla``): each starts from the shrunk
reproducer and compares the xla backend with interp (the reference) and NumPy.

XLA:CPU behaviour jax.jit shares (denormals flushed, XLA's complex formulas) is not
here: ``plait/fuzz/known.py`` records it and docs/xla.md describes it.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402
import plait.lax as lax  # noqa: E402
import plait.numpy as pnp  # noqa: E402


def _xla_interp(f, *args):
    """``f``'s outputs under the xla and the interp backend, as NumPy arrays."""
    def run(backend):
        out = plait.jit(f, backend=backend)(*args)
        return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out])]
    return run("xla"), run("interp")


def _assert_same(got, want, rtol):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)   # NaN positions must agree


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("name", ["sin", "cos"])
def test_complex_sin_cos_keep_tiny_parts(name, dt):
    """sin(3.1e-16 - 1.7e-9j) lost its imaginary part on xla (XLA's complex sine gives
    +0j); the lowering now computes it from sin, cos and expm1 of the parts."""
    x = np.array([complex(3.111089546585185e-16, -1.7449821587689485e-09), 1 + 2j, -3 + 40j,
                  -1e-30j, 2.5 - 1e-20j, complex(0, np.inf), 0j, -0.5 + 0.25j], dt)
    fn = getattr(pnp, name)
    (got,), (ref,) = _xla_interp(fn, x)
    rtol = 2e-6 if dt == "complex64" else 1e-14
    for part in (np.real, np.imag):
        _assert_same(part(got), part(ref), rtol)
        with np.errstate(all="ignore"):
            _assert_same(part(got), part(getattr(np, name)(x)), rtol)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_real_sin_cos_unchanged(dt):
    x = np.linspace(-20, 20, 41).astype(dt)
    for name in ("sin", "cos"):
        (got,), (ref,) = _xla_interp(getattr(pnp, name), x)
        _assert_same(got, ref, 1e-6 if dt == "float32" else 1e-14)


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_exp2_is_exp_of_scaled_parts(dt):
    """exp2(38.4 - 3.9j) was ~2e-12 off (XLA's complex power 2 ** z), exp2(200 + 0j) and
    exp2(-inf + 0j) were NaN; NumPy computes exp(z ln 2)."""
    x = np.array([complex(38.424964624360186, -3.922265088909503), complex(-np.inf, 0),
                  complex(200, 0), 1000 + 1j, 0j, complex(1e-30, -2), -3 + 0.5j], dt)
    (got,), (ref,) = _xla_interp(pnp.exp2, x)
    rtol = 2e-6 if dt == "complex64" else 1e-14
    with np.errstate(all="ignore"):
        want = np.exp2(x)
    for part in (np.real, np.imag):
        _assert_same(part(got), part(ref), rtol)
        _assert_same(part(got), part(want), rtol)


@pytest.mark.parametrize("dt", ["uint8", "uint16", "uint32", "uint64", "int8", "int16",
                                "int32", "int64"])
def test_shift_right_arithmetic_of_unsigned_shifts_in_zeros(dt):
    """uint16 36456 >> 36456 was 65535 on xla (XLA's arithmetic shift copies the top bit
    of unsigned operands too); plait shifts unsigned operands logically, 0 past the width."""
    info = np.iinfo(dt)
    bits = info.bits
    x = np.array([info.max, info.max // 3 + 7, 5, 0, info.min, info.min + 1, -1 if info.min
                  else 1, 36456 % (info.max + 1)], dt)
    y = np.array([bits, 3, 1, 2, 1, bits - 1, bits + 5, 36456 % (info.max + 1)], dt)
    (got,), (ref,) = _xla_interp(lax.shift_right_arithmetic, x, y)
    assert got.dtype == np.dtype(dt)
    np.testing.assert_array_equal(got, ref)
    if info.min == 0:           # unsigned: NumPy's >> where the shift is in range, else 0
        with np.errstate(all="ignore"):
            want = np.where(y < bits, np.right_shift(x, np.minimum(y, bits - 1)), 0).astype(dt)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_sign_of_negative_zero_is_positive_zero(dt):
    """xla sign(-0.0) was -0.0 (XLA's sign keeps the zero's sign); NumPy gives +0.0."""
    x = np.array([-0.0, 0.0, np.nan, -2.0, 3.0, -np.inf], dt)
    (got,), (ref,) = _xla_interp(pnp.sign, x)
    np.testing.assert_array_equal(got, np.sign(x))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))
    assert not np.signbit(got[:2]).any()


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape", [(0,), (0, 3)])
def test_scan_of_length_zero(shape, reverse):
    """A length-0 scan emitted a dynamic_slice of one row of an empty array: the module
    did not parse. Its carry is the initial carry and its ys are empty."""
    xs = np.zeros(shape, np.float16)

    def f(x):
        return lax.scan(lambda c, v: (c + v, c * v), pnp.ones(x.shape[1:], x.dtype) * 2, x,
                        reverse=reverse)
    got, ref = _xla_interp(f, xs)
    for g, r in zip(got, ref):
        assert g.dtype == r.dtype and g.shape == r.shape
        np.testing.assert_array_equal(g, r)
    np.testing.assert_array_equal(got[0], np.full(shape[1:], 2, np.float16))
    assert got[1].shape == shape


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_float16_cumulative_rounds_every_running_value(name):
    """float16 cumprod of [1311, 1, -266, -0.0, 1, 1] was [.., -inf, 0, 0, 0] on xla (the
    running product was kept in float32, so it never overflowed); NumPy's running
    float16 product overflows to -inf and -inf * -0.0 is NaN."""
    x = np.array([1311.0, 1.0, -266.0, -0.0, 1.0, 1.0], np.float16)
    if name == "cumsum":
        x = np.array([65504.0, 65504.0, -65504.0, 1.0], np.float16)
    fn = getattr(pnp, name)
    (got,), (ref,) = _xla_interp(fn, x)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, want)
