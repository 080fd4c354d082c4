"""``plait.scipy.linalg``: SciPy's dense linear-algebra names on ``plait.lax.linalg``.

Triangular and Cholesky solves, LU (``lu``, ``lu_factor``/``lu_solve``), ``qr``,
``svd``, ``eigh``, ``inv``, ``det``, ``solve`` with ``assume_a``, ``block_diag`` and
``expm`` (Padé 13 with scaling and squaring). Everything is composed of plait
operations, so it runs under ``jit`` and is differentiable where the primitives are.
``cho_factor`` leaves zeros (not SciPy's leftover entries) in the unused triangle.
``expm`` squares at most ``_MAX_SQUARINGS`` times under ``jit`` (the count depends on
the 1-norm, a traced value there); eagerly it squares exactly as often as needed.
"""

import numpy as _np

import plait.numpy as _pnp
from plait import lax as _lax
from plait.core.trace import Tracer as _Tracer
from plait.errors import PlaitValueError as _PlaitValueError
from plait.lax import linalg as _lla

__all__ = ["solve_triangular", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "lu",
           "qr", "svd", "eigh", "inv", "det", "solve", "block_diag", "expm"]

_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}


def _inexact(a, name: str):
    a = _pnp.asarray(a)
    if not _pnp.issubdtype(a.dtype, _pnp.inexact):
        a = a.astype(_pnp.float64)
    return a


def _common(a, b, name: str):
    a, b = _inexact(a, name), _inexact(b, name)
    dt = _pnp.result_type(a, b)
    return a.astype(dt), b.astype(dt)


def _trans(trans, name: str) -> int:
    if trans not in _TRANS:
        raise _PlaitValueError(f"{name}: trans must be 0, 1, 2 or 'N', 'T', 'C', got {trans!r}")
    return _TRANS[trans]


def _as_columns(b):
    return (b[:, None], True) if b.ndim == 1 else (b, False)


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False):
    """Solve ``op(a) x = b`` for triangular ``a`` (only its ``lower``/upper triangle is
    read); ``trans`` 0/'N', 1/'T' or 2/'C' picks ``op``; ``b`` of shape (n,) or (n, k)."""
    a, b = _common(a, b, "solve_triangular")
    t = _trans(trans, "solve_triangular")
    b2, vec = _as_columns(b)
    x = _lla.triangular_solve(a, b2, left_side=True, lower=bool(lower), transpose_a=t > 0,
                             conjugate_a=t == 2, unit_diagonal=bool(unit_diagonal))
    return x[:, 0] if vec else x


def cho_factor(a, lower: bool = False):
    """``(c, lower)``: the Cholesky factor of the Hermitian positive definite ``a`` in
    ``c``'s lower (``lower``) or upper triangle (zeros elsewhere), for ``cho_solve``."""
    a = _inexact(a, "cho_factor")
    L = _lla.cholesky(a)
    return (L if lower else _pnp.conj(L).T), bool(lower)


def cho_solve(c_and_lower, b):
    """Solve ``a x = b`` from ``cho_factor(a)``'s ``(c, lower)``."""
    c, lower = c_and_lower
    c, b = _common(c, b, "cho_solve")
    b2, vec = _as_columns(b)
    if lower:     # a = L Lᴴ
        y = _lla.triangular_solve(c, b2, left_side=True, lower=True)
        x = _lla.triangular_solve(c, y, left_side=True, lower=True, transpose_a=True,
                                 conjugate_a=True)
    else:         # a = Uᴴ U
        y = _lla.triangular_solve(c, b2, left_side=True, lower=False, transpose_a=True,
                                 conjugate_a=True)
        x = _lla.triangular_solve(c, y, left_side=True, lower=False)
    return x[:, 0] if vec else x


def _perm_from_pivots(piv, n: int):
    """The row order that LAPACK's (0-based) row swaps ``piv`` apply to ``range(n)``;
    works on traced pivots (one swap per row, unrolled)."""
    perm = _pnp.arange(n)
    for i in range(int(piv.shape[0])):
        j = piv[i]
        pi, pj = perm[i], perm[j]
        perm = perm.at[i].set(pj).at[j].set(pi)
    return perm


def lu_factor(a):
    """``(lu, piv)``: ``L`` (unit diagonal, strict lower triangle) and ``U`` in ``lu``,
    ``piv`` LAPACK's 0-based row interchanges (row i was swapped with row piv[i])."""
    a = _inexact(a, "lu_factor")
    lu_, piv, _ = _lla.lu(a)
    return lu_, piv


def lu_solve(lu_and_piv, b, trans=0):
    """Solve ``op(a) x = b`` from ``lu_factor(a)``'s ``(lu, piv)``."""
    lu_, piv = lu_and_piv
    lu_, b = _common(lu_, b, "lu_solve")
    t = _trans(trans, "lu_solve")
    n = int(lu_.shape[0])
    p = _pnp.eye(n, dtype=lu_.dtype)[_perm_from_pivots(piv, n)]    # p @ a == L @ U
    b2, vec = _as_columns(b)
    if t == 0:
        y = _lla.triangular_solve(lu_, p @ b2, left_side=True, lower=True, unit_diagonal=True)
        x = _lla.triangular_solve(lu_, y, left_side=True, lower=False)
    else:         # op(a) = op(U) op(L) p
        y = _lla.triangular_solve(lu_, b2, left_side=True, lower=False, transpose_a=True,
                                 conjugate_a=t == 2)
        z = _lla.triangular_solve(lu_, y, left_side=True, lower=True, transpose_a=True,
                                 conjugate_a=t == 2, unit_diagonal=True)
        x = p.T @ z
    return x[:, 0] if vec else x


