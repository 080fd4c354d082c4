"""Factorizations of ``plait.lax.linalg``: ``cholesky``, ``lu`` (with
``lu_pivots_to_permutation``, ``lu_solve`` and the fused ``solve``) and ``qr``."""
import numpy as _np

from plait.core import dtypes as _dtypes
from plait.core.aval import ShapedArray as _ShapedArray
from plait.core.trace import get_aval as _get_aval
from plait.errors import PlaitValueError as _PlaitValueError
from plait.lax._base import (standard_primitive as _standard_primitive,
                             as_operand as _as_operand)
from plait.lax._ad_helpers import (Zero as _Zero, tangent_aval as _tangent_aval,
                                   is_undefined_primal as _is_undefined_primal)
from plait.lax._batch_helpers import move_batch_dim as _move_batch_dim
from plait.lax import elementwise as _ew
from plait.lax.reductions import reduce_sum as _reduce_sum
from plait.lax.shape_ops import (broadcast_in_dim as _broadcast_in_dim,
                                 broadcasted_iota as _broadcasted_iota)
from plait.lax.linalg._common import (_band_mask, _batch_front, _batch_unary, _check_matrix,
                                      _convert, _dtype, _each, _eye_like, _H, _has_scipy,
                                      _hermitian_part, _lapack_fn, _mm, _scale, _shape, _swap,
                                      _tril, _triu, _zero_tangents, _zeros_like)
from plait.lax.linalg.solves import triangular_solve, triangular_solve_p


# --- cholesky ---------------------------------------------------------------------------
def _cholesky_abstract(a: _ShapedArray) -> _ShapedArray:
    _check_matrix("cholesky", a)
    return _ShapedArray(a.shape, a.dtype, False)


def _cholesky_impl(a):
    a = _np.asarray(a)
    if a.size == 0:
        return _np.zeros(a.shape, a.dtype)
    try:
        return _np.linalg.cholesky(a)
    except _np.linalg.LinAlgError:
        out = _np.empty_like(a)
        for i in _each(a.shape[:-2]):
            try:
                out[i] = _np.linalg.cholesky(a[i])
            except _np.linalg.LinAlgError:
                out[i] = _np.nan
        return out


cholesky_p = _standard_primitive("cholesky", _cholesky_abstract, _cholesky_impl)


