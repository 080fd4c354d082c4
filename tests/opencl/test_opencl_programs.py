"""Whole programs on the opencl backend against the reference backend: control flow
(CG while loop, RNN scan and its grad, switch/cond), jit(grad) of an MLP and a small
CNN, the W1/W2/W4 workloads at small sizes, host steps between kernels, and the
transfers the executable makes."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait import lax, nn  # noqa: E402
from plait.codegen.opencl_c import prelude  # noqa: E402


def _both(f, *args, rtol=1e-5):
    got = plait.jit(f, backend="opencl")(*args)
    want = plait.jit(f, backend="interp")(*args)
    for g, w in zip(plait.tree_util.tree_leaves(got), plait.tree_util.tree_leaves(want)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=rtol)
    return got


def test_cg_while():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(6, 6))
    a = m @ m.T + 6 * np.eye(6)
    b = rng.normal(size=6)

    def cg(a, b):
        def cond(s):
            return (s[4] < 50) & (pnp.dot(s[2], s[2]) > 1e-20)

        def body(s):
            x, _, r, p, k = s
            ap = a @ p
            alpha = pnp.dot(r, r) / pnp.dot(p, ap)
            x2, r2 = x + alpha * p, r - alpha * ap
            beta = pnp.dot(r2, r2) / pnp.dot(r, r)
            return x2, r, r2, r2 + beta * p, k + 1
        x0 = pnp.zeros_like(b)
        return lax.while_loop(cond, body, (x0, b, b, b, 0))[0]
    x = _both(cg, a, b, rtol=1e-8)
    np.testing.assert_allclose(a @ np.asarray(x), b, atol=1e-8)


def test_rnn_scan_and_its_grad_and_switch():
    rng = np.random.default_rng(1)
    w = rng.normal(size=(4, 4)).astype(np.float32) * 0.5
    xs = rng.normal(size=(7, 4)).astype(np.float32)

    def loss(w, xs):
        def step(h, x):
            h = pnp.tanh(w @ h + x)
            return h, h.sum()
        h, ys = lax.scan(step, pnp.zeros(4, np.float32), xs)
        return (h ** 2).sum() + ys.sum()
    _both(loss, w, xs)
    _both(plait.grad(loss), w, xs, rtol=1e-4)

    def f(i, x):
        return lax.switch(i, [lambda x: x + 1, lambda x: x * 2, lambda x: -x], x)
    for i in (-1, 1, 5):
        _both(f, np.int32(i), np.arange(3.0))
    _both(lambda p, x: lax.cond(p, lambda x: x.sum(), lambda x: x.prod(), x),
          np.bool_(False), np.arange(1.0, 4.0))


def test_jit_grad_mlp_and_cnn():
    rng = np.random.default_rng(2)
    w1, w2 = rng.normal(size=(5, 8)), rng.normal(size=(8, 3))
    x, y = rng.normal(size=(10, 5)), rng.normal(size=(10, 3))

    def mlp(params, x, y):
        w1, w2 = params
        h = pnp.maximum(x @ w1, 0.0)
        return ((pnp.tanh(h @ w2) - y) ** 2).mean()
    _both(plait.grad(mlp), (w1, w2), x, y, rtol=1e-9)

    k = rng.normal(size=(4, 2, 3, 3)).astype(np.float32)
    img = rng.normal(size=(2, 2, 8, 8)).astype(np.float32)

    def cnn(k, img):
        c = lax.conv_general_dilated(img, k, (1, 1), ((1, 1), (1, 1)))
        c = pnp.maximum(c, 0)
        p = lax.reduce_window_max(c, (1, 1, 2, 2), (1, 1, 2, 2), ((0, 0),) * 4)
        return (p ** 2).sum()
    _both(plait.value_and_grad(cnn), k, img, rtol=1e-4)


def test_w1_w2_workloads():
    """W1 (MLP gradient, tanh layers) and W2 (SeLU dense layer) at reduced sizes."""
    rng = np.random.default_rng(0)
    sizes = (48, 32, 32, 10)
    params = [((rng.standard_normal((m, n)) * 0.1).astype(np.float32),
               (rng.standard_normal((n,)) * 0.1).astype(np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((16, sizes[0])).astype(np.float32)
    t = rng.standard_normal((16, sizes[-1])).astype(np.float32)

    def loss(params, inputs, targets):
        outputs = inputs
        for W, b in params:
            outputs = pnp.dot(inputs, W) + b
            inputs = pnp.tanh(outputs)
        return pnp.sum((outputs - targets) ** 2)
    _both(plait.grad(loss), params, x, t, rtol=1e-4)

    def selu(x, W, b):
        y = pnp.dot(x, W) + b
        return 1.0507009873554805 * pnp.where(y > 0, y, 1.6732632423543772 * (pnp.exp(y) - 1))
    xs, W, b = (rng.standard_normal(s).astype(np.float32) for s in ((64, 96), (96, 80), (80,)))
    _both(selu, xs, W, b, rtol=1e-4)


def test_w4_allcnn_step():
    """W4 (All-CNN-C SGD step) on one 16x16 image: convolutions, relu, global average
    pooling, softmax cross-entropy, their gradients and the update."""
    from plait.example_libraries import models
    init_fun, apply_fun = models.AllCNNC()
    _, params = init_fun(plait.random.key(0), (1, 16, 16, 3))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 16, 16, 3)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[[3]]

    def update(p, x, y):
        def loss(p):
            return -pnp.mean(pnp.sum(nn.log_softmax(apply_fun(p, x)) * y, axis=-1))
        g = plait.grad(loss)(p)
        return plait.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)
    _both(update, params, x, y, rtol=1e-3)


def test_values_stay_on_the_device_between_kernels():
    """Kernels feed each other on the device; a host step (sort) copies only its input
    back, and its result goes up once for the next kernel."""
    def f(x):
        y = pnp.tanh(x @ x.T) + 1.0
        s = pnp.sort(y, axis=1)
        return pnp.sum(s * 2.0, axis=0)
    x = np.random.default_rng(3).standard_normal((12, 5)).astype(np.float32)
    _both(f, x, rtol=1e-5)
    exe = plait.jit(f, backend="opencl").lower(x).compile().executable
    text = exe.as_text("kernels").splitlines()
    assert [line.split(":")[0] for line in text] == ["k0", "host", "k2"]
    assert "copies 1 input device->host" in text[1]
    before = dict(exe.transfers)
    exe(x)
    # uploads: the argument, the sort's result; downloads: the sort's input, the output
    assert {k: exe.transfers[k] - before[k] for k in before} == {"to_device": 2, "to_host": 2}


def test_a_repeated_kernel_is_compiled_once():
    """Two equal kernels separated by a host step: the second calls the first's."""
    def g(a, b):
        return pnp.tanh(a * b) - a

    def f(x, y):
        return g(pnp.sort(g(x, y)), y)
    x, y = np.random.default_rng(4).standard_normal((2, 50)).astype(np.float32)
    _both(f, x, y)
    exe = plait.jit(f, backend="opencl").lower(x, y).compile().executable
    text = exe.as_text("kernels").splitlines()
    assert text[0].startswith("k0:") and text[2].endswith("[device: k0's kernels]"), text
    own = [la for la in exe.steps[0].kernels.launches if not la.fill]   # fills: the prelude's
    assert exe.as_text("opencl").count("__kernel") == prelude().count("__kernel") + len(own)