def lu(a, permute_l: bool = False):
    """``(p, l, u)`` with ``a == p @ l @ u`` (``(p @ l, u)`` with ``permute_l``)."""
    a = _inexact(a, "lu")
    m, n = a.shape
    k = min(m, n)
    lu_, _, perm = _lla.lu(a)
    l = _pnp.tril(lu_[:, :k], -1) + _pnp.eye(m, k, dtype=a.dtype)
    u = _pnp.triu(lu_[:k, :])
    p = _pnp.eye(m, dtype=a.dtype)[perm].T
    return (p @ l, u) if permute_l else (p, l, u)


def qr(a, mode: str = "full"):
    """``(q, r)`` with ``a == q @ r`` (``mode`` 'full' or 'economic'), or ``(r,)`` for
    ``mode='r'`` (full shape) as in SciPy."""
    if mode not in ("full", "economic", "r"):
        raise _PlaitValueError(f"qr: mode must be 'full', 'economic' or 'r', got {mode!r}")
    q, r = _lla.qr(_inexact(a, "qr"), full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True):
    """``(U, s, Vh)`` with ``a == U @ diag(s) @ Vh`` (``s`` descending), or ``s``."""
    a = _inexact(a, "svd")
    if not compute_uv:
        return _lla.svd(a, compute_uv=False)
    s, u, vh = _lla.svd(a, full_matrices=bool(full_matrices))
    return u, s, vh


def eigh(a, lower: bool = True, eigvals_only: bool = False):
    """``(w, v)`` of a Hermitian ``a`` (``w`` ascending; only the ``lower``/upper
    triangle is read), or ``w`` alone with ``eigvals_only``."""
    v, w = _lla.eigh(_inexact(a, "eigh"), lower=bool(lower), symmetrize_input=False)
    return w if eigvals_only else (w, v)


def inv(a):
    """Inverse of a square matrix."""
    return _pnp.linalg.inv(_inexact(a, "inv"))


def det(a):
    """Determinant of a square matrix."""
    return _pnp.linalg.det(_inexact(a, "det"))


def _from_triangle(a, lower: bool, hermitian: bool):
    t = _pnp.tril(a) if lower else _pnp.triu(a)
    d = _pnp.diagonal(a)
    other = _pnp.conj(t).T if hermitian else t.T
    full = t + other - _pnp.diag(d)
    if hermitian:
        full = full - _pnp.diag(d) + _pnp.diag(_pnp.real(d).astype(a.dtype))
    return full


def solve(a, b, lower: bool = False, assume_a: str = "gen"):
    """Solve ``a x = b``. ``assume_a``: 'gen' (LU), 'sym'/'her' (symmetric/Hermitian,
    only the ``lower``/upper triangle read) or 'pos' (positive definite: Cholesky)."""
    a, b = _common(a, b, "solve")
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise _PlaitValueError(f"solve: assume_a must be 'gen', 'sym', 'her' or 'pos', got "
                              f"{assume_a!r}")
    b2, vec = _as_columns(b)
    if assume_a == "gen":
        x = _pnp.linalg.solve(a, b2)
    else:
        full = _from_triangle(a, bool(lower), assume_a in ("her", "pos"))
        if assume_a == "pos":
            x = cho_solve(cho_factor(full, lower=True), b2)
        else:
            x = _pnp.linalg.solve(full, b2)
    return x[:, 0] if vec else x


def block_diag(*arrs):
    """The block-diagonal matrix of the given blocks (0-d and 1-d inputs are rows)."""
    if not arrs:
        return _pnp.zeros((1, 0))
    blocks = [_pnp.atleast_2d(_pnp.asarray(x)) for x in arrs]
    for x in blocks:
        if x.ndim != 2:
            raise _PlaitValueError("block_diag: arguments must have dimension <= 2")
    dt = _pnp.result_type(*blocks)
    ncols = sum(int(x.shape[1]) for x in blocks)
    rows, left = [], 0
    for x in blocks:
        c = int(x.shape[1])
        rows.append(_pnp.pad(x.astype(dt), ((0, 0), (left, ncols - left - c))))
        left += c
    return _pnp.concatenate(rows, axis=0)


# --- expm: Padé 13 with scaling and squaring (Higham 2005) ----------------------------
_B13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
        129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
        40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152
_MAX_SQUARINGS = 40


def _pade13(A):
    b = _B13
    ident = _pnp.eye(A.shape[0], dtype=A.dtype)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2)
             + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)
    V = (A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2)
         + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * ident)
    return _pnp.linalg.solve(V - U, V + U)


def expm(A):
    """Matrix exponential of a square matrix (Padé 13 approximant of ``A / 2**s``,
    squared ``s`` times, ``s`` chosen from the 1-norm); differentiable."""
    A = _inexact(A, "expm")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise _PlaitValueError(f"expm: expected a square matrix, got shape {A.shape}")
    if A.shape[0] == 0:
        return A
    norm1 = _pnp.max(_pnp.sum(_pnp.abs(A), axis=0))
    s = _pnp.maximum(0.0, _pnp.ceil(_pnp.log2(norm1 / _THETA13)))
    s = _pnp.where(_pnp.isfinite(s), s, 0.0)
    traced = isinstance(s, _Tracer)
    scale = _pnp.exp2(-_lax.stop_gradient(s)).astype(A.real.dtype)
    R = _pade13(A * scale)
    if traced:
        for i in range(_MAX_SQUARINGS):
            R = _pnp.where(i < s, R @ R, R)
    else:
        for _ in range(int(_np.asarray(s))):
            R = R @ R
    return R
