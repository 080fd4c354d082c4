"""Boolean buffers of native kernels are bytes (0 or 1, NumPy's layout) declared
``uint8_t`` and computed as ``_Bool``: GCC does not vectorize a loop loading through a
``_Bool`` pointer, so a select on a saved mask (ReLU's backward) ran scalar. Values are
checked against NumPy and the interpreter, masks as inputs, outputs and intermediates."""
import numpy as np

import plait
import plait.numpy as pnp


def _masks(x, m):
    gt = x > 0.25                                    # a mask output
    kept = pnp.where(m, x, 0.0)                      # a select on a mask input
    relu_grad = pnp.where(x > 0, 1.0, 0.0) * x       # a mask made and read in one kernel
    return gt, kept, relu_grad, pnp.any(m, axis=0), pnp.all(gt, axis=1)


def test_masks_in_and_out_of_kernels_match_numpy_and_interp():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((37, 29)).astype(np.float32)
    m = rng.random((37, 29)) < 0.5
    f = plait.jit(_masks, backend="native")
    got = f(x, m)
    ref = plait.jit(_masks, backend="interp")(x, m)
    want = (x > 0.25, np.where(m, x, 0), np.where(x > 0, 1.0, 0.0).astype(np.float32) * x,
            m.any(axis=0), (x > 0.25).all(axis=1))
    for g, r, w in zip(got, ref, want):
        assert np.asarray(g).dtype == w.dtype
        np.testing.assert_array_equal(np.asarray(g), w)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
    src = f.lower(x, m).compile().executable.as_text("c")
    assert "uint8_t *restrict b_" in src and "_Bool *" not in src


def test_relu_gradient_through_a_mask():
    def loss(w, x):
        return pnp.sum(pnp.maximum(x @ w, 0.0) ** 2)
    rng = np.random.default_rng(1)
    w = rng.standard_normal((33, 65)).astype(np.float32)
    x = rng.standard_normal((40, 33)).astype(np.float32)
    g = plait.jit(plait.grad(loss), backend="native")
    h = x @ w
    want = x.T @ (2 * np.maximum(h, 0) * (h > 0))
    np.testing.assert_allclose(np.asarray(g(w, x)), want, rtol=1e-4, atol=1e-4)
