"""``numpy.linalg``'s decompositions and solvers, written on ``plait.lax.linalg``.

Dtypes are NumPy's: integer and boolean inputs compute in float64, float32/complex64
stay single precision, float16 is rejected (LAPACK has no half precision). Leading
axes are stacks and broadcast (``solve``). Results with names are NumPy's named
tuples (``EighResult``, ``EigResult``, ``SVDResult``, ``SlogdetResult``, ``QRResult``).

Errors: non-square or rank < 2 input raises :class:`plait.errors.LinAlgError` (a
subclass of ``numpy.linalg.LinAlgError``) at the user's line. A singular matrix
(``solve``, ``inv``) or one that is not positive definite (``cholesky``) raises it
too when the values are concrete; under ``jit``/``vmap``/``grad`` values are unknown
when the program is built, so the result holds inf/NaN instead (as in JAX).

Deliberate differences: ``eig``/``eigvals`` always return complex results (NumPy
returns real ones when every imaginary part is zero, a value-dependent dtype);
``lstsq`` computes ``residuals`` whenever ``M > N`` (NumPy returns an empty array
when ``a`` is rank deficient, a value-dependent shape).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from plait import lax
from plait.lax import linalg as lla
from plait.lax.linalg.factorizations import solve as _lla_solve
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval
from plait.errors import LinAlgError, PlaitValueError, PlaitTypeError
from plait.numpy import _promote
from plait.numpy.linalg_ops import matmul
from plait.numpy.vector_ops import cross as _cross


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class QRResult(NamedTuple):
    Q: object
    R: object


# --- argument handling ------------------------------------------------------------------
def _linalg_dtype(dt: np.dtype) -> np.dtype:
    if dt == np.float16:
        raise PlaitTypeError("array type float16 is unsupported in linalg (LAPACK has no "
                             "half precision); convert to float32 first")
    if dtypes.is_inexact(dt):
        return dt
    return np.dtype(np.float64)


def _arr(x, name: str):
    x = _promote.asarray_strong(x, name=name)
    dt = get_aval(x).dtype
    want = _linalg_dtype(dt)
    return x if want == dt else _promote.cast(x, want)


def _stack_of_matrices(x, name: str, square: bool = True):
    x = _arr(x, name)
    shape = get_aval(x).shape
    if len(shape) < 2:
        raise LinAlgError(f"{name}: {len(shape)}-dimensional array given. Array must be at "
                          f"least two-dimensional")
    if square and shape[-1] != shape[-2]:
        raise LinAlgError(f"{name}: Last 2 dimensions of the array must be square (got shape "
                          f"{shape})")
    return x


def _concrete(*xs) -> bool:
    return not any(isinstance(x, Tracer) for x in xs)


def _shape(x) -> tuple:
    return get_aval(x).shape


def _dtype(x) -> np.dtype:
    return get_aval(x).dtype


def _real_dtype(dt):
    return np.dtype(np.float32) if dt in (np.float32, np.complex64) else np.dtype(np.float64)


def _swap(x):
    nd = len(_shape(x))
    return lax.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
    y = _swap(x)
    return lax.conj(y) if dtypes.is_complex(_dtype(y)) else y


def _eye(shape, dt):
    nd = len(shape)
    e = lax.eq(lax.broadcasted_iota(dtypes.int32, shape, nd - 2),
               lax.broadcasted_iota(dtypes.int32, shape, nd - 1))
    return lax.convert_element_type(e, dt)


def _diag(x):
    nd = len(_shape(x))
    return lax.reduce_sum(lax.mul(x, _eye(_shape(x), _dtype(x))), (nd - 1,))


def _broadcast_batch(a, b, b_core: int):
    """Broadcast the leading (stack) axes of ``a`` (2 core axes) and ``b``."""
    sa, sb = _shape(a), _shape(b)
    batch = _promote.broadcast_shapes(sa[:-2], sb[:len(sb) - b_core])
    return (_promote.broadcast_to_shape(a, batch + sa[-2:]),
            _promote.broadcast_to_shape(b, batch + sb[len(sb) - b_core:]))


def _check_finite_result(x, what: str):
    """Eagerly (concrete values only): raise NumPy's error when ``x`` holds NaN/inf."""
    if _concrete(x) and not np.all(np.isfinite(np.asarray(x))):
        raise LinAlgError(what)


