"""``plait.lax.linalg``: matrix decompositions and solves (like ``jax.lax.linalg``).

Primitives: ``cholesky``, ``triangular_solve``, ``lu``, ``qr``, ``eigh``, ``eig``,
``svd``, ``schur`` and ``tridiagonal_solve``. Every one works on stacks: the last two axes
are the matrix, any leading axes are batch axes. The impls call LAPACK through
NumPy, or through SciPy where NumPy has no entry point (``triangular_solve`` and
``lu`` fall back to NumPy code without SciPy; ``tridiagonal_solve``, ``schur`` and
the left eigenvectors of ``eig`` need SciPy and say so).

Values, as in JAX: a failed factorization does not raise here (values are unknown
under ``jit``); ``cholesky`` of a matrix that is not positive definite gives NaNs,
and a singular ``lu`` gives a ``U`` with a zero on its diagonal (solves through it
give inf/NaN). ``plait.numpy.linalg`` raises NumPy's errors on concrete values.

Derivatives (standard matrix calculus; ``plait/transforms/RULES.md``):

- ``cholesky`` and ``eigh`` read one triangle (LAPACK's convention) and the real part
  of the diagonal; their derivatives are those of that reading, so a tangent in the
  other triangle contributes nothing (JAX instead symmetrizes the tangent; both
  agree on Hermitian tangents).
- ``eigh``: ``dv = v (F ∘ vᴴ dA v)`` with ``F_ij = 1/(w_j - w_i)``; for repeated
  eigenvalues the eigenvectors are not differentiable and the tangent holds inf/NaN
  (eigenvalue tangents stay finite). Eigenvectors are fixed up to a phase; the
  tangent is the one with ``Im(vᴴ dv)`` zero on the diagonal, so only
  phase-invariant functions of complex eigenvectors have finite-difference-checkable
  derivatives. No derivative of a partial decomposition (``subset_by_index``).
- ``svd``: JAX's rule; singular vectors of repeated singular values are not
  differentiable (inf/NaN), zero singular values contribute no ``1/s`` terms.
  ``full_matrices=True`` with vectors is differentiable only for square matrices.
- ``eig``: eigenvalues and right eigenvectors (normalized to unit norm) for distinct
  eigenvalues; not the left eigenvectors.
- ``qr``: needs ``m >= n`` (and ``m == n`` for ``full_matrices=True``), as in JAX.
- ``lu``: square matrices; the permutation is piecewise constant (zero tangent).
- ``schur`` has no derivative (as in JAX): its jvp rule raises a clear error.
- ``triangular_solve`` and ``tridiagonal_solve`` are linear in the right-hand side
  (transposes are solves with the transposed matrix).
"""

import functools as _functools

import numpy as _np

from plait.core import dtypes as _dtypes
from plait.core.aval import ShapedArray as _ShapedArray
from plait.core.trace import get_aval as _get_aval
from plait.errors import PlaitTypeError as _PlaitTypeError, PlaitValueError as _PlaitValueError
from plait.lax._base import standard_primitive as _standard_primitive, as_operand as _as_operand
from plait.lax._ad_helpers import (Zero as _Zero, tangent_aval as _tangent_aval, full as _full,
                                   is_undefined_primal as _is_undefined_primal)
from plait.lax._batch_helpers import move_batch_dim as _move_batch_dim, batch_size as _batch_size
from plait.lax import elementwise as _ew
from plait.lax.shape_ops import (broadcast_in_dim as _broadcast_in_dim, transpose as _transpose,
                                 broadcasted_iota as _broadcasted_iota, slice as _lax_slice,
                                 pad as _pad)
from plait.lax.contractions import dot_general as _dot_general
from plait.lax.reductions import reduce_sum as _reduce_sum

__all__ = ["cholesky", "triangular_solve", "lu", "qr", "eigh", "eig", "svd", "schur",
           "tridiagonal_solve", "lu_pivots_to_permutation", "lu_solve",
           # the primitives (as in jax.lax.linalg), for rules of other backends
           "cholesky_p", "eig_p", "eigh_p", "lu_p", "qr_p", "schur_p", "svd_p",
           "triangular_solve_p", "tridiagonal_solve_p"]

_F16_HINT = "LAPACK has no half precision; convert to float32 first"


