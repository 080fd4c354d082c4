"""A fused kernel that GCC 12.2 miscompiled with 512-bit auto-vectorization (found by the
fuzzer's gradient mode): jit(grad) on the native backend against the analytic gradient."""
import numpy as np

import plait
import plait.numpy as pnp


def _loss(x):
    return pnp.sum(pnp.diff(pnp.tile(x, (2,)), axis=0) ** 2)


def test_tile_diff_square_gradient_is_right_on_native():
    x = np.random.default_rng(0).uniform(0.3, 2, (4, 3, 3))
    got = np.asarray(plait.jit(plait.grad(_loss), backend="native")(x))
    d = np.diff(x, axis=0)              # d/dx sum((t[i+1]-t[i])^2) over both tiled copies
    want = np.zeros_like(x)
    want[1:] += 4 * d
    want[:-1] -= 4 * d
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
