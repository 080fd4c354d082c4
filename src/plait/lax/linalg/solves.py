"""Solves of ``plait.lax.linalg``: ``triangular_solve`` and ``tridiagonal_solve``, both
linear in the right-hand side (their transposes are solves with the transposed
matrix). ``lu_solve`` lives with ``lu`` in ``factorizations``."""
import numpy as _np

from plait.core.aval import ShapedArray as _ShapedArray
from plait.core.trace import get_aval as _get_aval
from plait.errors import PlaitTypeError as _PlaitTypeError, PlaitValueError as _PlaitValueError
from plait.lax._base import (standard_primitive as _standard_primitive,
                             as_operand as _as_operand)
from plait.lax._ad_helpers import (Zero as _Zero, tangent_aval as _tangent_aval, full as _full,
                                   is_undefined_primal as _is_undefined_primal)
from plait.lax import elementwise as _ew
from plait.lax.shape_ops import slice as _lax_slice, pad as _pad
from plait.lax.linalg._common import (_batch_front, _check_inexact, _check_matrix, _col, _conj,
                                      _dtype, _each, _has_scipy, _lapack_fn, _mm, _ndim,
                                      _scipy_linalg, _shape, _swap, _tril, _triu)


# --- triangular_solve -------------------------------------------------------------------
def _trsolve_abstract(a: _ShapedArray, b: _ShapedArray, *, left_side, lower, transpose_a,
                      conjugate_a, unit_diagonal) -> _ShapedArray:
    _check_matrix("triangular_solve", a)
    _check_inexact("triangular_solve", b)
    if a.dtype != b.dtype:
        raise _PlaitTypeError(f"triangular_solve needs a and b of the same dtype, got "
                             f"{a.dtype} and {b.dtype}")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise _PlaitTypeError(f"triangular_solve needs a (..., m, m) and b with the same batch "
                             f"dimensions and rank, got shapes {a.shape} and {b.shape}")
    m = a.shape[-1]
    k = b.shape[-2] if left_side else b.shape[-1]
    if k != m:
        side = "rows" if left_side else "columns"
        raise _PlaitTypeError(f"triangular_solve (left_side={left_side}): b must have {m} "
                             f"{side} to match a of shape {a.shape}, got b of shape {b.shape}")
    return _ShapedArray(b.shape, b.dtype, False)


def _op(a, transpose_a, conjugate_a):
    a = _np.swapaxes(a, -1, -2) if transpose_a else a
    return _np.conj(a) if conjugate_a else a


def _trsolve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = _np.asarray(a), _np.asarray(b)
    if b.size == 0:
        return _np.zeros(b.shape, b.dtype)
    if not left_side:   # x op(a) = b  <=>  op(a)^T x^T = b^T
        return _np.swapaxes(_trsolve_impl(a, _np.swapaxes(b, -1, -2), left_side=True,
                                         lower=lower, transpose_a=not transpose_a,
                                         conjugate_a=conjugate_a,
                                         unit_diagonal=unit_diagonal), -1, -2)
    if _has_scipy():
        trtrs = _lapack_fn("trtrs", a.dtype)
        out = _np.empty(b.shape, b.dtype)
        if conjugate_a and not transpose_a:
            a, conjugate_a = _np.conj(a), False
        trans = (2 if conjugate_a else 1) if transpose_a else 0
        for i in _each(a.shape[:-2]):
            x, info = trtrs(a[i], b[i], lower=int(lower), trans=trans,
                            unitdiag=int(unit_diagonal))
            if info != 0:   # a zero on the diagonal: substitution gives inf/NaN, as in JAX
                x = _substitute(_op(_triangle(a[i], lower, unit_diagonal), transpose_a,
                                    conjugate_a), b[i], lower != transpose_a)
            out[i] = x
        return out
    out = _np.empty(b.shape, b.dtype)
    op = _op(_triangle(a, lower, unit_diagonal), transpose_a, conjugate_a)
    for i in _each(a.shape[:-2]):
        out[i] = _substitute(op[i], b[i], lower != transpose_a)
    return out