def test_a_while_loop_keeps_its_carries_on_the_device():
    """The loop runs on the host, its cond and body on the device: the carries stay
    there between iterations and the loop constant goes up once, so a call copies the
    arguments up, each predicate down (7 tests for 6 iterations) and the outputs
    down (before: every carry and the constant went up and down every iteration,
    31 uploads and 25 downloads)."""
    def f(a, x, v):
        def body(s):
            x, v, k = s
            return pnp.tanh(a @ x) + v, v * 0.5, k + 1
        return lax.while_loop(lambda s: s[2] < 6, body, (x, v, 0))
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
    x, v = rng.standard_normal((2, 16)).astype(np.float32)
    _both(f, a, x, v)
    exe = plait.jit(f, backend="opencl").lower(a, x, v).compile().executable
    (line,) = exe.as_text("kernels").splitlines()
    assert line.startswith("host: while (sub-graphs on the device"), line
    before = dict(exe.transfers)
    exe(a, x, v)
    assert {k: exe.transfers[k] - before[k] for k in before} == {"to_device": 4,
                                                                  "to_host": 7 + 3}


def test_control_flow_reads_values_computed_on_the_device():
    """A switch index, a scan's sequence and a cond operand made by kernels: the host
    step reads what it needs from the device buffers."""
    def f(x, w):
        i = (pnp.sum(x) > 0).astype(np.int32) + 1
        y = lax.switch(i, [lambda t: t - 1, lambda t: t * 2, lambda t: pnp.sin(t)], x * 3.0)
        ys = pnp.tanh(x[:, None] * w)

        def step(h, row):
            h = pnp.tanh(w @ h + row[: w.shape[1]])
            return h, h.sum()
        h, s = lax.scan(step, y[: w.shape[1]], ys)
        return h, s
    rng = np.random.default_rng(6)
    x = np.abs(rng.standard_normal(5)).astype(np.float32)
    w = (rng.standard_normal((5, 5)) * 0.4).astype(np.float32)
    _both(f, x, w)
    _both(f, -x, w)


