"""stax layers (shapes and values against NumPy references), model builders and
optimizer steps against hand computation."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import random
from plait.example_libraries import models, optimizers, stax
from plait.errors import PlaitValueError

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)


def np_conv_nhwc(x, w, stride, pads):
    """Direct-loop reference convolution: x NHWC, w HWIO."""
    x = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    kh, kw, _, co = w.shape
    ho = (x.shape[1] - kh) // stride + 1
    wo = (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], ho, wo, co))
    for i in range(ho):
        for j in range(wo):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


@pytest.mark.parametrize("padding,stride", [("SAME", 1), ("VALID", 1), ("SAME", 2)])
def test_conv_nhwc(padding, stride):
    init, apply = stax.Conv(4, (3, 3), (stride, stride), padding)
    shape, (w, b) = init(random.key(0), X.shape)
    assert w.shape == (3, 3, 3, 4) and b.shape == (1, 1, 1, 4)
    out = apply((w, b), X)
    assert out.shape == shape
    pads = {("SAME", 1): ((1, 1), (1, 1)), ("VALID", 1): ((0, 0), (0, 0)),
            ("SAME", 2): ((0, 1), (0, 1))}[(padding, stride)]
    want = np_conv_nhwc(X, np.asarray(w, np.float64), stride, pads) + np.asarray(b)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)


def test_conv_nchw_matches_nhwc():
    init, apply = stax.Conv(5, (3, 3), padding="SAME", layout="NCHW")
    xc = X.transpose(0, 3, 1, 2)
    shape, (w, b) = init(random.key(1), xc.shape)
    assert w.shape == (5, 3, 3, 3) and shape == (2, 5, 6, 6) and b.shape == (1, 5, 1, 1)
    out = np.asarray(apply((w, b), xc))
    w_hwio = np.asarray(w).transpose(2, 3, 1, 0)
    want = np_conv_nhwc(X, w_hwio, 1, ((1, 1), (1, 1))).transpose(0, 3, 1, 2) + np.asarray(b)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(PlaitValueError):
        stax.Conv(5, (3, 3), layout="HWCN")


def test_dense_flatten_pools():
    init, apply = stax.serial(stax.Flatten, stax.Dense(7))
    shape, params = init(random.key(2), X.shape)
    assert shape == (2, 7)
    W, b = params[1]
    np.testing.assert_allclose(np.asarray(apply(params, X)),
                               X.reshape(2, -1) @ np.asarray(W) + np.asarray(b), rtol=1e-5,
                               atol=1e-6)
    r = X.reshape(2, 3, 2, 3, 2, 3)
    for layer, want in [(stax.MaxPool((2, 2)), r.max(axis=(2, 4))),
                        (stax.AvgPool((2, 2)), r.mean(axis=(2, 4)))]:
        shape, p = layer[0](random.key(0), X.shape)
        out = layer[1](p, X)
        assert shape == out.shape == (2, 3, 3, 3)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    shape, _ = stax.GlobalAvgPool()[0](None, X.shape)
    assert shape == (2, 3)
    np.testing.assert_allclose(np.asarray(stax.GlobalAvgPool()[1]((), X)), X.mean(axis=(1, 2)),
                               rtol=1e-6)
    ones = np.ones((1, 3, 3, 1), np.float32)
    same = stax.AvgPool((2, 2), (1, 1), "SAME")[1]((), ones)      # averages in-bounds entries
    np.testing.assert_allclose(np.asarray(same), np.ones((1, 3, 3, 1)), rtol=1e-6)
    nchw = stax.MaxPool((2, 2), spec="NCHW")[1]((), X.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(np.asarray(nchw), r.max(axis=(2, 4)).transpose(0, 3, 1, 2))


def test_elementwise_layers():
    np.testing.assert_allclose(np.asarray(stax.Relu[1]((), X)), np.maximum(X, 0))
    sel = np.asarray(stax.Selu[1]((), X))
    np.testing.assert_allclose(sel, 1.0507009873554805 * np.where(
        X > 0, X, 1.6732632423543772 * np.expm1(X)), rtol=1e-6)


def test_dropout():
    # rate is the KEEP probability, as in jax.example_libraries.stax
    init, apply = stax.Dropout(0.75)
    x = np.ones((200, 50), np.float32)
    out = np.asarray(apply((), x, rng=random.key(3)))
    assert set(np.unique(out).tolist()) <= {0.0, float(np.float32(1) / np.float32(0.75))}
    assert abs((out == 0).mean() - 0.25) < 0.02
    np.testing.assert_array_equal(np.asarray(apply((), x, mode="eval")), x)
    np.testing.assert_array_equal(np.asarray(stax.Dropout(0.5, mode="eval")[1]((), x)), x)
    np.testing.assert_array_equal(np.asarray(stax.Dropout(1.0)[1]((), x)), x)
    with pytest.raises(PlaitValueError, match="PRNG key"):
        apply((), x)
    for bad in (0.0, 1.5):
        with pytest.raises(PlaitValueError, match="keep probability"):
            stax.Dropout(bad)


def test_dropout_matches_jax():
    # jax.example_libraries.stax.Dropout(0.75) applied with rng=jax.random.PRNGKey(3),
    # recorded with JAX 0.10.2 (threefry bits are identical, so is the mask)
    x = np.arange(1, 25, dtype=np.float32).reshape(4, 6)
    jax_out = np.float32([
        [1.3333333730697632, 0.0, 4.0, 0.0, 6.666666507720947, 8.0],
        [9.333333015441895, 10.666666984558105, 12.0, 13.333333015441895, 14.666666984558105,
         16.0],
        [17.33333396911621, 18.66666603088379, 0.0, 21.33333396911621, 22.66666603088379, 24.0],
        [0.0, 26.66666603088379, 28.0, 29.33333396911621, 30.66666603088379, 0.0]])
    # in JAX's default float32 mode the keep probability is float32, so are the uniforms
    plait.config.update("x64", False)
    try:
        out = np.asarray(stax.Dropout(0.75)[1]((), x, rng=random.PRNGKey(3)))
    finally:
        plait.config.update("x64", True)
    np.testing.assert_allclose(out, jax_out, rtol=1e-6)


def test_batchnorm_train_eval_and_stats():
    init, apply = stax.BatchNorm()
    shape, params = init(random.key(0), X.shape)
    beta, gamma, rm, rv = params
    assert shape == X.shape and beta.shape == gamma.shape == rm.shape == rv.shape == (3,)
    params = (np.float32([0.5, -1, 0]), np.float32([2, 1, 3]), np.float32([0.1, 0.2, 0.3]),
              np.float32([1.5, 0.5, 2.0]))
    m, v = X.mean(axis=(0, 1, 2)), X.var(axis=(0, 1, 2))
    want_train = (X - m) / np.sqrt(v + 1e-5) * params[1] + params[0]
    np.testing.assert_allclose(np.asarray(apply(params, X)), want_train, rtol=1e-4, atol=1e-5)
    want_eval = (X - params[2]) / np.sqrt(params[3] + 1e-5) * params[1] + params[0]
    np.testing.assert_allclose(np.asarray(apply(params, X, mode="eval")), want_eval,
                               rtol=1e-5, atol=1e-6)
    new = stax.BatchNorm().update_stats(params, X, 0.9)
    n = X.size // 3
    np.testing.assert_allclose(np.asarray(new[2]), 0.9 * params[2] + 0.1 * m, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(new[3]), 0.9 * params[3] + 0.1 * v * n / (n - 1),
                               rtol=1e-5)
    with pytest.raises(PlaitValueError):
        apply(params, X, mode="inference")


def test_serial_update_stats_and_rng():
    model = stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.BatchNorm(), stax.Relu,
                        stax.Dropout(0.5), stax.Flatten, stax.Dense(3))
    init, apply = model
    shape, params = init(random.key(0), X.shape)
    assert shape == (2, 3)
    a = apply(params, X, rng=random.key(1))
    b = apply(params, X, rng=random.key(1))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    new = model.update_stats(params, X, rng=random.key(1))
    assert len(new) == len(params)
    conv_out = np.asarray(stax.Conv(4, (3, 3), padding="SAME")[1](params[0], X))
    np.testing.assert_allclose(np.asarray(new[1][2]), 0.1 * conv_out.mean(axis=(0, 1, 2)),
                               rtol=1e-4, atol=1e-6)
    out = plait.jit(lambda p, x: apply(p, x, mode="eval"), backend="interp")(new, X)
    np.testing.assert_allclose(np.asarray(out), np.asarray(apply(new, X, mode="eval")),
                               rtol=1e-5, atol=1e-6)


def test_model_shapes():
    shape, params = models.MLP((784, 512, 512, 10))[0](random.key(0), (128, 784))
    assert shape == (128, 10) and [p[0].shape for p in params if p] == [
        (784, 512), (512, 512), (512, 10)]
    init, apply = models.AllCNNC()
    shape, params = init(random.key(0), (2, 32, 32, 3))
    assert shape == (2, 10)
    convs = [p[0].shape for p in params if p]
    assert convs == [(3, 3, 3, 96), (3, 3, 96, 96), (3, 3, 96, 96), (3, 3, 96, 192),
                     (3, 3, 192, 192), (3, 3, 192, 192), (3, 3, 192, 192), (1, 1, 192, 192),
                     (1, 1, 192, 10)]
    assert apply(params, np.zeros((2, 32, 32, 3), np.float32)).shape == (2, 10)
    init, _ = models.VGG19(num_classes=7, dense_width=16)
    # traced, not run: the weights are large
    graph = plait.make_graph(lambda k: init(k, (1, 32, 32, 3))[1])(random.key(0))
    shapes = [tuple(v.aval.shape) for v in graph.graph.outvars]
    convs = [s for s in shapes if len(s) == 4 and s[:2] == (3, 3)]
    assert [c[3] for c in convs] == [64, 64, 128, 128] + [256] * 4 + [512] * 8
    assert [s for s in shapes if len(s) == 2] == [(512, 16), (16, 16), (16, 7)]
    assert len(shapes) == 2 * (16 + 3)


def test_optimizer_steps_by_hand():
    p = {"w": np.float32([1.0, -2.0]), "b": (np.float32(0.5),)}
    g = {"w": np.float32([0.5, 1.0]), "b": (np.float32(-1.0),)}
    lr = 0.1
    # sgd
    opt = optimizers.sgd(lr)
    s = opt.update_fun(0, g, opt.init_fun(p))
    np.testing.assert_allclose(np.asarray(opt.get_params(s)["w"]), [0.95, -2.1], rtol=1e-6)
    # momentum, two steps: v1 = g, v2 = 0.9 g + g
    opt = optimizers.momentum(lr, 0.9)
    s = opt.update_fun(1, g, opt.update_fun(0, g, opt.init_fun(p)))
    np.testing.assert_allclose(np.asarray(opt.get_params(s)["w"]),
                               np.float32([1.0, -2.0]) - lr * (1 + 1.9) * g["w"], rtol=1e-6)
    # adam, two steps with a schedule, jitted
    opt = optimizers.adam(lambda i: lr / (1 + i), 0.9, 0.999, 1e-8)
    upd = plait.jit(opt.update_fun, backend="interp")
    s = upd(1, g, upd(0, g, opt.init_fun(p)))
    x, m, v = np.float64([1.0, -2.0]), 0.0, 0.0
    gw = np.float64([0.5, 1.0])
    for t in (1, 2):
        m = 0.9 * m + 0.1 * gw
        v = 0.999 * v + 0.001 * gw ** 2
        x = x - lr / t * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    got = opt.get_params(s)
    assert got["w"].dtype == np.float32 and got["b"][0].dtype == np.float32
    np.testing.assert_allclose(np.asarray(got["w"]), x, rtol=1e-5)   # float32 arithmetic


def test_training_reduces_loss():
    init, apply = models.MLP((4, 16, 1))
    _, params = init(random.key(0), (32, 4))
    x = RNG.standard_normal((32, 4)).astype(np.float32)
    y = (x @ np.float32([1, -2, 0.5, 3]))[:, None]
    loss = lambda p: pnp.mean((apply(p, x) - y) ** 2)
    opt = optimizers.adam(0.05)
    step = plait.jit(lambda i, s: opt.update_fun(i, plait.grad(loss)(opt.get_params(s)), s),
                     backend="interp")
    s = opt.init_fun(params)
    first = float(loss(params))
    for i in range(100):
        s = step(i, s)
    assert float(loss(opt.get_params(s))) < 0.05 * first
