"""plait.scipy.linalg against scipy.linalg: values eagerly and under jit (one jit for
many functions), and derivatives of solve_triangular, cho_solve and expm against
finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import plait
import plait.scipy.linalg as pl
from plait.test_util import check_grads

sl = pytest.importorskip("scipy.linalg")

_r = np.random.default_rng(0)
A = _r.standard_normal((4, 4))
B = _r.standard_normal((4, 2))
b = _r.standard_normal(4)
S = A @ A.T + 4 * np.eye(4)
RECT = [A, _r.standard_normal((5, 3)), _r.standard_normal((3, 5))]


def _close(got, want, atol=1e-10):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-9, atol=atol)


def _cases(mod):
    """(name, result) pairs computed with ``mod`` (plait.scipy.linalg or scipy.linalg)."""
    out = []
    for t in (0, 1, 2, "T"):
        for lo in (True, False):
            out.append((f"solve_triangular-{t}-{lo}", mod.solve_triangular(A, B, trans=t, lower=lo)))
    out.append(("solve_triangular-1d-unit", mod.solve_triangular(A, b, unit_diagonal=True)))
    for lo in (True, False):
        out.append((f"cho_solve-{lo}", mod.cho_solve(mod.cho_factor(S, lower=lo), B)))
    lf = mod.lu_factor(A)
    out.append(("lu_factor", lf))
    for t in (0, 1, 2):
        out.append((f"lu_solve-{t}", mod.lu_solve(lf, B, trans=t)))
    for i, m in enumerate(RECT):
        out.append((f"lu-{i}", mod.lu(m)))
        out.append((f"lu-permute_l-{i}", mod.lu(m, permute_l=True)))
        out.append((f"svdvals-{i}", mod.svd(m, compute_uv=False)))
    out.append(("inv", mod.inv(A)))
    out.append(("det", mod.det(A)))
    for assume in ("gen", "sym", "her", "pos"):
        for lo in (True, False):
            m = S if assume == "pos" else A
            out.append((f"solve-{assume}-{lo}", mod.solve(m, B, lower=lo, assume_a=assume)))
    out.append(("solve-1d", mod.solve(A, b)))
    for i, m in enumerate((A, 10 * A, 0.01 * A, 100 * A, A * (1 + 1j))):
        out.append((f"expm-{i}", mod.expm(m)))
    return out


def test_values_match_scipy_eagerly():
    for (name, got), (_, want) in zip(_cases(pl), _cases(sl)):
        _close(got, want, atol=1e-9 * max(1.0, float(np.max(np.abs(want[0] if isinstance(
            want, tuple) else want)))))


def test_values_match_scipy_under_jit():
    names = [n for n, _ in _cases(sl)]
    got = plait.jit(lambda: [r for _, r in _cases(pl)])()
    for name, g, (_, w) in zip(names, got, _cases(sl)):
        scale = max(1.0, float(np.max(np.abs(w[0] if isinstance(w, tuple) else w))))
        _close(tuple(g) if isinstance(g, (list, tuple)) else g, w, atol=1e-9 * scale)


def test_factorizations_reconstruct_and_match_scipy_up_to_signs():
    for m in RECT:
        q, r = pl.qr(m)
        _close(np.asarray(q) @ np.asarray(r), m)
        assert tuple(x.shape for x in pl.qr(m, mode="economic")) == \
            tuple(x.shape for x in sl.qr(m, mode="economic"))
        _close(np.abs(np.asarray(pl.qr(m, mode="r")[0])), np.abs(sl.qr(m, mode="r")[0]))
        u, s, vh = pl.svd(m, full_matrices=False)
        _close((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), m)
        assert tuple(x.shape for x in pl.svd(m)) == tuple(x.shape for x in sl.svd(m))
    for lo in (True, False):
        w, v = pl.eigh(A, lower=lo)
        W, V = sl.eigh(A, lower=lo)
        _close((w, np.abs(np.asarray(v))), (W, np.abs(V)))
        _close(pl.eigh(A, lower=lo, eigvals_only=True), W)


def test_block_diag_matches_scipy():
    args = (A[:2, :3], 5, [1, 2], np.ones((2, 1), np.int32))
    got, want = pl.block_diag(*args), sl.block_diag(*args)
    assert np.asarray(got).dtype == want.dtype
    _close(got, want)
    _close(pl.block_diag(np.ones((2, 2), np.int32)), sl.block_diag(np.ones((2, 2), np.int32)))


def test_gradients():
    tri = np.triu(A) + 4 * np.eye(4)
    check_grads(lambda a, y: pl.solve_triangular(a, y, trans=1), (tri, B), order=1)
    check_grads(lambda a, y: pl.solve_triangular(a, y, lower=True), (tri.T, b), order=1)
    check_grads(lambda s, y: pl.cho_solve(pl.cho_factor(s @ s.T + 4 * np.eye(4)), y),
                (A, B), order=1)
    check_grads(pl.expm, (0.5 * A,), order=1)
    check_grads(pl.expm, (8 * A,), order=1)   # several squarings