# --- shape and dtype checks -----------------------------------------------------------
def _check_inexact(name: str, a: _ShapedArray) -> None:
    if not _dtypes.is_inexact(a.dtype):
        raise _PlaitTypeError(f"{name} needs a floating or complex matrix, got dtype {a.dtype} "
                             f"(convert it first, e.g. with .astype(float))")
    if a.dtype.itemsize == 2:
        raise _PlaitTypeError(f"{name} does not accept dtype {a.dtype}: {_F16_HINT}")


def _check_matrix(name: str, a: _ShapedArray, square: bool = True) -> None:
    _check_inexact(name, a)
    if a.ndim < 2:
        raise _PlaitTypeError(f"{name} needs an array of rank >= 2 (a stack of matrices in the "
                             f"last two axes), got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise _PlaitTypeError(f"{name} needs square matrices in the last two axes, got shape "
                             f"{a.shape}")


def _real_dtype(dt: _np.dtype) -> _np.dtype:
    return _np.dtype(_np.float32) if dt in (_np.float32, _np.complex64) else _np.dtype(_np.float64)


def _complex_dtype(dt: _np.dtype) -> _np.dtype:
    single = dt in (_np.float32, _np.complex64)
    return _np.dtype(_np.complex64) if single else _np.dtype(_np.complex128)


def _scipy_linalg(what: str):
    try:
        import scipy.linalg
    except ImportError:
        raise _PlaitValueError(f"{what} needs SciPy's LAPACK bindings; install scipy "
                              f"(pip install scipy)") from None
    return scipy.linalg


@_functools.lru_cache(maxsize=None)
def _lapack_fn(routine: str, dtype: _np.dtype):
    """SciPy's LAPACK ``routine`` for ``dtype`` (looked up once: the lookup costs more
    than a small call)."""
    from scipy.linalg import get_lapack_funcs
    return get_lapack_funcs((routine,), dtype=dtype)[0]


def _has_scipy() -> bool:
    try:
        import scipy.linalg  # noqa: F401
        return True
    except ImportError:
        return False


def _each(batch: tuple):
    return _np.ndindex(*batch) if batch else [()]


def _scipy_each(a, routine: str, kwargs: dict, picks: tuple, shapes: tuple) -> list:
    """SciPy's LAPACK ``routine(matrix, **kwargs)`` on each matrix of the stack ``a``
    (the library the native backend calls, so both backends agree bit for bit); the
    results at positions ``picks`` are stacked into arrays of ``shapes``, NaN where
    LAPACK reported failure (its last result, ``info``)."""
    fn = _lapack_fn(routine, a.dtype)
    outs = [_np.empty(sh, a.dtype) for sh in shapes]
    for i in _each(a.shape[:-2]):
        res = fn(a[i], **kwargs)
        for o, k in zip(outs, picks):
            o[i] = res[k] if res[-1] == 0 else _np.nan
    return outs


# --- small matrix helpers written with lax (so rules differentiate and stage) -----------
def _ndim(x) -> int:
    return _get_aval(x).ndim


def _dtype(x) -> _np.dtype:
    return _get_aval(x).dtype


def _shape(x) -> tuple:
    return _get_aval(x).shape


def _swap(x):
    nd = _ndim(x)
    return _transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _conj(x):
    return _ew.conj(x) if _dtypes.is_complex(_dtype(x)) else x


def _H(x):
    return _conj(_swap(x))


def _mm(a, b):
    """Batched matrix product of ``(..., m, k)`` and ``(..., k, n)`` (same batch dims)."""
    nd = _ndim(a)
    batch = tuple(range(nd - 2))
    return _dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _convert(x, dt):
    return x if _dtype(x) == dt else _ew.convert_element_type(x, dt)


def _zeros_like(x):
    return _full(_shape(x), 0, _dtype(x))


def _scale(x, c):
    return _ew.mul(x, _full(_shape(x), c, _dtype(x)))


def _band_mask(shape, rel: str, k: int = 0):
    """Mask of entries ``(i, j)`` of the last two axes with ``j - i rel k``."""
    nd = len(shape)
    i = _broadcasted_iota(_dtypes.int32, shape, nd - 2)
    j = _broadcasted_iota(_dtypes.int32, shape, nd - 1)
    d = _ew.sub(j, i)
    kk = _full(shape, k, _dtypes.int32)
    return {"==": _ew.eq, "<=": _ew.le, ">=": _ew.ge}[rel](d, kk)


def _tril(x, k: int = 0):
    return _ew.select(_band_mask(_shape(x), "<=", k), x, _zeros_like(x))


