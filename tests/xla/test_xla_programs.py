"""Whole programs on the xla backend against the reference backend: control flow
(CG while loop, RNN scan, switch), jit(grad) of an MLP and a small CNN, vmap, and
the config switch."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait import lax  # noqa: E402


def _both(f, *args, rtol=1e-5):
    got = plait.jit(f, backend="xla")(*args)
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


def test_rnn_scan_and_its_grad():
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
    _both(lambda w, xs: lax.scan(lambda c, x: (c * x, c), 1.0, xs[:, 0], reverse=True),
          w, xs)


def test_switch_and_cond():
    def f(i, x):
        return lax.switch(i, [lambda x: x + 1, lambda x: x * 2, lambda x: -x], x)
    for i in (-1, 0, 1, 2, 5):
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


def test_vmap_and_config_backend():
    x = np.arange(12.0).reshape(3, 4)
    _both(plait.vmap(lambda r: pnp.sort(r)[::-1] * pnp.argmax(r)), x)
    old = plait.config.backend
    try:
        plait.config.update("backend", "xla")
        exe = plait.jit(lambda a: a * 3).lower(x).compile().executable
        assert type(exe).__name__ == "XlaExecutable"
    finally:
        plait.config.update("backend", old)


def test_results_fed_back_stay_on_the_device():
    """A result passed to the next call is its device buffer again (no copy, no
    DLPack import); a slice or a transpose of it is a new buffer with the right values."""
    from plait.backends.xla import pjrt
    step = plait.jit(lambda x: x * 2 + 1, backend="xla")
    x0 = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = step(x0)
    v = np.asarray(y)
    buf = pjrt._device_buffer(v)
    assert buf is not None
    assert pjrt.compile_text(
        "func.func public @main(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {\n"
        "  return %a : tensor<3x4xf32>\n}").put(v) is buf
    assert pjrt._device_buffer(v[1:]) is None and pjrt._device_buffer(v.T) is None
    z = x0
    for _ in range(3):
        z = step(z)
    np.testing.assert_array_equal(np.asarray(z), ((x0 * 2 + 1) * 2 + 1) * 2 + 1)
    np.testing.assert_array_equal(np.asarray(step(v[1:])), v[1:] * 2 + 1)
    np.testing.assert_array_equal(np.asarray(step(np.ascontiguousarray(v.T).T)), v * 2 + 1)
    # a buffer of another PJRT client (as jax's arrays are) is imported, not reused
    other = pjrt._jaxlib()[0].make_cpu_client()
    theirs = pjrt._jaxlib()[1].dlpack_managed_tensor_to_buffer(
        x0.copy().__dlpack__(), other.devices()[0], None, None)
    j = np.asarray(theirs)
    assert pjrt._device_buffer(j) is theirs and not pjrt._is_ours(theirs)
    np.testing.assert_array_equal(np.asarray(step(j)), x0 * 2 + 1)


def test_fortran_ordered_arguments():
    """Non-C-ordered arguments cross as C-ordered copies (PJRT read an F-ordered DLPack
    export's data in C order: wrong values on the first call)."""
    x0 = np.arange(12, dtype=np.float32).reshape(3, 4)
    for x in (np.ascontiguousarray(x0.T).T, np.asfortranarray(x0), x0[:, ::2]):
        f = plait.jit(lambda x: x * 2 + 1, backend="xla")
        np.testing.assert_array_equal(np.asarray(f(x)), x * 2 + 1)
        np.testing.assert_array_equal(np.asarray(f(x)), x * 2 + 1)


def test_eigh_runs_lapack_through_the_custom_call_and_exports(tmp_path):
    """eigh lowers to jaxlib's LAPACK syevd/heevd custom call: the GP-style use (a
    batch of symmetric matrices, its eigendecomposition reassembled, its gradient)
    matches the reference; the exported module runs in a fresh process."""
    import subprocess
    import sys
    from plait.lax import linalg as la
    rng = np.random.default_rng(4)
    m = rng.normal(size=(3, 6, 6))
    a = m @ np.swapaxes(m, -1, -2) + 6 * np.eye(6)
    text = plait.jit(la.eigh, backend="xla").lower(a).as_text(stage="stablehlo")
    assert "lapack_dsyevd_ffi" in text
    v, w = _both(lambda x: la.eigh(x), a, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a), rtol=1e-12)
    recon = np.asarray(v) @ (np.asarray(w)[..., None] * np.swapaxes(np.asarray(v), -1, -2))
    np.testing.assert_allclose(recon, a, rtol=1e-12, atol=1e-11)
    _both(plait.grad(lambda x: pnp.sum(la.eigh(x)[1] ** 2)), a, rtol=1e-8)
    exp = plait.export(plait.jit(lambda x: la.eigh(x, lower=False)[1], backend="xla"))(a[0])
    path = tmp_path / "eigh.bin"
    path.write_bytes(exp.serialize())
    code = ("import numpy as np, plait; import sys; "
            f"e = plait.export.deserialize(open({str(path)!r}, 'rb').read()); "
            "a = np.load(sys.argv[1]); print(repr(np.asarray(e.call(a)[0]).tolist()))")
    np.save(tmp_path / "a.npy", a[0])
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.npy")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    np.testing.assert_allclose(eval(out.stdout.strip().splitlines()[-1]),
                               np.linalg.eigvalsh(a[0], UPLO="U"), rtol=1e-12)