def _cholesky_jvp(primals, tangents, **params):
    (a,), (t,) = primals, tangents
    L = cholesky_p.bind(a, **params)
    if isinstance(t, _Zero):
        return L, _Zero(_tangent_aval(_get_aval(L)))
    s = _hermitian_part(t, True)
    # L^{-1} S L^{-H}, then keep the lower triangle with half the diagonal
    x = triangular_solve(L, s, left_side=True, lower=True)
    x = triangular_solve(L, x, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    phi = _ew.add(_tril(x, -1), _scale(_ew.select(_band_mask(_shape(x), "=="), x,
                                                   _zeros_like(x)), 0.5))
    return L, _mm(L, phi)


cholesky_p.def_rule("jvp", _cholesky_jvp)


def _cholesky_batch(vals, dims, **params):
    x = _move_batch_dim(vals[0], dims[0], 0, _shape(vals[0])[dims[0]])
    return cholesky_p.bind(x, **params), 0


cholesky_p.def_rule("batch", _cholesky_batch)


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor ``L`` (``L Lᴴ = x``) of Hermitian positive-definite
    matrices. ``symmetrize_input`` (JAX's default) first replaces ``x`` by
    ``(x + xᴴ)/2``; without it only the lower triangle is read. NaNs where ``x`` is
    not positive definite."""
    x = _as_operand(x)
    if symmetrize_input:
        _check_matrix("cholesky", _get_aval(x))
        x = _scale(_ew.add(x, _H(x)), 0.5)
    return cholesky_p.bind(x)


# --- lu ---------------------------------------------------------------------------------
def _lu_abstract(a: _ShapedArray) -> list:
    _check_matrix("lu", a, square=False)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    return [_ShapedArray(a.shape, a.dtype, False),
            _ShapedArray(batch + (min(m, n),), _dtypes.int32, False),
            _ShapedArray(batch + (m,), _dtypes.int32, False)]


def _lu_numpy(a):
    """Partial-pivoting LU of a stack ``(B, m, n)`` (vectorized over the stack)."""
    a = a.copy()
    nb, m, n = a.shape
    piv = _np.zeros((nb, min(m, n)), _np.int32)
    rows = _np.arange(nb)
    for k in range(min(m, n)):
        p = _np.argmax(_np.abs(a[:, k:, k]), axis=1) + k
        piv[:, k] = p
        rk = a[rows, k].copy()
        a[rows, k] = a[rows, p]
        a[rows, p] = rk
        pivot = a[:, k, k]
        safe = _np.where(pivot == 0, 1, pivot)
        a[:, k + 1:, k] /= safe[:, None]
        a[:, k + 1:, k + 1:] -= a[:, k + 1:, k:k + 1] * a[:, k:k + 1, k + 1:]
    return a, piv


def _lu_pivots_to_permutation_np(piv, m: int):
    """The row permutation that LAPACK's sequential row swaps ``piv`` apply."""
    batch = piv.shape[:-1]
    perm = _np.broadcast_to(_np.arange(m, dtype=_np.int32), batch + (m,)).copy()
    if perm.size == 0 or piv.size == 0:
        return perm
    flat_p, flat_perm = piv.reshape(-1, piv.shape[-1]), perm.reshape(-1, m)
    rows = _np.arange(flat_perm.shape[0])
    for i in range(piv.shape[-1]):
        j = flat_p[:, i]
        t = flat_perm[rows, i].copy()
        flat_perm[rows, i] = flat_perm[rows, j]
        flat_perm[rows, j] = t
    return flat_perm.reshape(batch + (m,))


def _lu_impl(a):
    a = _np.asarray(a)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if a.size == 0:
        return [_np.zeros(a.shape, a.dtype), _np.zeros(batch + (k,), _np.int32),
                _np.broadcast_to(_np.arange(m, dtype=_np.int32), batch + (m,)).copy()]
    if _has_scipy():
        getrf = _lapack_fn("getrf", a.dtype)
        lu = _np.empty_like(a)
        piv = _np.empty(batch + (k,), _np.int32)
        for i in _each(batch):
            lu[i], p, _info = getrf(a[i])
            piv[i] = p[:k]
    else:
        flat, p = _lu_numpy(a.reshape((-1, m, n)))
        lu, piv = flat.reshape(a.shape), p.reshape(batch + (k,))
    return [lu, piv, _lu_pivots_to_permutation_np(piv, m)]


lu_p = _standard_primitive("lu", _lu_abstract, _lu_impl, multiple_results=True)


def _perm_matrix(perm, dtype):
    """``P`` with ``(P x)[i] = x[perm[i]]``: ``P[i, j] = (perm[i] == j)``."""
    s = _shape(perm)
    m = s[-1]
    shape = s + (m,)
    p = _broadcast_in_dim(perm, shape, tuple(range(len(s))))
    j = _broadcasted_iota(_dtypes.int32, shape, len(s))
    return _convert(_ew.eq(p, j), dtype)


def _lu_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    outs = lu_p.bind(a)
    lu_, piv, perm = outs
    m, n = _shape(a)[-2:]
    if m != n:
        raise _PlaitValueError(f"lu: derivatives are implemented for square matrices only, got "
                              f"shape {_shape(a)}")
    tz = _zero_tangents([piv, perm])
    if isinstance(t, _Zero):
        return outs, _zero_tangents([lu_]) + tz
    pa = _mm(_perm_matrix(perm, _dtype(a)), t)
    x = triangular_solve(lu_, pa, left_side=True, lower=True, unit_diagonal=True)
    x = triangular_solve(lu_, x, left_side=False, lower=False)
    l_unit = _ew.add(_tril(lu_, -1), _eye_like(lu_))
    dl = _mm(l_unit, _tril(x, -1))
    du = _mm(_triu(x), _triu(lu_))
    return outs, [_ew.add(dl, du)] + tz


lu_p.def_rule("jvp", _lu_jvp)
_batch_unary(lu_p)


def lu(x):
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)`` with
    ``x[..., permutation, :] == L @ U`` (``L`` unit lower in ``lu``'s strict lower
    triangle, ``U`` its upper triangle); ``pivots`` are LAPACK's 0-based row swaps."""
    return tuple(lu_p.bind(_as_operand(x)))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation (int32) that the row swaps ``pivots`` apply (concrete pivots)."""
    return _lu_pivots_to_permutation_np(_np.asarray(pivots), int(permutation_size))


# Up to this many right-hand sides the rows of ``b`` are permuted by a fused
# compare-select-sum; beyond, by a product with the permutation matrix.
_SELECT_RHS = 8


def _permute_rows(perm, b):
    """``(P b)[..., i, :] = b[..., perm[i], :]`` without a gather (a gather would be a
    host step). Few columns: one fused select-and-sum over ``(..., i, j, k)``, never
    materializing ``P`` (its n² entries cost more memory traffic than the n² k
    compares); many: a product with ``P`` (a native contraction)."""
    s = _shape(b)
    nb, (m, k) = len(s) - 2, s[-2:]
    if k > _SELECT_RHS:
        return _mm(_perm_matrix(perm, _dtype(b)), b)
    batch = tuple(range(nb))
    shape = s[:-2] + (m, m, k)
    p = _broadcast_in_dim(perm, shape, batch + (nb,))
    j = _broadcasted_iota(_dtypes.int32, shape, nb + 1)
    bb = _broadcast_in_dim(b, shape, batch + (nb + 1, nb + 2))
    return _reduce_sum(_ew.select(_ew.eq(p, j), bb, _zeros_like(bb)), (nb + 1,))


def lu_solve(lu_, permutation, b):
    """``a⁻¹ b`` from ``lu(a)``'s ``lu`` and ``permutation``; ``b`` of shape
    ``(..., n, k)`` with ``a``'s batch dims."""
    pb = _permute_rows(permutation, b)
    y = triangular_solve(lu_, pb, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu_, y, left_side=True, lower=False)


# --- solve: lu and lu_solve as one primitive ------------------------------------------
# ``a⁻¹ b`` for square ``a`` (..., n, n) and ``b`` (..., n, k) with the same batch dims.
# Its values are those of ``lu`` then ``lu_solve`` (the impl runs exactly that); one
# primitive lets the native backend factor ``a``'s row-major storage as LAPACK's
# column-major ``aᵀ`` and solve with the transposed factors (getrf + getrs 'T'),
# skipping the two layout transposes ``lu`` makes (backends/native/lapack.py).
def _solve_abstract(a: _ShapedArray, b: _ShapedArray) -> _ShapedArray:
    _check_matrix("solve", a)
    _check_matrix("solve", b, square=False)
    if b.shape[:-1] != a.shape[:-1] or b.dtype != a.dtype:
        raise _PlaitValueError(f"solve: b {b.shape} {b.dtype} must have a's batch dims and "
                               f"rows and its dtype (a {a.shape} {a.dtype})")
    return _ShapedArray(b.shape, b.dtype, False)


def _solve_impl(a, b):
    lu_, _, perm = _lu_impl(_np.asarray(a))
    pb = _np.take_along_axis(_np.asarray(b), perm[..., None].astype(_np.intp), axis=-2)
    flags = dict(left_side=True, transpose_a=False, conjugate_a=False)
    y = triangular_solve_p.impl(lu_, pb, lower=True, unit_diagonal=True, **flags)
    return triangular_solve_p.impl(lu_, y, lower=False, unit_diagonal=False, **flags)


solve_p = _standard_primitive("solve", _solve_abstract, _solve_impl)


def _solve_jvp(primals, tangents):
    """``dx = a⁻¹ (db - da x)``."""
    (a, b), (ta, tb) = primals, tangents
    x = solve_p.bind(a, b)
    if isinstance(ta, _Zero) and isinstance(tb, _Zero):
        return x, _Zero(_tangent_aval(_get_aval(x)))
    rhs = tb if isinstance(ta, _Zero) else _ew.neg(_mm(ta, x))
    if not isinstance(ta, _Zero) and not isinstance(tb, _Zero):
        rhs = _ew.add(tb, rhs)
    return x, solve_p.bind(a, rhs)


def _solve_transpose(ct, a, b):
    """Linear in ``b``: the transpose is a solve with ``aᵀ``."""
    if _is_undefined_primal(a):
        raise _PlaitValueError("solve is linear in b only; its matrix a cannot be a linear "
                               "input (a plait bug if reached through grad)")
    if isinstance(ct, _Zero):
        return [None, _Zero(b.aval)]
    return [None, solve_p.bind(_swap(a), ct)]


def _solve_batch(vals, dims):
    a, b = _batch_front(vals, dims)
    return solve_p.bind(a, b), 0


solve_p.def_rule("jvp", _solve_jvp)
solve_p.def_rule("transpose", _solve_transpose)
solve_p.def_rule("batch", _solve_batch)


def solve(a, b):
    """``a⁻¹ b`` by LU with partial pivoting: ``a`` of shape ``(..., n, n)``, ``b`` of
    shape ``(..., n, k)`` with the same batch dims and dtype (the values of ``lu`` then
    :func:`lu_solve`; a singular ``a`` gives inf/NaN, as there)."""
    return solve_p.bind(_as_operand(a), _as_operand(b))


# --- qr ---------------------------------------------------------------------------------
def _qr_abstract(a: _ShapedArray, *, full_matrices: bool) -> list:
    _check_matrix("qr", a, square=False)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    b = a.shape[:-2]
    return [_ShapedArray(b + (m, k), a.dtype, False), _ShapedArray(b + (k, n), a.dtype, False)]


def _qr_impl(a, *, full_matrices: bool):
    a = _np.asarray(a)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    b = a.shape[:-2]
    if a.size == 0:
        q = _np.zeros(b + (m, k), a.dtype)
        if k:
            q[..., _np.arange(k), _np.arange(k)] = 1
        return [q, _np.zeros(b + (k, n), a.dtype)]
    q, r = _np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)]