# --- solves -------------------------------------------------------------------------------
_lu_solve = lla.lu_solve


def _singular(lu) -> bool:
    return _concrete(lu) and bool(np.any(np.diagonal(np.asarray(lu), axis1=-2, axis2=-1) == 0))


def solve(a, b):
    """Solve ``a x = b``: ``a`` of shape ``(..., M, M)``, ``b`` of shape ``(M,)`` or
    ``(..., M, K)`` (NumPy 2's rule: only a 1-D ``b`` is a vector); stacks broadcast."""
    a = _stack_of_matrices(a, "solve")
    b = _arr(b, "solve")
    dt = np.result_type(_dtype(a), _dtype(b))
    a, b = _promote.cast(a, dt), _promote.cast(b, dt)
    vec = len(_shape(b)) == 1
    if vec:
        b = lax.reshape(b, _shape(b) + (1,))
    if _shape(b)[-2] != _shape(a)[-1]:
        raise PlaitValueError(f"solve: b's rows ({_shape(b)[-2]}) do not match a's size "
                              f"{_shape(a)[-1]} (a {_shape(a)}, b "
                              f"{_shape(b)[:-1] if vec else _shape(b)})")
    a, b = _broadcast_batch(a, b, 2)
    if _concrete(a):        # NumPy's error for a singular matrix needs the factors
        lu, _, perm = lla.lu(a)
        if _singular(lu):
            raise LinAlgError("Singular matrix")
        x = _lu_solve(lu, perm, b)
    else:                   # one primitive: the native backend fuses the factor and solves
        x = _lla_solve(a, b)
    return lax.reshape(x, _shape(x)[:-1]) if vec else x


def inv(a):
    """Inverse of each square matrix in the last two axes."""
    a = _stack_of_matrices(a, "inv")
    lu, _, perm = lla.lu(a)
    if _singular(lu):
        raise LinAlgError("Singular matrix")
    return _lu_solve(lu, perm, _eye(_shape(a), _dtype(a)))


def _parity_sign(piv, dt):
    """``(-1) ** (number of row swaps)`` of LAPACK pivots."""
    nd = len(_shape(piv))
    swaps = lax.ne(piv, lax.broadcasted_iota(dtypes.int32, _shape(piv), nd - 1))
    count = lax.reduce_sum(lax.convert_element_type(swaps, dtypes.int32), (nd - 1,))
    odd = lax.eq(lax.bitwise_and(count, _const(count, 1)), _const(count, 1))
    return lax.select(odd, _const(odd, -1, dt), _const(odd, 1, dt))


def _const(like, value, dt=None):
    dt = _dtype(like) if dt is None else dt
    return lax.broadcast_in_dim(_promote.scalar_array(value, dt, weak=False), _shape(like), ())


def slogdet(a):
    """``SlogdetResult(sign, logabsdet)``: the determinant's sign (a unit complex number
    for complex input; 0 for a singular matrix) and the log of its absolute value."""
    a = _stack_of_matrices(a, "slogdet")
    dt = _dtype(a)
    lu, piv, _ = lla.lu(a)
    d = _diag(lu)
    nd = len(_shape(d))
    absd = lax.abs(d)
    logabs = lax.reduce_sum(lax.log(absd), (nd - 1,))
    zero = lax.eq(absd, _const(absd, 0))
    if dtypes.is_complex(dt):
        unit = lax.select(lax.broadcast_in_dim(zero, _shape(d), tuple(range(nd))),
                          _const(d, 0), lax.div(d, lax.complex(absd, _const(absd, 0))))
    else:
        unit = lax.sign(d)
    sign = lax.mul(lax.reduce_prod(unit, (nd - 1,)), _parity_sign(piv, dt))
    return SlogdetResult(sign, logabs)


