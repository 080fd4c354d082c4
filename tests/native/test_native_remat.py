"""Cheap values (index masks, broadcast constants, a broadcast vector) read on both sides
of a library call are recomputed by the kernel after it, not written by the kernel
before it and read back (the GP gradient passed two i32 and four bool/constant
1000 x 1000 matrices across its GEMM and triangular solves)."""
import re

import numpy as np

import plait
import plait.numpy as pnp
from plait.lax import linalg as lla


def _f(a, v):
    lower = pnp.tril(a)
    x = lla.triangular_solve(lower + 4.0 * pnp.eye(a.shape[0]), a, left_side=True, lower=True)
    halves = pnp.where(pnp.tri(a.shape[0], dtype=bool), x, 0.5)
    return pnp.tril(halves) * v[None, :] + pnp.triu(x, 1) * v[:, None]


def _signatures(tile: str) -> list[str]:
    return [ln for ln in tile.splitlines() if ln.startswith("function")]


def test_masks_recomputed_after_a_library_call():
    n = 48
    rng = np.random.default_rng(0)
    a, v = rng.standard_normal((n, n)), rng.standard_normal(n)
    c = plait.jit(_f, backend="native").lower(a, v).compile()
    sigs = _signatures(c.as_text("tile"))
    assert len(sigs) >= 2, sigs                     # kernels before and after the solve
    for s in sigs:                                  # no n x n mask or constant crosses
        assert not re.search(rf"(bool|i32|i64)\[{n}, {n}\]", s), s
    ins = [s.split(") ->")[0] for s in sigs]
    assert sum(ln.count(f"f64[{n}, {n}]") for ln in ins) <= 3, sigs   # a, x, and the tril
    want = plait.jit(_f, backend="interp")(a, v)      # its own substitution, not LAPACK's
    np.testing.assert_allclose(np.asarray(c(a, v)), np.asarray(want), rtol=1e-10, atol=1e-12)
    l = np.tril(a) + 4.0 * np.eye(n)
    x = np.linalg.solve(l, a)
    ref = np.tril(np.where(np.tri(n, dtype=bool), x, 0.5)) * v[None, :] + np.triu(x, 1) * v[:, None]
    np.testing.assert_allclose(np.asarray(c(a, v)), ref, rtol=1e-10, atol=1e-12)
