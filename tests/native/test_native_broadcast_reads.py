"""A broadcast along leading axes (a per-example norm dividing that example's gradient,
``broadcast_in_dim(d, g.shape, (0,))``) is read by the elementwise statement, not copied
to the gradient's size: the operand is copied once into the output's rank with ones at
the new axes, and a transpose of such a broadcast permutes that small tensor. Values
against NumPy and the interp backend."""
import re

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax


def _f(g, d):
    b = lax.broadcast_in_dim(d, g.shape, (0,))
    return (pnp.sum(g / b, axis=0),
            pnp.sum(g.transpose(1, 0, 2) / b.transpose(1, 0, 2), axis=1),
            lax.broadcast_in_dim(d, (3,) + g.shape[:1] + (2,), (1,)) * 2.0)


@pytest.mark.parametrize("n", [8, 1])
def test_leading_broadcast_is_read_not_copied(n):
    rng = np.random.default_rng(0)
    g = rng.standard_normal((n, 16, 4)).astype(np.float32)
    d = rng.uniform(1, 2, n).astype(np.float32)
    got = plait.jit(_f, backend="native")(g, d)
    want = (np.sum(g / d[:, None, None], 0), np.sum(g / d[:, None, None], 0),
            np.broadcast_to(d[None, :, None], (3, n, 2)) * 2.0)
    ref = plait.jit(_f, backend="interp")(g, d)
    for a, w, r in zip(got, want, ref):
        np.testing.assert_allclose(np.asarray(a), w, rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(r))
    if n > 1:
        tile = plait.jit(_f, backend="native").lower(g, d).compile().as_text("tile")
        locals_ = re.findall(r"local T\d+: f32\[([\d, ]+)\]", tile)
        # the two quotients and the transposed gradient; no broadcast copy of d
        assert sum(s in ("8, 16, 4", "16, 8, 4") for s in locals_) == 3, tile