def det(a):
    """Determinant of each square matrix in the last two axes (``0`` when singular)."""
    a = _stack_of_matrices(a, "det")
    lu, piv, _ = lla.lu(a)
    d = _diag(lu)
    nd = len(_shape(d))
    return lax.mul(lax.reduce_prod(d, (nd - 1,)), _parity_sign(piv, _dtype(a)))


# --- factorizations ---------------------------------------------------------------------
def cholesky(a, /, *, upper: bool = False):
    """Cholesky factor of Hermitian positive-definite matrices (the lower triangle is
    read): ``L`` with ``L Lᴴ = a``, or ``U = Lᴴ`` with ``upper=True``."""
    a = _stack_of_matrices(a, "cholesky")
    L = lla.cholesky(a, symmetrize_input=False)
    _check_finite_result(L, "Matrix is not positive definite")
    return _H(L) if upper else L


def qr(a, mode: str = "reduced"):
    """QR decomposition: ``QRResult(Q, R)`` for mode ``'reduced'``/``'complete'``,
    ``R`` alone for ``'r'``."""
    a = _stack_of_matrices(a, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise PlaitValueError(f"qr: unrecognized mode {mode!r} (plait supports 'reduced', "
                              f"'complete' and 'r'; 'raw' exposes LAPACK's Householder "
                              f"storage, which plait does not)")
    q, r = lla.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO: str = "L"):
    """``EighResult(eigenvalues, eigenvectors)`` of Hermitian matrices, reading the
    ``UPLO`` triangle; eigenvalues ascending."""
    a = _stack_of_matrices(a, "eigh")
    if UPLO not in ("L", "U"):
        raise PlaitValueError("UPLO argument must be 'L' or 'U'")
    v, w = lla.eigh(a, lower=UPLO == "L", symmetrize_input=False)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str = "L"):
    """Eigenvalues (ascending, real) of Hermitian matrices (no eigenvector work, also
    when run eagerly)."""
    a = _stack_of_matrices(a, "eigvalsh")
    if UPLO not in ("L", "U"):
        raise PlaitValueError("UPLO argument must be 'L' or 'U'")
    (w,) = lla.eigh_p.bind(a, lower=UPLO == "L", sort_eigenvalues=True, subset_by_index=None,
                           compute_eigenvectors=False)
    return w