def _triu(x, k: int = 0):
    return _ew.select(_band_mask(_shape(x), ">=", k), x, _zeros_like(x))


def _diag(x):
    """The main diagonal of the last two axes of a square stack: ``(..., n)``."""
    sel = _ew.select(_band_mask(_shape(x), "=="), x, _zeros_like(x))
    return _reduce_sum(sel, (_ndim(x) - 1,))


def _diag_embed(v):
    """``(..., n)`` -> diagonal matrices ``(..., n, n)``."""
    s = _shape(v)
    shape = s + (s[-1],)
    b = _broadcast_in_dim(v, shape, tuple(range(len(s) - 1)) + (len(s),))
    return _ew.select(_band_mask(shape, "=="), b, _full(shape, 0, _dtype(v)))


def _eye_like(x):
    return _convert(_band_mask(_shape(x), "=="), _dtype(x))


def _row(v, n: int):
    """``(..., k)`` -> ``(..., n, k)``: ``v`` repeated along a new second-to-last axis."""
    s = _shape(v)
    return _broadcast_in_dim(v, s[:-1] + (n, s[-1]), tuple(range(len(s) - 1)) + (len(s),))


def _col(v, n: int):
    """``(..., k)`` -> ``(..., k, n)``: ``v`` repeated along a new last axis."""
    s = _shape(v)
    return _broadcast_in_dim(v, s + (n,), tuple(range(len(s))))


def _real(x):
    return _ew.real(x) if _dtypes.is_complex(_dtype(x)) else x


def _hermitian_part(t, lower: bool):
    """The Hermitian matrix LAPACK sees in ``t`` when it reads one triangle."""
    tri = _tril(t, -1) if lower else _triu(t, 1)
    d = _diag_embed(_real(_diag(t)))
    return _ew.add(_ew.add(tri, _H(tri)), _convert(d, _dtype(t)))


def _batch_unary(prim):
    """Batch rule of a one-operand primitive: the batch dim goes to the front."""
    def rule(vals, dims, **params):
        x = _move_batch_dim(vals[0], dims[0], 0, _shape(vals[0])[dims[0]])
        out = prim.bind(x, **params)
        return out, [0] * len(out)
    prim.def_rule("batch", rule)


def _batch_front(vals, dims):
    size = _batch_size(vals, dims)
    return [_move_batch_dim(v, d, 0, size) for v, d in zip(vals, dims)]


def _zero_tangents(outs):
    return [_Zero(_tangent_aval(_get_aval(o))) for o in outs]


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


# --- eigh -------------------------------------------------------------------------------
def _subset(subset, n: int, name: str):
    if subset is None:
        return None
    lo, hi = (int(v) for v in subset)
    if not 0 <= lo <= hi <= n:
        raise _PlaitValueError(f"{name}: subset_by_index {subset!r} must satisfy "
                              f"0 <= lo <= hi <= {n}")
    return lo, hi


def _eigh_abstract(a: _ShapedArray, *, lower, sort_eigenvalues, subset_by_index) -> list:
    _check_matrix("eigh", a)
    n = a.shape[-1]
    lo, hi = _subset(subset_by_index, n, "eigh") or (0, n)
    b = a.shape[:-2]
    return [_ShapedArray(b + (n, hi - lo), a.dtype, False),
            _ShapedArray(b + (hi - lo,), _real_dtype(a.dtype), False)]


def _eigh_impl(a, *, lower, sort_eigenvalues, subset_by_index):
    a = _np.asarray(a)
    n = a.shape[-1]
    lo, hi = subset_by_index or (0, n)
    if a.size == 0:
        return [_np.zeros(a.shape[:-1] + (hi - lo,), a.dtype),
                _np.zeros(a.shape[:-2] + (hi - lo,), _real_dtype(a.dtype))]
    if _has_scipy() and a.dtype.kind == "f":
        w, v = _scipy_each(a, "syevd", dict(compute_v=1, lower=int(lower)), (0, 1),
                           (a.shape[:-1], a.shape))
    else:
        w, v = _np.linalg.eigh(a, UPLO="L" if lower else "U")
    return [v[..., lo:hi].astype(a.dtype, copy=False),
            w[..., lo:hi].astype(_real_dtype(a.dtype), copy=False)]


eigh_p = _standard_primitive("eigh", _eigh_abstract, _eigh_impl, multiple_results=True)