def _triangle(a, lower: bool, unit_diagonal: bool):
    """The triangle of ``a`` a triangular solve reads (ones on a unit diagonal)."""
    t = _np.tril(a) if lower else _np.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        t[..., _np.arange(n), _np.arange(n)] = 1
    return t


def _substitute(t, b, lower: bool):
    """Forward/back substitution with IEEE semantics (a zero pivot gives inf/NaN)."""
    n = t.shape[-1]
    x = _np.zeros(b.shape, _np.result_type(t, b))
    with _np.errstate(all="ignore"):
        for i in (range(n) if lower else range(n - 1, -1, -1)):
            x[i] = (b[i] - t[i] @ x) / t[i, i]
    return x.astype(b.dtype, copy=False)


triangular_solve_p = _standard_primitive("triangular_solve", _trsolve_abstract, _trsolve_impl)


def _op_lax(a, transpose_a, conjugate_a):
    a = _swap(a) if transpose_a else a
    return _conj(a) if conjugate_a else a


def _trsolve_jvp(primals, tangents, **params):
    (a, b), (ta, tb) = primals, tangents
    x = triangular_solve_p.bind(a, b, **params)
    out = None
    if not isinstance(tb, _Zero):
        out = triangular_solve_p.bind(a, tb, **params)
    if not isinstance(ta, _Zero):
        k = -1 if params["unit_diagonal"] else 0
        tri = _tril(ta, k) if params["lower"] else _triu(ta, -k)
        op = _op_lax(tri, params["transpose_a"], params["conjugate_a"])
        rhs = _mm(op, x) if params["left_side"] else _mm(x, op)
        d = _ew.neg(triangular_solve_p.bind(a, rhs, **params))
        out = d if out is None else _ew.add(out, d)
    return x, out


def _trsolve_transpose(ct, a, b, **params):
    if _is_undefined_primal(a):
        raise _PlaitValueError("triangular_solve is linear in b only; its matrix a cannot be "
                              "a linear input (a plait bug if reached through grad)")
    if isinstance(ct, _Zero):
        return [None, _Zero(b.aval)]
    p = dict(params, transpose_a=not params["transpose_a"])
    return [None, triangular_solve_p.bind(a, ct, **p)]


def _trsolve_batch(vals, dims, **params):
    a, b = _batch_front(vals, dims)
    return triangular_solve_p.bind(a, b, **params), 0


triangular_solve_p.def_rule("jvp", _trsolve_jvp)
triangular_solve_p.def_rule("transpose", _trsolve_transpose)
triangular_solve_p.def_rule("batch", _trsolve_batch)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve ``op(a) x = b`` (``left_side``) or ``x op(a) = b`` for ``x``, with ``a``
    triangular (only the ``lower``/upper triangle is read; ``unit_diagonal`` assumes
    ones on the diagonal) and ``op`` transposing and/or conjugating ``a``.
    JAX's signature and defaults (``left_side=False``)."""
    return triangular_solve_p.bind(_as_operand(a), _as_operand(b), left_side=bool(left_side),
                                   lower=bool(lower), transpose_a=bool(transpose_a),
                                   conjugate_a=bool(conjugate_a),
                                   unit_diagonal=bool(unit_diagonal))


# --- tridiagonal_solve --------------------------------------------------------------------
def _tds_abstract(dl: _ShapedArray, d: _ShapedArray, du: _ShapedArray, b: _ShapedArray):
    for nm, x in (("dl", dl), ("d", d), ("du", du), ("b", b)):
        _check_inexact("tridiagonal_solve", x)
        if x.dtype != b.dtype:
            raise _PlaitTypeError(f"tridiagonal_solve needs dl, d, du and b of one dtype, got "
                                 f"{nm} of dtype {x.dtype} and b of dtype {b.dtype}")
    if b.ndim < 2:
        raise _PlaitTypeError(f"tridiagonal_solve needs b of shape (..., m, n), got {b.shape}")
    want = b.shape[:-1]
    for nm, x in (("dl", dl), ("d", d), ("du", du)):
        if x.shape != want:
            raise _PlaitTypeError(f"tridiagonal_solve: {nm} must have shape {want} (b's shape "
                                 f"without its last axis), got {x.shape}")
    return _ShapedArray(b.shape, b.dtype, False)


