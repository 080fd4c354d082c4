"""float32 mode (config x64=False, JAX's defaults): default dtypes, NumPy inputs and
explicit 64-bit requests become 32-bit; NEP 50 weak promotion unchanged; jit on both
backends; a small model trained end to end against a NumPy float32 reference."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.config import Config

BACKENDS = ["interp", "native"]


@pytest.fixture
def x32():
    plait.config.update("jax_enable_x64", False)     # JAX's name is an alias
    assert plait.config.x64 is False
    yield
    plait.config.update("x64", True)


def test_env_and_default(monkeypatch):
    assert plait.config.x64 is True
    monkeypatch.setenv("PLAIT_X64", "0")
    assert Config().x64 is False
    monkeypatch.setenv("PLAIT_X64", "1")
    assert Config().x64 is True


def test_default_dtypes(x32):
    f32, i32, c64 = np.dtype("float32"), np.dtype("int32"), np.dtype("complex64")
    assert pnp.ones(3).dtype == f32
    assert pnp.zeros(2, dtype=np.float64).dtype == f32
    assert pnp.arange(3).dtype == i32
    assert pnp.arange(3.0).dtype == f32
    assert pnp.asarray(np.ones(2)).dtype == f32
    assert pnp.asarray(np.arange(2, dtype=np.uint64)).dtype == np.dtype("uint32")
    assert pnp.array(1.0).dtype == f32 and pnp.array(1).dtype == i32
    assert pnp.asarray(1j).dtype == c64
    assert pnp.mean(pnp.arange(4)).dtype == f32
    assert pnp.linspace(0, 1, 3).dtype == f32
    assert (pnp.arange(3) * 0.5).dtype == f32


def test_promotion_unchanged(x32):
    assert (pnp.ones(2, dtype=np.float16) + 1.0).dtype == np.float16
    assert (pnp.ones(2, dtype=np.int8) + 1).dtype == np.int8
    assert (pnp.ones(2, dtype=np.int16) + pnp.ones(2, dtype=np.uint8)).dtype == np.int16
    assert (pnp.ones(2, dtype=np.float32) * 2j).dtype == np.complex64
    # NumPy gives float64 here; float32 mode narrows that to float32
    assert (pnp.ones(2, dtype=np.int32) + pnp.ones(2, dtype=np.float32)).dtype == np.float32


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_in_float32_mode(x32, backend):
    f = plait.jit(lambda a, b: pnp.tanh(a @ b + 1.0) * 0.5, backend=backend)
    a = np.linspace(-1, 1, 6).reshape(2, 3)
    b = np.linspace(0, 2, 12).reshape(3, 4)
    out = f(a, b)
    assert out.dtype == np.float32
    ref = np.tanh(a.astype(np.float32) @ b.astype(np.float32) + np.float32(1)) * np.float32(.5)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6)
    assert "f64" not in f.lower(a, b).as_text()


def _numpy_train(X, y, W, b, lr, steps):
    """Reference: logistic regression by gradient descent, all in float32."""
    for _ in range(steps):
        z = X @ W + b
        p = 1 / (1 + np.exp(-z))
        g = (p - y) / np.float32(len(y))
        W = W - lr * (X.T @ g)
        b = b - lr * g.sum()
    return W, b


@pytest.mark.parametrize("backend", BACKENDS)
def test_small_model_end_to_end(x32, backend):
    r = np.random.default_rng(0)
    X = r.standard_normal((64, 5))                    # float64 data, as users have it
    y = (X @ np.arange(1.0, 6.0) > 0).astype(np.float64)

    def loss(params, X, y):
        W, b = params
        z = X @ W + b
        return pnp.mean(pnp.logaddexp(0.0, z) - y * z)

    @plait.jit
    def step(params, X, y):
        g = plait.grad(loss)(params, X, y)
        return [p - 0.5 * gp for p, gp in zip(params, g)]
    step = plait.jit(step.fun, backend=backend)
    params = [pnp.zeros(5), pnp.zeros(())]
    l0 = float(loss(params, X, y))
    for _ in range(20):
        params = step(params, X, y)
    assert all(p.dtype == np.float32 for p in params)
    assert float(loss(params, X, y)) < 0.5 * l0
    W_ref, b_ref = _numpy_train(X.astype(np.float32), y.astype(np.float32),
                                np.zeros(5, np.float32), np.float32(0), np.float32(0.5), 20)
    assert W_ref.dtype == np.float32
    np.testing.assert_allclose(np.asarray(params[0]), W_ref, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(float(params[1]), b_ref, rtol=2e-5, atol=2e-6)