def _inv_gaps(w):
    """``F`` with ``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal and 0 on it."""
    n = _shape(w)[-1]
    wj, wi = _row(w, n), _col(w, n)
    eye = _band_mask(_shape(wj), "==")
    one = _full(_shape(wj), 1, _dtype(w))
    gap = _ew.add(_ew.sub(wj, wi), _convert(eye, _dtype(w)))
    return _ew.select(eye, _zeros_like(one), _ew.div(one, gap))


def _eigh_jvp(primals, tangents, **params):
    (a,), (t,) = primals, tangents
    v, w = eigh_p.bind(a, **params)
    subset = params["subset_by_index"]
    if subset is not None and tuple(subset) != (0, _shape(a)[-1]):
        raise _PlaitValueError("eigh: derivatives of a partial eigendecomposition "
                              "(subset_by_index) are not defined")
    if isinstance(t, _Zero):
        return [v, w], _zero_tangents([v, w])
    s = _hermitian_part(t, params["lower"])
    m = _mm(_H(v), _mm(s, v))
    dw = _real(_diag(m))
    dv = _mm(v, _ew.mul(_convert(_inv_gaps(w), _dtype(a)), m))
    return [v, w], [dv, dw]


eigh_p.def_rule("jvp", _eigh_jvp)
_batch_unary(eigh_p)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None):
    """Eigendecomposition of Hermitian matrices: ``(v, w)`` with ascending real
    eigenvalues ``w`` and eigenvectors in ``v``'s columns (``x v = v diag(w)``).
    ``subset_by_index=(lo, hi)`` keeps eigenvalues ``lo..hi-1``. With
    ``symmetrize_input`` (JAX's default) ``x`` is first replaced by ``(x + xᴴ)/2``;
    otherwise only the ``lower`` (or upper) triangle is read."""
    x = _as_operand(x)
    a = _get_aval(x)
    _check_matrix("eigh", a)
    sub = _subset(subset_by_index, a.shape[-1], "eigh")
    if symmetrize_input:
        x = _scale(_ew.add(x, _H(x)), 0.5)
    return tuple(eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                             subset_by_index=sub))


# --- eig --------------------------------------------------------------------------------
def _eig_abstract(a: _ShapedArray, *, compute_left_eigenvectors,
                  compute_right_eigenvectors) -> list:
    _check_matrix("eig", a)
    c = _complex_dtype(a.dtype)
    out = [_ShapedArray(a.shape[:-1], c, False)]
    out += [_ShapedArray(a.shape, c, False)] * (int(compute_left_eigenvectors) +
                                              int(compute_right_eigenvectors))
    return out


def _eig_impl(a, *, compute_left_eigenvectors, compute_right_eigenvectors):
    a = _np.asarray(a)
    c = _complex_dtype(a.dtype)
    if a.size == 0:
        return ([_np.zeros(a.shape[:-1], c)] +
                [_np.zeros(a.shape, c)] * (int(compute_left_eigenvectors) +
                                          int(compute_right_eigenvectors)))
    if compute_left_eigenvectors:
        sl = _scipy_linalg("eig with compute_left_eigenvectors=True")
        w = _np.empty(a.shape[:-1], c)
        vl = _np.empty(a.shape, c)
        vr = _np.empty(a.shape, c)
        for i in _each(a.shape[:-2]):
            w[i], vl[i], vr[i] = sl.eig(a[i], left=True, right=True, check_finite=False)
        return [w, vl] + ([vr] if compute_right_eigenvectors else [])
    if compute_right_eigenvectors:
        w, vr = _np.linalg.eig(a)
        return [w.astype(c), vr.astype(c)]
    return [_np.linalg.eigvals(a).astype(c)]


eig_p = _standard_primitive("eig", _eig_abstract, _eig_impl, multiple_results=True)


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


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors):
    (a,), (t,) = primals, tangents
    params = dict(compute_left_eigenvectors=compute_left_eigenvectors,
                  compute_right_eigenvectors=compute_right_eigenvectors)
    outs = eig_p.bind(a, **params)
    if compute_left_eigenvectors:
        raise _PlaitValueError("eig: derivatives of left eigenvectors are not implemented; use "
                              "compute_left_eigenvectors=False")
    if isinstance(t, _Zero):
        return outs, _zero_tangents(outs)
    w, v = (outs if compute_right_eigenvectors else
            eig_p.bind(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True))
    c = _dtype(w)
    tc = _convert(t, c)
    vinv_da_v = _solve(v, _mm(tc, v))
    dw = _diag(vinv_da_v)
    if not compute_right_eigenvectors:
        return outs, [dw]
    n = _shape(a)[-1]
    du = _mm(v, _ew.mul(_inv_gaps(w), vinv_da_v))
    # keep the eigenvectors' norm: remove the real part of vᴴ du along v
    proj = _convert(_real(_reduce_sum(_ew.mul(_conj(v), du), (_ndim(v) - 2,))), c)
    dv = _ew.sub(du, _ew.mul(v, _row(proj, n)))
    return outs, [dw, dv]


