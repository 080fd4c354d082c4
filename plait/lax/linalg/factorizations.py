"""Factorizations of ``plait.lax.linalg``: ``cholesky``, ``lu`` (with
``lu_pivots_to_permutation`` and ``lu_solve``) and ``qr``."""
from __future__ import annotations

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import get_aval
from plait.errors import PlaitValueError
from plait.lax._base import standard_primitive, as_operand
from plait.lax._ad_helpers import Zero, tangent_aval
from plait.lax._batch_helpers import move_batch_dim
from plait.lax import elementwise as ew
from plait.lax.shape_ops import broadcast_in_dim, broadcasted_iota
from plait.lax.linalg._common import (_H, _band_mask, _batch_unary, _check_matrix, _convert,
                                      _dtype, _each, _eye_like, _has_scipy, _hermitian_part,
                                      _lapack_fn, _mm, _scale, _shape, _tril, _triu,
                                      _zero_tangents, _zeros_like)
from plait.lax.linalg.solves import triangular_solve


# --- cholesky ---------------------------------------------------------------------------
def _cholesky_abstract(a: ShapedArray) -> ShapedArray:
    _check_matrix("cholesky", a)
    return ShapedArray(a.shape, a.dtype, False)


def _cholesky_impl(a):
    a = np.asarray(a)
    if a.size == 0:
        return np.zeros(a.shape, a.dtype)
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        out = np.empty_like(a)
        for i in _each(a.shape[:-2]):
            try:
                out[i] = np.linalg.cholesky(a[i])
            except np.linalg.LinAlgError:
                out[i] = np.nan
        return out


cholesky_p = standard_primitive("cholesky", _cholesky_abstract, _cholesky_impl)