def eig(a):
    """``EigResult(eigenvalues, eigenvectors)`` of general square matrices (always
    complex; eigenvectors of unit norm in the columns)."""
    a = _stack_of_matrices(a, "eig")
    w, v = lla.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of general square matrices (always complex)."""
    a = _stack_of_matrices(a, "eigvals")
    return lla.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """``SVDResult(U, S, Vh)`` with ``a = U diag(S) Vh`` (``S`` descending), or ``S``
    alone without ``compute_uv``. ``hermitian`` is accepted; the general SVD is used."""
    a = _stack_of_matrices(a, "svd", square=False)
    if not compute_uv:
        return lla.svd(a, compute_uv=False)
    s, u, vh = lla.svd(a, full_matrices=bool(full_matrices))
    return SVDResult(u, s, vh)


def svdvals(x, /):
    """Singular values (descending) of each matrix in the last two axes."""
    return lla.svd(_stack_of_matrices(x, "svdvals", square=False), compute_uv=False)


# --- built on the SVD ---------------------------------------------------------------------
def _smax_keep(s):
    nd = len(_shape(s))
    m = lax.reduce_max(s, (nd - 1,)) if _shape(s)[-1] else lax.reduce_sum(s, (nd - 1,))
    return lax.broadcast_in_dim(m, _shape(s), tuple(range(nd - 1)))


def _pinv_from_svd(u, s, vh, cutoff):
    """``V diag(1/s) Uᴴ`` with ``1/s`` set to 0 where ``s <= cutoff``."""
    dt = _dtype(u)
    keep = lax.gt(s, cutoff)
    one = _const(s, 1)
    sinv = lax.select(keep, lax.div(one, lax.select(keep, s, one)), _const(s, 0))
    m = _shape(u)[-2]
    nd = len(_shape(u))
    row = lax.broadcast_in_dim(lax.convert_element_type(sinv, dt), _shape(s)[:-1] + (m, _shape(s)[-1]),
                               tuple(range(nd - 2)) + (nd - 1,))
    return matmul(_H(vh), _H(lax.mul(u, row)))


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=None):
    """Moore-Penrose pseudo-inverse: singular values at most ``rcond * max(s)`` are
    dropped (``rtol`` is the Array API name of ``rcond``; NumPy's default 1e-15)."""
    a = _stack_of_matrices(a, "pinv", square=False)
    if rcond is not None and rtol is not None:
        raise PlaitValueError("pinv: `rtol` and `rcond` can't be both set.")
    r = rcond if rcond is not None else (1e-15 if rtol is None else rtol)
    s, u, vh = lla.svd(a, full_matrices=False)
    cut = lax.mul(_smax_keep(s), _promote.broadcast_to_shape(
        _promote.cast(_promote.asarray_strong(r), _dtype(s)), _shape(s)))
    return _pinv_from_svd(u, s, vh, cut)


def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None):
    """Number of singular values above ``tol`` (default ``max(s) * max(M, N) * eps``,
    or ``rtol * max(s)``); a vector's rank is 1 unless it is all zeros."""
    A = _arr(A, "matrix_rank")
    shape = _shape(A)
    if len(shape) < 2:
        nz = lax.reduce_or(lax.ne(A, _const(A, 0)), tuple(range(len(shape))))
        return lax.convert_element_type(nz, dtypes.int64)
    s = lla.svd(A, compute_uv=False)
    nd = len(_shape(s))
    if tol is not None and rtol is not None:
        raise PlaitValueError("matrix_rank: `tol` and `rtol` can't be both set.")
    if tol is not None:
        cut = _promote.broadcast_to_shape(_promote.cast(_promote.arg(tol), _dtype(s)),
                                          _shape(s)[:-1])
        cut = lax.broadcast_in_dim(cut, _shape(s), tuple(range(nd - 1)))
    else:
        r = rtol if rtol is not None else max(shape[-2:]) * float(np.finfo(_dtype(s)).eps)
        cut = lax.mul(_smax_keep(s), _promote.broadcast_to_shape(
            _promote.cast(_promote.asarray_strong(r), _dtype(s)), _shape(s)))
    return lax.reduce_sum(lax.convert_element_type(lax.gt(s, cut), dtypes.int64), (nd - 1,))


def lstsq(a, b, rcond=None):
    """Least-squares solution of ``a x = b`` (``a`` of shape (M, N), ``b`` (M,) or (M, K)):
    ``(x, residuals, rank, s)``; singular values at most ``rcond * max(s)`` count as
    zero (default ``eps * max(M, N)``)."""
    a = _stack_of_matrices(a, "lstsq", square=False)
    b = _arr(b, "lstsq")
    if len(_shape(a)) != 2 or len(_shape(b)) not in (1, 2):
        raise LinAlgError("lstsq: a must be 2-dimensional and b 1- or 2-dimensional")
    dt = np.result_type(_dtype(a), _dtype(b))
    a, b = _promote.cast(a, dt), _promote.cast(b, dt)
    m, n = _shape(a)
    vec = len(_shape(b)) == 1
    if _shape(b)[0] != m:
        raise LinAlgError(f"lstsq: Incompatible dimensions: a {_shape(a)}, b {_shape(b)}")
    b2 = lax.reshape(b, (m, 1)) if vec else b
    s, u, vh = lla.svd(a, full_matrices=False)
    r = float(np.finfo(_real_dtype(dt)).eps) * max(m, n) if rcond is None else rcond
    cut = lax.mul(_smax_keep(s), _promote.broadcast_to_shape(
        _promote.cast(_promote.asarray_strong(r), _dtype(s)), _shape(s)))
    x = matmul(_pinv_from_svd(u, s, vh, cut), b2)
    rank = lax.reduce_sum(lax.convert_element_type(lax.gt(s, cut), dtypes.int32), (0,))
    if m > n:
        res = lax.sub(matmul(a, x), b2)
        ra = lax.abs(res)
        resid = lax.reduce_sum(lax.mul(ra, ra), (0,))
    else:
        resid = _promote.cast(_promote.wrap(np.zeros((0,), np.float64)), _real_dtype(dt))
    if vec:
        x = lax.reshape(x, (n,))
    return x, resid, rank, s