eig_p.def_rule("jvp", _eig_jvp)
_batch_unary(eig_p)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True):
    """Eigendecomposition of general square matrices, complex results:
    ``[w, vl?, vr?]`` (JAX's order) with unit-norm eigenvectors in the columns
    (``x vr = vr diag(w)``, ``vlᴴ x = diag(w) vlᴴ``). Left eigenvectors need SciPy."""
    return eig_p.bind(_as_operand(x), compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors))


# --- svd --------------------------------------------------------------------------------
def _svd_abstract(a: _ShapedArray, *, full_matrices, compute_uv, subset_by_index) -> list:
    _check_matrix("svd", a, square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    lo, hi = _subset(subset_by_index, k, "svd") or (0, k)
    b = a.shape[:-2]
    s = _ShapedArray(b + (hi - lo,), _real_dtype(a.dtype), False)
    if not compute_uv:
        return [s]
    if subset_by_index is not None:
        ku = kv = hi - lo
    else:
        ku, kv = (m, n) if full_matrices else (k, k)
    return [s, _ShapedArray(b + (m, ku), a.dtype, False), _ShapedArray(b + (kv, n), a.dtype, False)]


def _svd_impl(a, *, full_matrices, compute_uv, subset_by_index):
    a = _np.asarray(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    lo, hi = subset_by_index or (0, k)
    rd = _real_dtype(a.dtype)
    if a.size == 0:
        outs = [_np.zeros(a.shape[:-2] + (hi - lo,), rd)]
        if compute_uv:
            avs = _svd_abstract(_ShapedArray(a.shape, a.dtype), full_matrices=full_matrices,
                                compute_uv=True, subset_by_index=subset_by_index)
            for av in avs[1:]:
                e = _np.zeros(av.shape, a.dtype)
                d = min(av.shape[-2:])
                e[..., _np.arange(d), _np.arange(d)] = 1
                outs.append(e)
        return outs
    if not compute_uv:
        if _has_scipy() and a.dtype.kind == "f":
            (s,) = _scipy_each(a, "gesdd", dict(compute_uv=0), (1,), (a.shape[:-2] + (k,),))
        else:
            s = _np.linalg.svd(a, compute_uv=False)
        return [s[..., lo:hi].astype(rd, copy=False)]
    full_uv = full_matrices and subset_by_index is None
    if _has_scipy() and a.dtype.kind == "f":
        ku, kv = (m, n) if full_uv else (k, k)
        u, s, vt = _scipy_each(a, "gesdd", dict(compute_uv=1, full_matrices=int(full_uv)),
                               (0, 1, 2), (a.shape[:-2] + (m, ku), a.shape[:-2] + (k,),
                                           a.shape[:-2] + (kv, n)))
    else:
        u, s, vt = _np.linalg.svd(a, full_matrices=full_uv)
    if subset_by_index is not None:
        u, s, vt = u[..., :, lo:hi], s[..., lo:hi], vt[..., lo:hi, :]
    return [s.astype(rd, copy=False), u.astype(a.dtype, copy=False),
            vt.astype(a.dtype, copy=False)]


svd_p = _standard_primitive("svd", _svd_abstract, _svd_impl, multiple_results=True)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index):
    (a,), (t,) = primals, tangents
    params = dict(full_matrices=full_matrices, compute_uv=compute_uv,
                  subset_by_index=subset_by_index)
    outs = svd_p.bind(a, **params)
    m, n = _shape(a)[-2:]
    k = min(m, n)
    if subset_by_index is not None and tuple(subset_by_index) != (0, k):
        raise _PlaitValueError("svd: derivatives of a partial SVD (subset_by_index) are not "
                              "implemented")
    if compute_uv and full_matrices and m != n:
        raise _PlaitValueError(f"svd: derivatives of full_matrices=True need square matrices "
                              f"(got shape {_shape(a)}); use full_matrices=False")
    if isinstance(t, _Zero):
        return outs, _zero_tangents(outs)
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True, subset_by_index=None)
    dt = _dtype(a)
    ut, v = _H(u), _H(vt)
    ds_mat = _mm(_mm(ut, t), v)
    ds = _real(_diag(ds_mat))
    if not compute_uv:
        return outs, [ds]
    sj = _row(s, k)          # s_j in column j
    si = _swap(sj)           # s_i in row i
    eye = _band_mask(_shape(sj), "==")
    eyef = _convert(eye, _dtype(s))
    diffs = _ew.mul(_ew.add(sj, si), _ew.sub(sj, si))     # s_j² - s_i²
    one = _full(_shape(sj), 1, _dtype(s))
    f = _ew.sub(_ew.div(one, _ew.add(diffs, eyef)), eyef)
    f = _convert(f, dt)
    s_zero = _convert(_ew.eq(s, _zeros_like(s)), _dtype(s))
    s_inv = _ew.sub(_ew.div(_full(_shape(s), 1, _dtype(s)), _ew.add(s, s_zero)), s_zero)
    dss = _ew.mul(_convert(sj, dt), ds_mat)
    sds = _ew.mul(_convert(si, dt), ds_mat)
    duv_diag = _ew.mul(_scale(_ew.sub(ds_mat, _H(ds_mat)), 0.5),
                      _convert(_diag_embed(s_inv), dt))
    du = _mm(u, _ew.add(_ew.mul(f, _ew.add(dss, _H(dss))), duv_diag))
    dv = _mm(v, _ew.mul(f, _ew.add(sds, _H(sds))))
    sinv_row = _convert(_row(s_inv, m), dt)
    if m > n:
        dav = _mm(t, v)
        du = _ew.add(du, _ew.mul(_ew.sub(dav, _mm(u, _mm(ut, dav))), sinv_row))
    if n > m:
        dahu = _mm(_H(t), u)
        dv = _ew.add(dv, _ew.mul(_ew.sub(dahu, _mm(v, _mm(vt, dahu))),
                               _convert(_row(s_inv, n), dt)))
    return outs, [ds, du, _H(dv)]


