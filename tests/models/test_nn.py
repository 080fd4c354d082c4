"""plait.nn functions against NumPy formulas, gradients against finite differences."""
import math

import numpy as np
import pytest

import plait
from plait import nn
from plait.test_util import check_grads

X = np.linspace(-4.0, 4.0, 17).astype(np.float32) + np.float32(0.1)   # avoid the kinks at 0
X2 = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)


def _erf(v):
    return np.vectorize(math.erf)(v)


def _sig(x):
    return 1 / (1 + np.exp(-x))


REFS = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, lambda x: np.minimum(np.maximum(x, 0), 6)),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "selu": (nn.selu, lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * np.expm1(x))),
    "sigmoid": (nn.sigmoid, _sig),
    "silu": (nn.silu, lambda x: x * _sig(x)),
    "softplus": (nn.softplus, lambda x: np.log1p(np.exp(x))),
    "gelu_tanh": (nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False),
                   lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
}


@pytest.mark.parametrize("name", sorted(REFS))
def test_activation_values(name):
    f, ref = REFS[name]
    got = f(X)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), ref(X.astype(np.float64)), rtol=2e-6,
                               atol=2e-6)


@pytest.mark.parametrize("name", sorted(REFS))
def test_activation_grads(name):
    check_grads(REFS[name][0], (X.astype(np.float64),), order=2)


def test_relu_grad_at_zero_is_zero():
    assert float(plait.grad(nn.relu)(0.0)) == 0.0


def test_softmax_family():
    x = X2.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(nn.softmax(x, axis=1)), sm, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(nn.log_softmax(x, axis=1)), np.log(sm), rtol=1e-12)
    lse = np.log(np.exp(x).sum(axis=0))
    np.testing.assert_allclose(np.asarray(nn.logsumexp(x, axis=0)), lse, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(nn.logsumexp(x)), np.log(np.exp(x).sum()),
                               rtol=1e-12)
    assert nn.logsumexp(x, axis=1, keepdims=True).shape == (3, 1)


def test_softmax_no_overflow():
    big = np.array([1000.0, 1000.0, -1000.0], np.float32)
    np.testing.assert_allclose(np.asarray(nn.softmax(big)), [0.5, 0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(float(nn.logsumexp(big)), 1000 + math.log(2), rtol=1e-6)
    assert np.isfinite(np.asarray(nn.log_softmax(big))[:2]).all()


def test_softmax_family_grads():
    x = X2.astype(np.float64)
    check_grads(lambda v: nn.softmax(v, axis=1), (x,), order=2)
    check_grads(lambda v: nn.log_softmax(v, axis=0), (x,), order=2)
    check_grads(lambda v: nn.logsumexp(v, axis=1), (x,), order=2)
    check_grads(lambda v: nn.standardize(v, axis=1), (x,), order=1)


def test_one_hot():
    got = nn.one_hot(np.array([0, 2, 1, 5]), 3)
    np.testing.assert_array_equal(np.asarray(got), np.eye(3, dtype=np.float32)[[0, 2, 1]].tolist()
                                  + [[0, 0, 0]])
    assert got.dtype == np.float32
    got0 = nn.one_hot(np.array([[1, 0]]), 2, dtype=np.int32, axis=0)
    assert got0.shape == (2, 1, 2) and got0.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got0)[:, 0, :], [[0, 1], [1, 0]])


def test_standardize():
    x = X2.astype(np.float64)
    want = (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.asarray(nn.standardize(x, axis=1)), want, rtol=1e-12)


def test_nn_under_jit_matches_eager():
    f = lambda x: nn.log_softmax(nn.gelu(x) + nn.selu(x) * nn.silu(x), axis=-1)
    np.testing.assert_allclose(np.asarray(plait.jit(f, backend="interp")(X2)),
                               np.asarray(f(X2)), rtol=1e-6)


@pytest.mark.parametrize("name", ["glorot_uniform", "glorot_normal", "he_uniform", "he_normal",
                                  "lecun_uniform", "lecun_normal"])
def test_initializers_variance(name):
    shape = (3, 3, 64, 96)                        # HWIO: fan_in 576, fan_out 864
    fan_in, fan_out = 576, 864
    var = {"glorot": 2 / (fan_in + fan_out), "he": 2 / fan_in, "lecun": 1 / fan_in}[
        name.split("_")[0]]
    w = np.asarray(getattr(nn.init, name)()(plait.random.key(0), shape))
    assert w.shape == shape and w.dtype == np.float32
    assert abs(w.mean()) < 0.02 * math.sqrt(var)
    assert abs(w.var() / var - 1) < 0.03
    if name.endswith("uniform"):
        assert np.abs(w).max() <= math.sqrt(3 * var)
    else:                                         # truncated at two standard deviations
        assert np.abs(w).max() <= 2 * math.sqrt(var) / 0.87962566103423978 + 1e-6


def test_initializer_oihw_axes_and_errors():
    w = nn.init.he_normal(in_axis=1, out_axis=0)(plait.random.key(1), (32, 16, 3, 3))
    assert abs(np.asarray(w).var() / (2 / 144) - 1) < 0.1
    with pytest.raises(plait.errors.PlaitValueError):
        nn.init.variance_scaling(1.0, "fan_sideways", "normal")
    with pytest.raises(plait.errors.PlaitValueError):
        nn.init.he_normal()(plait.random.key(0), (5,))


def test_softplus_derivatives_at_zero():
    # softplus is logaddexp(x, 0): its tie at x == 0 must keep every derivative right.
    assert float(plait.grad(nn.softplus)(0.0)) == pytest.approx(0.5)
    assert float(plait.grad(plait.grad(nn.softplus))(0.0)) == pytest.approx(0.25)
