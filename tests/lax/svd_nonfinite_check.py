"""Checks of ``svd`` on matrices holding inf/NaN, run as a child process by the interp,
native and xla tests (``python svd_nonfinite_check.py BACKEND...``): LAPACK's gesdd
never returns on some inf inputs (Reference-LAPACK/lapack#1409), so a regression hangs
this child, which the parent test kills on its timeout, not the test session.

For every dtype and every mode (full, reduced, values only, subset_by_index) on each
backend named: a batch entry whose matrix holds a non-finite value is NaN in every
output; the finite entries are bit for bit those of the same call on the finite
entries alone, and agree with NumPy's SVD; every backend named is bit for bit the
first one (all call the same LAPACK routine on the same finite matrices). NumPy-level
functions built on the SVD (``svd``, ``svdvals``, ``pinv``, ``matrix_rank``,
``norm(ord=2)``, ``cond``) are NaN (a rank of 0) on those entries, NumPy's elsewhere,
and agree across the backends to a few ulps (their products may round differently).
Prints ``ok`` at the end."""
import sys

import numpy as np

import plait
import plait.numpy as pnp
from plait.lax import linalg as L

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
PARAMS = [dict(), dict(full_matrices=False), dict(compute_uv=False),
          dict(subset_by_index=(1, 3)), dict(subset_by_index=(0, 2), compute_uv=False),
          dict(subset_by_index=(1, 2), full_matrices=False)]
BAD, GOOD = [1, 2, 3, 5], [0, 4]


def stack(dtype) -> np.ndarray:
    """Six 4x3 matrices: 0 and 4 finite; 1 holds a NaN, 2 is the zero matrix with inf at
    [0, 0] (gesdd computing vectors never returns on it), 3 holds -inf, 5 an inf (an
    infinite imaginary part for complex dtypes)."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 4, 3))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=a.shape)
    a = a.astype(dtype)
    a[1, 2, 1] = np.nan
    a[2] = 0
    a[2, 0, 0] = np.inf
    a[3, 3, 2] = -np.inf
    a[5, 1, 1] = complex(0.5, np.inf) if np.dtype(dtype).kind == "c" else np.inf
    return a


def all_modes(x) -> list:
    return [o for p in PARAMS for o in plait.tree_util.tree_leaves(L.svd(x, **p))]


def numpy_level(x) -> list:
    return [*pnp.linalg.svd(x), pnp.linalg.svd(x, compute_uv=False), pnp.linalg.svdvals(x),
            pnp.linalg.pinv(x), pnp.linalg.matrix_rank(x), pnp.linalg.norm(x, ord=2, axis=(-2, -1)),
            pnp.linalg.cond(x)]


def run(f, x, backend: str) -> list:
    return [np.asarray(o) for o in plait.jit(f, backend=backend)(x)]


def check_modes(a: np.ndarray, outs: list, finite_outs: list) -> None:
    tol = 1e-4 if np.finfo(a.dtype).bits <= 32 else 1e-12
    want = np.linalg.svd(a[GOOD], compute_uv=False)
    for o, f in zip(outs, finite_outs):
        assert np.isnan(o[BAD]).all(), "a non-finite entry's svd is not all NaN"
        np.testing.assert_array_equal(o[GOOD], f)       # unchanged bit for bit
        assert np.isfinite(o[GOOD]).all()
    i = 0
    for p in PARAMS:
        lo, hi = p.get("subset_by_index") or (0, 3)
        np.testing.assert_allclose(outs[i][GOOD], want[..., lo:hi], rtol=tol, atol=tol)
        if p.get("compute_uv", True):
            s, u, vt = outs[i][GOOD], outs[i + 1][GOOD], outs[i + 2][GOOD]
            if hi - lo == 3:
                k = s.shape[-1]
                recon = (u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :]
                np.testing.assert_allclose(recon, a[GOOD], rtol=10 * tol, atol=10 * tol)
            i += 3
        else:
            i += 1


def check_numpy_level(a: np.ndarray, outs: list) -> None:
    tol = 1e-4 if np.finfo(a.dtype).bits <= 32 else 1e-12
    g = a[GOOD]
    nu, ns, nvh = np.linalg.svd(g)
    wants = [None, ns, None, ns, ns, np.linalg.pinv(g), np.linalg.matrix_rank(g),
             np.linalg.norm(g, ord=2, axis=(-2, -1)), np.linalg.cond(g)]
    u, s, vh, *rest = outs
    for x in (u, s, vh):
        assert np.isnan(x[BAD]).all()
    np.testing.assert_allclose((u[GOOD][..., :3] * s[GOOD][..., None, :]) @ vh[GOOD], g,
                               rtol=10 * tol, atol=10 * tol)
    for x, w in zip(outs, wants):
        if w is None:
            continue
        if x.dtype.kind == "i":         # matrix_rank: no singular value above NaN's cutoff
            assert (x[BAD] == 0).all()
            np.testing.assert_array_equal(x[GOOD], w)
        else:
            assert np.isnan(x[BAD]).all()
            np.testing.assert_allclose(x[GOOD], w, rtol=10 * tol, atol=10 * tol)


def main(backends: list[str]) -> None:
    for dtype in DTYPES:
        a = stack(dtype)
        first = None
        for b in backends:
            outs = run(all_modes, a, b)
            check_modes(a, outs, run(all_modes, a[GOOD], b))
            levels = run(numpy_level, a, b)
            check_numpy_level(a, levels)
            if first is None:
                first = outs, levels
                continue
            for x, y in zip(outs, first[0]):
                np.testing.assert_array_equal(x, y, err_msg=f"svd: {b} != {backends[0]}")
            for x, y in zip(levels, first[1]):     # products of the SVD: a few ulps
                tol = 1e-4 if np.finfo(a.dtype).bits <= 32 else 1e-12
                np.testing.assert_allclose(x, y, rtol=tol, atol=tol, equal_nan=True,
                                           err_msg=f"{b} != {backends[0]}")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1:])
