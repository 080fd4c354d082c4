"""Edge cases the fuzzer found where an intermediate overflowed although the result is
representable: ``ldexp``'s power-of-two factors, ``sigmoid``'s ``exp(-x)``, and the
softmax shift by an infinite maximum. Checked eagerly and under jit on interp and
native against NumPy (or the limit written out where NumPy's own formula overflows)."""
import numpy as np
import pytest

import plait
import plait.lax as lax
import plait.nn as nn
import plait.numpy as pnp

RUNS = [("eager", lambda f: f), ("interp", lambda f: plait.jit(f, backend="interp")),
        ("native", lambda f: plait.jit(f, backend="native"))]


@pytest.mark.parametrize("name,run", RUNS)
def test_ldexp_factors_never_overflow(name, run):
    for dt in (np.float16, np.float32, np.float64):
        fi = np.finfo(dt)
        x = np.array([0, 1, -3, fi.smallest_subnormal, fi.max, np.inf, np.nan, 1.5], dt)
        i = np.array([40, 40, 40, 300, -300, 5, 1, -2000], np.int64)
        with np.errstate(all="ignore"):
            want = np.ldexp(x, i)
        got = np.asarray(run(pnp.ldexp)(x, i))
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


@pytest.mark.parametrize("name,run", RUNS)
def test_sigmoid_of_negative_half_precision(name, run):
    x = np.array([-12.453125, -16.0, -20.0, 0.0, 3.0, -np.inf, np.inf, np.nan], np.float16)
    want = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float16)
    np.testing.assert_array_equal(np.asarray(run(nn.sigmoid)(x)), want)


@pytest.mark.parametrize("name,run", RUNS[:2])
def test_complex_logistic_limit(name, run):
    z = np.array([complex(-289.35894, -2.27e-7), complex(-2.78e33, 2.765), 1 + 2j], np.complex64)
    want = np.array([0, 0, 1 / (1 + np.exp(-(1 + 2j)))], np.complex64)
    np.testing.assert_allclose(np.asarray(run(lax.logistic)(z)), want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("name,run", RUNS)
def test_softmax_with_infinite_maximum_is_nan(name, run):
    x = np.array([[np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0]])
    with np.errstate(all="ignore"):
        s = x - x.max(axis=1, keepdims=True)                 # NumPy's (and JAX's) formula
        want_sm = np.exp(s) / np.exp(s).sum(axis=1, keepdims=True)
        want_lsm = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(np.asarray(run(nn.softmax)(x)), want_sm, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(run(nn.log_softmax)(x)), want_lsm, rtol=1e-15)