svd_p.def_rule("jvp", _svd_jvp)
_batch_unary(svd_p)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None):
    """Singular value decomposition: ``[s, u, vh]`` (``x = u diag(s) vh``, ``s``
    descending) or ``[s]`` without ``compute_uv``; ``subset_by_index=(lo, hi)`` keeps
    singular values ``lo..hi-1`` (and their vectors)."""
    x = _as_operand(x)
    a = _get_aval(x)
    _check_matrix("svd", a, square=False)
    sub = _subset(subset_by_index, min(a.shape[-2:]), "svd")
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                      subset_by_index=sub)
    return outs if compute_uv else outs[0]


# --- schur -------------------------------------------------------------------------------
def _schur_abstract(a: _ShapedArray, *, compute_schur_vectors: bool) -> list:
    _check_matrix("schur", a)
    out = _ShapedArray(a.shape, a.dtype, False)
    return [out, out] if compute_schur_vectors else [out]


def _schur_impl(a, *, compute_schur_vectors: bool):
    a = _np.asarray(a)
    if a.size == 0:
        return [_np.zeros(a.shape, a.dtype)] * (2 if compute_schur_vectors else 1)
    sl = _scipy_linalg("schur")
    t = _np.empty_like(a)
    z = _np.empty_like(a)
    kind = "complex" if a.dtype.kind == "c" else "real"
    for i in _each(a.shape[:-2]):
        t[i], z[i] = sl.schur(a[i], output=kind, check_finite=False)
    return [t, z] if compute_schur_vectors else [t]


schur_p = _standard_primitive("schur", _schur_abstract, _schur_impl, multiple_results=True)


def _schur_jvp(primals, tangents, **params):
    raise _PlaitValueError("schur is not differentiable (JAX has no derivative for it "
                          "either); for eigenvalues use eig or eigh")


schur_p.def_rule("jvp", _schur_jvp)
_batch_unary(schur_p)


def schur(x, *, compute_schur_vectors: bool = True):
    """Schur decomposition ``x = z t zᴴ``: ``t`` quasi-upper-triangular (real input,
    2x2 blocks for complex conjugate eigenvalue pairs) or upper triangular (complex
    input), ``z`` unitary; ``[t, z]``, or ``[t]`` without vectors. Needs SciPy."""
    outs = schur_p.bind(_as_operand(x), compute_schur_vectors=bool(compute_schur_vectors))
    return tuple(outs)


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