def cond(x, p=None):
    """Condition number in norm ``p`` (None/2/-2 from singular values; 1, -1, inf,
    -inf, 'fro' and 'nuc' as ``norm(x, p) * norm(inv(x), p)``)."""
    from plait.numpy.linalg import norm
    x = _stack_of_matrices(x, "cond", square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = lla.svd(x, compute_uv=False)
        nd = len(_shape(s))
        k = _shape(s)[-1]
        first = lax.squeeze(lax.slice(s, (0,) * nd, _shape(s)[:-1] + (1,)), (nd - 1,))
        last = lax.squeeze(lax.slice(s, (0,) * (nd - 1) + (k - 1,), _shape(s)), (nd - 1,))
        return lax.div(first, last) if p != -2 else lax.div(last, first)
    nd = len(_shape(x))
    lu, _, perm = lla.lu(x)
    xi = _lu_solve(lu, perm, _eye(_shape(x), _dtype(x)))
    return lax.mul(norm(x, p, axis=(nd - 2, nd - 1)), norm(xi, p, axis=(nd - 2, nd - 1)))


def tensorsolve(a, b, axes=None):
    """Solve ``tensordot(a, x, x.ndim) = b`` for ``x`` (NumPy's reshaping rule)."""
    a = _arr(a, "tensorsolve")
    b = _arr(b, "tensorsolve")
    an = len(_shape(a))
    if axes is not None:
        axes = [int(ax) % an for ax in (axes if isinstance(axes, (tuple, list)) else (axes,))]
        rest = [k for k in range(an) if k not in axes]
        a = lax.transpose(a, tuple(rest + axes))
    bshape = _shape(b)
    old = _shape(a)[len(bshape):]
    prod = int(np.prod(old))
    if int(np.prod(_shape(a)[:len(bshape)])) != prod or _shape(a)[:len(bshape)] != bshape:
        raise LinAlgError(f"tensorsolve: Input arrays must satisfy the requirement "
                          f"prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim]) (a {_shape(a)}, "
                          f"b {bshape})")
    x = solve(lax.reshape(a, (prod, prod)), lax.reshape(b, (prod,)))
    return lax.reshape(x, old)


def tensorinv(a, ind: int = 2):
    """The inverse of ``a`` with respect to ``tensordot(., ., ind)``."""
    a = _arr(a, "tensorinv")
    ind = int(ind)
    if ind <= 0:
        raise PlaitValueError("Invalid ind argument.")
    shape = _shape(a)
    lead, tail = shape[:ind], shape[ind:]
    p = int(np.prod(lead))
    if int(np.prod(tail)) != p:
        raise LinAlgError(f"tensorinv: prod(a.shape[:ind]) must equal prod(a.shape[ind:]) "
                          f"(a {shape}, ind={ind})")
    return lax.reshape(inv(lax.reshape(a, (p, p))), tail + lead)


def cross(x1, x2, /, *, axis: int = -1):
    """Cross product of 3-element vectors along ``axis`` (the other axes broadcast)."""
    a, b = _promote.promote_dtypes("cross", _promote.asarray_strong(x1),
                                   _promote.asarray_strong(x2))
    for x in (a, b):
        nd = len(_shape(x))
        if nd == 0 or _shape(x)[_promote.normalize_axis(axis, nd, "cross")] != 3:
            raise PlaitValueError(f"linalg.cross: both inputs must have 3 elements along axis "
                                  f"{axis}, got shapes {_shape(a)} and {_shape(b)}")
    return _cross(a, b, axis=axis)