qr_p = _standard_primitive("qr", _qr_abstract, _qr_impl, multiple_results=True)


def _qr_jvp(primals, tangents, *, full_matrices):
    (a,), (t,) = primals, tangents
    q, r = qr_p.bind(a, full_matrices=full_matrices)
    m, n = _shape(a)[-2:]
    if m < n or (full_matrices and m != n):
        raise _PlaitValueError(f"qr: derivatives need m >= n (and m == n with "
                              f"full_matrices=True), got shape {_shape(a)}")
    if isinstance(t, _Zero):
        return [q, r], _zero_tangents([q, r])
    dx_rinv = triangular_solve(r, t, left_side=False, lower=False)
    qt = _mm(_H(q), dx_rinv)
    low = _tril(qt, -1)
    do = _ew.sub(low, _H(low))
    if _dtypes.is_complex(_dtype(a)):
        im = _ew.sub(qt, _convert(_ew.real(qt), _dtype(qt)))
        do = _ew.add(do, _ew.select(_band_mask(_shape(qt), "=="), im, _zeros_like(im)))
    dq = _ew.add(_mm(q, _ew.sub(do, qt)), dx_rinv)
    dr = _mm(_ew.sub(qt, do), r)
    return [q, r], [dq, dr]


qr_p.def_rule("jvp", _qr_jvp)
_batch_unary(qr_p)


def qr(x, *, full_matrices: bool = True):
    """QR decomposition ``(q, r)``: ``q`` with orthonormal columns, ``r`` upper
    triangular, ``q @ r == x``; ``full_matrices=False`` gives the reduced shapes."""
    return tuple(qr_p.bind(_as_operand(x), full_matrices=bool(full_matrices)))
