"""qr and svd on the xla backend: jaxlib's LAPACK custom calls (geqrf + orgqr/ungqr,
gesdd) against the interp backend (NumPy/SciPy's LAPACK) and NumPy's own functions, for
every dtype, batches, tall/wide/square and empty matrices, every parameter, failed
and non-finite entries, gradients and an export run in a fresh process."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jaxlib")

from lapack_helpers import call_in_fresh_process, random_matrices  # noqa: E402
import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait.lax import linalg as la  # noqa: E402

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SHAPES = [(5, 3), (3, 5), (4, 4), (2, 6, 4), (3, 4, 6), (2, 1, 3, 3)]
EMPTY = [(0, 3), (3, 0), (0, 0), (2, 0, 0), (0, 3, 3), (2, 3, 0)]
LETTER = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}


def _tol(dtype) -> float:
    """Both backends run the same LAPACK routines: a few ulps apart at most."""
    return 1e-5 if np.finfo(dtype).bits <= 32 else 1e-12


def _both(f, x, tol):
    """``f(x)`` on xla, checked against interp (dtypes, shapes, values, NaN places)."""
    got = [np.asarray(v) for v in plait.tree_util.tree_leaves(plait.jit(f, backend="xla")(x))]
    want = [np.asarray(v) for v in plait.tree_util.tree_leaves(plait.jit(f, backend="interp")(x))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)
    return got


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _stablehlo(f, x) -> str:
    return plait.jit(f, backend="xla").lower(x).as_text(stage="stablehlo")


# --- qr ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_lowers_to_geqrf_then_orgqr(dtype):
    text = _stablehlo(lambda a: la.qr(a), random_matrices((5, 3), dtype))
    c = LETTER[dtype]
    assert f"lapack_{c}geqrf_ffi" in text
    assert f"lapack_{c}{'ungqr' if c in 'cz' else 'orgqr'}_ffi" in text


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_matches_interp_and_numpy(dtype, shape, full_matrices):
    a = random_matrices(shape, dtype)
    tol = _tol(dtype)
    q, r = _both(lambda x: la.qr(x, full_matrices=full_matrices), a, tol)
    nq, nr = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    np.testing.assert_allclose(q, nq, rtol=tol, atol=tol)
    np.testing.assert_allclose(r, nr, rtol=tol, atol=tol)
    np.testing.assert_array_equal(r, np.triu(r))
    np.testing.assert_allclose(q @ r, a, rtol=10 * tol, atol=10 * tol)
    eye = np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2)
    np.testing.assert_allclose(_H(q) @ q, eye, atol=10 * tol)


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("shape", EMPTY)
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_qr_of_empty_matrices(dtype, shape, full_matrices):
    q, r = _both(lambda x: la.qr(x, full_matrices=full_matrices), random_matrices(shape, dtype), 0)
    assert not r.any()
    if q.size:
        np.testing.assert_array_equal(q, np.broadcast_to(np.eye(q.shape[-2], q.shape[-1]),
                                                         q.shape))


def test_qr_of_nan_and_rank_deficient_inputs():
    """geqrf has no failure: NaNs spread as in the reference; a rank-deficient matrix
    still factors (a zero diagonal in r)."""
    a = random_matrices((3, 5, 4), np.float64)
    a[1, 2, 3] = np.nan
    a[2, :, 1] = 2 * a[2, :, 0]
    q, r = _both(lambda x: la.qr(x), a, 1e-12)
    assert np.isnan(q[1]).any() and not np.isnan(q[[0, 2]]).any()
    np.testing.assert_allclose(q[2] @ r[2], a[2], atol=1e-12)
    assert abs(r[2, 1, 1]) < 1e-12


@pytest.mark.parametrize("shape,full_matrices", [((5, 3), False), ((4, 4), True),
                                                 ((2, 4, 4), False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_qr_gradient_matches_interp(dtype, shape, full_matrices):
    a = random_matrices(shape, dtype, seed=1)
    w = random_matrices(shape, dtype, seed=2)

    def loss(x):
        q, r = la.qr(x, full_matrices=full_matrices)
        return pnp.sum(q[..., :1] * r[..., :1, :].sum()) + pnp.sum(r * w[..., :r.shape[-2], :])
    tol = 1e-4 if dtype == np.float32 else 1e-10
    _both(plait.grad(loss), a, tol)


# --- svd --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_lowers_to_gesdd_with_its_mode(dtype):
    a = random_matrices((5, 3), dtype)
    target = f"lapack_{LETTER[dtype]}gesdd_ffi"
    for f, mode in [(lambda x: la.svd(x), "A"), (lambda x: la.svd(x, full_matrices=False), "S"),
                    (lambda x: la.svd(x, compute_uv=False), "N"),
                    (lambda x: la.svd(x, subset_by_index=(1, 3)), "S"),
                    (lambda x: la.svd(x)[0], "N")]:      # only s read: no vectors (dce)
        text = _stablehlo(f, a)
        assert target in text and f"mode = {ord(mode)} : ui8" in text


def _svd_all_params(k: int):
    out = [dict(full_matrices=fm, compute_uv=cuv) for fm in (True, False) for cuv in (True, False)]
    if k >= 2:
        out += [dict(subset_by_index=(1, k)), dict(subset_by_index=(0, 1), compute_uv=False),
                dict(subset_by_index=(1, 2), full_matrices=False)]
    return out


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_matches_interp_and_numpy(dtype, shape):
    a = random_matrices(shape, dtype)
    tol = _tol(dtype)
    ns = np.linalg.svd(a, compute_uv=False)
    for params in _svd_all_params(min(shape[-2:])):
        outs = _both(lambda x: la.svd(x, **params), a, tol)
        lo, hi = params.get("subset_by_index") or (0, ns.shape[-1])
        np.testing.assert_allclose(outs[0], ns[..., lo:hi], rtol=tol, atol=tol)
        if not params.get("compute_uv", True):
            assert len(outs) == 1
            continue
        s, u, vt = outs
        if params.get("full_matrices", True) and "subset_by_index" not in params:
            nu, _, nvt = np.linalg.svd(a, full_matrices=True)
            assert u.shape == nu.shape and vt.shape == nvt.shape
            for x in (u, vt):
                eye = np.broadcast_to(np.eye(x.shape[-1]), x.shape)
                np.testing.assert_allclose(_H(x) @ x, eye, atol=10 * tol)
        k = s.shape[-1]
        recon = (u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :]
        if k == min(shape[-2:]):
            np.testing.assert_allclose(recon, a, rtol=10 * tol, atol=10 * tol)
        else:   # the partial SVD is the projection of a onto its singular vectors
            np.testing.assert_allclose(recon, u @ (_H(u) @ a @ _H(vt)) @ vt, atol=10 * tol)


@pytest.mark.parametrize("shape", EMPTY)
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_svd_of_empty_matrices(dtype, shape):
    for params in _svd_all_params(0):
        outs = _both(lambda x: la.svd(x, **params), random_matrices(shape, dtype), 0)
        assert outs[0].size == 0
        for x in outs[1:]:
            np.testing.assert_array_equal(x, np.broadcast_to(np.eye(*x.shape[-2:]), x.shape))


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_of_nonfinite_entries_is_nan_as_in_interp(dtype):
    """A matrix holding NaN or inf never reaches gesdd (it may never return on an inf,
    Reference-LAPACK/lapack#1409): that batch entry is NaN on both backends, complex
    included; the others are untouched, bit for bit interp's and close to NumPy's."""
    a = random_matrices((4, 4, 3), dtype)
    a[1, 2, 1] = np.nan
    a[2, 1, 1] = np.inf
    a[3, 0, 2] = complex(1, -np.inf) if np.dtype(dtype).kind == "c" else -np.inf
    good = [0]
    ns = np.linalg.svd(a[good], compute_uv=False)
    for params in _svd_all_params(3):
        outs = _both(lambda x: la.svd(x, **params), a, 0)
        assert all(np.isnan(x[1:]).all() and not np.isnan(x[good]).any() for x in outs)
        lo, hi = params.get("subset_by_index") or (0, 3)
        np.testing.assert_allclose(outs[0][good], ns[..., lo:hi], rtol=_tol(dtype))


def test_svd_that_gesdd_never_returns_on_is_nan():
    """The zero 4x3 matrix with inf at [0, 0] (on which gesdd computing vectors never
    returns) and the other non-finite matrices of ``svd_nonfinite_check.py``, every
    dtype and mode: xla bit for bit interp, in a child process with a timeout."""
    check = Path(__file__).parents[1] / "lax" / "svd_nonfinite_check.py"
    out = subprocess.run([sys.executable, str(check), "interp", "xla"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "ok"


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_svd_gradient_matches_interp(dtype, shape):
    a = random_matrices(shape, dtype, seed=3)

    def loss(x):
        s, u, vt = la.svd(x, full_matrices=False)
        # squares: independent of the singular vectors' signs
        return pnp.sum(s ** 2) + pnp.sum(u[..., :, :1] ** 2 * s[..., :1, None]) + pnp.sum(vt ** 2)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    _both(plait.grad(loss), a, tol)
    _both(plait.grad(lambda x: pnp.sum(la.svd(x, compute_uv=False))), a, tol)


# --- export -------------------------------------------------------------------------------
def test_qr_and_svd_export_and_run_in_a_fresh_process(tmp_path):
    a = random_matrices((5, 3), np.float64)

    def f(x):
        q, r = la.qr(x, full_matrices=False)
        s, u, vt = la.svd(x, full_matrices=False)
        return q @ r, s, (u * s[None, :]) @ vt
    qr_, s, usv = call_in_fresh_process(plait.export(plait.jit(f, backend="xla"))(a), [a],
                                        tmp_path)
    np.testing.assert_allclose(qr_, a, atol=1e-12)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(usv, a, atol=1e-12)