def test_host_steps_say_where_their_results_go():
    """as_text('kernels'): a host step names the kernels its results are copied to, or
    says they stay on the host."""
    def f(x):
        s = pnp.sort(pnp.tanh(x))
        return s * 2.0, pnp.argsort(x)
    x = np.random.default_rng(7).standard_normal(9).astype(np.float32)
    _both(f, x)
    text = plait.jit(f, backend="opencl").lower(x).compile().executable.as_text("kernels")
    # tanh on the device, sort, the kernel doubling it (and making argsort's iota),
    # argsort's sort, whose results are outputs only
    lines = text.splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["k0", "host", "k2", "host"], text
    assert lines[1].endswith("(copies 1 input device->host; results copied host->device "
                             "for k2)"), text
    assert lines[3].endswith("1 argument copied down only if passed on the device; "
                             "results stay on the host)"), text


def test_work_groups_shrink_to_the_kernels_limit():
    """A driver may allow a kernel fewer work-items per group than the device (register
    pressure on a GPU); the executable launches within each kernel's reported limit,
    halving the group's longest side and keeping the number of groups."""
    from plait.codegen.opencl_c import Launch
    assert Launch("k", (90, 50), (16, 16)).shape(64) == ((48, 32), (8, 8))
    assert Launch("k", (90, 50), (16, 16)).shape(None) == ((96, 64), (16, 16))
    assert Launch("fill", (1000,), ()).shape(8) == ((1000,), None)

    def f(x, w, b):
        y = pnp.dot(x, w) + b
        return 1.05 * pnp.where(y > 0, y, 1.67 * (pnp.exp(y) - 1))
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((2, 40, 40)).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    exe = plait.jit(f, backend="opencl").lower(x, w, b).compile().executable
    assert any(g and np.prod(g) > 8 for _, g in exe.shapes.values())     # the tiled matmul
    exe.shapes = exe.launch_shapes(limit=8)
    assert all(np.prod(g) <= 8 for _, g in exe.shapes.values() if g)
    np.testing.assert_allclose(exe(x, w, b)[0], plait.jit(f, backend="interp")(x, w, b),
                               rtol=1e-5, atol=1e-5)


def test_control_flow_steps_share_device_values_and_host_copies():
    """Two switches on one kernel-made index and a host argument a kernel already
    uploaded: the argument goes up once (passed to the branches in place), the index
    comes down once (the second switch reuses the copy), the result comes down at the
    end (before: 2 uploads, 3 downloads)."""
    def f(x):
        i = (pnp.sum(x) > 0).astype(np.int32)
        y = lax.switch(i, [lambda t: t - 1.0, lambda t: pnp.tanh(t)], x)
        return lax.switch(i, [lambda t: t * 3.0, lambda t: pnp.sin(t) + t], y)
    x = np.linspace(-1, 2, 7).astype(np.float32)
    _both(f, x)
    exe = plait.jit(f, backend="opencl").lower(x).compile().executable
    before = dict(exe.transfers)
    exe(x)
    assert {k: exe.transfers[k] - before[k] for k in before} == {"to_device": 1, "to_host": 2}