def _tds_impl(dl, d, du, b):
    b = _np.asarray(b)
    if b.size == 0:
        return _np.zeros(b.shape, b.dtype)
    if b.shape[-2] == 1:     # gtsv's wrapper rejects empty off-diagonals
        with _np.errstate(all="ignore"):
            return (b / _np.asarray(d)[..., None]).astype(b.dtype)
    _scipy_linalg("tridiagonal_solve")
    gtsv = _lapack_fn("gtsv", b.dtype)
    out = _np.empty_like(b)
    for i in _each(b.shape[:-2]):
        *_, x, info = gtsv(dl[i][1:], d[i], du[i][:-1], b[i])
        out[i] = x if info == 0 else _np.nan
    return out


tridiagonal_solve_p = _standard_primitive("tridiagonal_solve", _tds_abstract, _tds_impl)


def _shift(x, axis: int, down: bool):
    """``x`` moved one step along ``axis`` (down: ``y[i] = x[i-1]``), zero filled."""
    s = _shape(x)
    nd = len(s)
    if s[axis] == 0:
        return x
    start = [0] * nd
    limit = list(s)
    if down:
        limit[axis] -= 1
    else:
        start[axis] = 1
    part = _lax_slice(x, tuple(start), tuple(limit))
    cfg = [(0, 0, 0)] * nd
    cfg[axis] = (1, 0, 0) if down else (0, 1, 0)
    return _pad(part, _full((), 0, _dtype(x)), tuple(cfg))


def _tds_jvp(primals, tangents):
    dl, d, du, b = primals
    tdl, td, tdu, tb = tangents
    x = tridiagonal_solve_p.bind(dl, d, du, b)
    n = _shape(b)[-1]
    ax = _ndim(b) - 2
    rhs = None if isinstance(tb, _Zero) else tb
    for t, xs in ((tdl, _shift(x, ax, True)), (td, x), (tdu, _shift(x, ax, False))):
        if isinstance(t, _Zero):
            continue
        term = _ew.neg(_ew.mul(_col(t, n), xs))
        rhs = term if rhs is None else _ew.add(rhs, term)
    if rhs is None:
        return x, _Zero(_tangent_aval(_get_aval(x)))
    return x, tridiagonal_solve_p.bind(dl, d, du, rhs)


def _tds_transpose(ct, dl, d, du, b):
    if any(_is_undefined_primal(v) for v in (dl, d, du)):
        raise _PlaitValueError("tridiagonal_solve is linear in b only (a plait bug if reached "
                              "through grad)")
    if isinstance(ct, _Zero):
        return [None, None, None, _Zero(b.aval)]
    ax = _ndim(dl) - 1
    dl_t = _shift(du, ax, True)                     # Tᵀ's sub-diagonal: du[i-1]
    du_t = _shift(dl, ax, False)                    # Tᵀ's super-diagonal: dl[i+1]
    return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct)]


def _tds_batch(vals, dims):
    return tridiagonal_solve_p.bind(*_batch_front(vals, dims)), 0


tridiagonal_solve_p.def_rule("jvp", _tds_jvp)
tridiagonal_solve_p.def_rule("transpose", _tds_transpose)
tridiagonal_solve_p.def_rule("batch", _tds_batch)


def tridiagonal_solve(dl, d, du, b):
    """Solve ``T x = b`` for tridiagonal ``T`` given by its sub-diagonal ``dl``
    (``dl[0]`` unused), diagonal ``d`` and super-diagonal ``du`` (``du[-1]`` unused),
    each of shape ``(..., m)``, with ``b`` of shape ``(..., m, n)`` (LAPACK ``gtsv``,
    partial pivoting; needs SciPy)."""
    return tridiagonal_solve_p.bind(*(_as_operand(v) for v in (dl, d, du, b)))