def _cholesky_jvp(primals, tangents, **params):
    (a,), (t,) = primals, tangents
    L = cholesky_p.bind(a, **params)
    if isinstance(t, Zero):
        return L, Zero(tangent_aval(get_aval(L)))
    s = _hermitian_part(t, True)
    # L^{-1} S L^{-H}, then keep the lower triangle with half the diagonal
    x = triangular_solve(L, s, left_side=True, lower=True)
    x = triangular_solve(L, x, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    phi = ew.add(_tril(x, -1), _scale(ew.select(_band_mask(_shape(x), "=="), x,
                                                   _zeros_like(x)), 0.5))
    return L, _mm(L, phi)


cholesky_p.def_rule("jvp", _cholesky_jvp)


def _cholesky_batch(vals, dims, **params):
    x = move_batch_dim(vals[0], dims[0], 0, _shape(vals[0])[dims[0]])
    return cholesky_p.bind(x, **params), 0


cholesky_p.def_rule("batch", _cholesky_batch)


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor ``L`` (``L Lᴴ = x``) of Hermitian positive-definite
    matrices. ``symmetrize_input`` (JAX's default) first replaces ``x`` by
    ``(x + xᴴ)/2``; without it only the lower triangle is read. NaNs where ``x`` is
    not positive definite."""
    x = as_operand(x)
    if symmetrize_input:
        _check_matrix("cholesky", get_aval(x))
        x = _scale(ew.add(x, _H(x)), 0.5)
    return cholesky_p.bind(x)


# --- lu ---------------------------------------------------------------------------------
def _lu_abstract(a: ShapedArray) -> list:
    _check_matrix("lu", a, square=False)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    return [ShapedArray(a.shape, a.dtype, False),
            ShapedArray(batch + (min(m, n),), dtypes.int32, False),
            ShapedArray(batch + (m,), dtypes.int32, False)]


def _lu_numpy(a):
    """Partial-pivoting LU of a stack ``(B, m, n)`` (vectorized over the stack)."""
    a = a.copy()
    nb, m, n = a.shape
    piv = np.zeros((nb, min(m, n)), np.int32)
    rows = np.arange(nb)
    for k in range(min(m, n)):
        p = np.argmax(np.abs(a[:, k:, k]), axis=1) + k
        piv[:, k] = p
        rk = a[rows, k].copy()
        a[rows, k] = a[rows, p]
        a[rows, p] = rk
        pivot = a[:, k, k]
        safe = np.where(pivot == 0, 1, pivot)
        a[:, k + 1:, k] /= safe[:, None]
        a[:, k + 1:, k + 1:] -= a[:, k + 1:, k:k + 1] * a[:, k:k + 1, k + 1:]
    return a, piv


def lu_pivots_to_permutation_np(piv, m: int):
    """The row permutation that LAPACK's sequential row swaps ``piv`` apply."""
    batch = piv.shape[:-1]
    perm = np.broadcast_to(np.arange(m, dtype=np.int32), batch + (m,)).copy()
    if perm.size == 0 or piv.size == 0:
        return perm
    flat_p, flat_perm = piv.reshape(-1, piv.shape[-1]), perm.reshape(-1, m)
    rows = np.arange(flat_perm.shape[0])
    for i in range(piv.shape[-1]):
        j = flat_p[:, i]
        t = flat_perm[rows, i].copy()
        flat_perm[rows, i] = flat_perm[rows, j]
        flat_perm[rows, j] = t
    return flat_perm.reshape(batch + (m,))


def _lu_impl(a):
    a = np.asarray(a)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if a.size == 0:
        return [np.zeros(a.shape, a.dtype), np.zeros(batch + (k,), np.int32),
                np.broadcast_to(np.arange(m, dtype=np.int32), batch + (m,)).copy()]
    if _has_scipy():
        getrf = _lapack_fn("getrf", a.dtype)
        lu = np.empty_like(a)
        piv = np.empty(batch + (k,), np.int32)
        for i in _each(batch):
            lu[i], p, _info = getrf(a[i])
            piv[i] = p[:k]
    else:
        flat, p = _lu_numpy(a.reshape((-1, m, n)))
        lu, piv = flat.reshape(a.shape), p.reshape(batch + (k,))
    return [lu, piv, lu_pivots_to_permutation_np(piv, m)]


lu_p = standard_primitive("lu", _lu_abstract, _lu_impl, multiple_results=True)


def _perm_matrix(perm, dtype):
    """``P`` with ``(P x)[i] = x[perm[i]]``: ``P[i, j] = (perm[i] == j)``."""
    s = _shape(perm)
    m = s[-1]
    shape = s + (m,)
    p = broadcast_in_dim(perm, shape, tuple(range(len(s))))
    j = broadcasted_iota(dtypes.int32, shape, len(s))
    return _convert(ew.eq(p, j), dtype)


def _lu_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    outs = lu_p.bind(a)
    lu_, piv, perm = outs
    m, n = _shape(a)[-2:]
    if m != n:
        raise PlaitValueError(f"lu: derivatives are implemented for square matrices only, got "
                              f"shape {_shape(a)}")
    tz = _zero_tangents([piv, perm])
    if isinstance(t, Zero):
        return outs, _zero_tangents([lu_]) + tz
    pa = _mm(_perm_matrix(perm, _dtype(a)), t)
    x = triangular_solve(lu_, pa, left_side=True, lower=True, unit_diagonal=True)
    x = triangular_solve(lu_, x, left_side=False, lower=False)
    l_unit = ew.add(_tril(lu_, -1), _eye_like(lu_))
    dl = _mm(l_unit, _tril(x, -1))
    du = _mm(_triu(x), _triu(lu_))
    return outs, [ew.add(dl, du)] + tz


lu_p.def_rule("jvp", _lu_jvp)
_batch_unary(lu_p)


def lu(x):
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)`` with
    ``x[..., permutation, :] == L @ U`` (``L`` unit lower in ``lu``'s strict lower
    triangle, ``U`` its upper triangle); ``pivots`` are LAPACK's 0-based row swaps."""
    return tuple(lu_p.bind(as_operand(x)))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation (int32) that the row swaps ``pivots`` apply (concrete pivots)."""
    return lu_pivots_to_permutation_np(np.asarray(pivots), int(permutation_size))




def lu_solve(lu_, permutation, b):
    """``a⁻¹ b`` from ``lu(a)``'s ``lu`` and ``permutation``; ``b`` of shape
    ``(..., n, k)`` with ``a``'s batch dims. The rows are permuted by a product with
    the permutation matrix (a native contraction; a gather would be a host step)."""
    pb = _mm(_perm_matrix(permutation, _dtype(b)), b)
    y = triangular_solve(lu_, pb, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu_, y, left_side=True, lower=False)


def _solve(a, b):
    """``a⁻¹ b`` by LU with partial pivoting (differentiable through ``lu``)."""
    lu_, _, perm = lu_p.bind(a)
    return lu_solve(lu_, perm, b)

# --- qr ---------------------------------------------------------------------------------
def _qr_abstract(a: ShapedArray, *, full_matrices: bool) -> list:
    _check_matrix("qr", a, square=False)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    b = a.shape[:-2]
    return [ShapedArray(b + (m, k), a.dtype, False), ShapedArray(b + (k, n), a.dtype, False)]


def _qr_impl(a, *, full_matrices: bool):
    a = np.asarray(a)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    b = a.shape[:-2]
    if a.size == 0:
        q = np.zeros(b + (m, k), a.dtype)
        if k:
            q[..., np.arange(k), np.arange(k)] = 1
        return [q, np.zeros(b + (k, n), a.dtype)]
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)]


qr_p = standard_primitive("qr", _qr_abstract, _qr_impl, multiple_results=True)


def _qr_jvp(primals, tangents, *, full_matrices):
    (a,), (t,) = primals, tangents
    q, r = qr_p.bind(a, full_matrices=full_matrices)
    m, n = _shape(a)[-2:]
    if m < n or (full_matrices and m != n):
        raise PlaitValueError(f"qr: derivatives need m >= n (and m == n with "
                              f"full_matrices=True), got shape {_shape(a)}")
    if isinstance(t, Zero):
        return [q, r], _zero_tangents([q, r])
    dx_rinv = triangular_solve(r, t, left_side=False, lower=False)
    qt = _mm(_H(q), dx_rinv)
    low = _tril(qt, -1)
    do = ew.sub(low, _H(low))
    if dtypes.is_complex(_dtype(a)):
        im = ew.sub(qt, _convert(ew.real(qt), _dtype(qt)))
        do = ew.add(do, ew.select(_band_mask(_shape(qt), "=="), im, _zeros_like(im)))
    dq = ew.add(_mm(q, ew.sub(do, qt)), dx_rinv)
    dr = _mm(ew.sub(qt, do), r)
    return [q, r], [dq, dr]


qr_p.def_rule("jvp", _qr_jvp)
_batch_unary(qr_p)


def qr(x, *, full_matrices: bool = True):
    """QR decomposition ``(q, r)``: ``q`` with orthonormal columns, ``r`` upper
    triangular, ``q @ r == x``; ``full_matrices=False`` gives the reduced shapes."""
    return tuple(qr_p.bind(as_operand(x), full_matrices=bool(full_matrices)))
