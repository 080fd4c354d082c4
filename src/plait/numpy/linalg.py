"""``plait.numpy.linalg``: ``numpy.linalg`` and the Array API linalg extension.

Norms and products live here; decompositions and solvers (``solve``, ``inv``,
``det``, ``svd``, ``eigh``, ...) in ``_linalg_decomp`` on ``plait.lax.linalg``.
"""

import math as _math

from plait import lax as _lax
from plait.core import dtypes as _dtypes
from plait.core.trace import get_aval as _get_aval
from plait.errors import PlaitValueError as _PlaitValueError
from plait.numpy import _promote
from plait.numpy.indexing import diagonal as _diagonal
from plait.numpy.linalg_ops import (matmul, tensordot as _tensordot, vecdot, outer as _outer,
                                    trace as _trace)
from plait.numpy.shapes import matrix_transpose
from plait.numpy._linalg_decomp import (solve, inv, det, slogdet, cholesky, qr, eigh, eigvalsh,
                                        eig, eigvals, svd, svdvals, pinv, matrix_rank, lstsq,
                                        cond, tensorsolve, tensorinv, cross, EighResult,
                                        EigResult, SVDResult, SlogdetResult, QRResult)
from plait.errors import LinAlgError


def _inexact(x, name: str):
    x = _promote.arg(x, name)
    x = _promote.asarray_strong(x) if _promote.is_python_scalar(x) else x
    dt = _get_aval(x).dtype
    return x if _dtypes.is_inexact(dt) else _promote.cast(x, _dtypes.float64)


def _keep(y, shape: tuple, axes: tuple, keepdims: bool):
    if not keepdims:
        return y
    return _lax.reshape(y, tuple(1 if d in axes else s for d, s in enumerate(shape)))


def _vector(x, axes: tuple, ord):
    a = _lax.abs(x)
    if ord is None or ord == 2:
        return _lax.sqrt(_lax.reduce_sum(_lax.mul(a, a), axes))
    if ord == _math.inf:
        return _lax.reduce_max(a, axes)
    if ord == -_math.inf:
        return _lax.reduce_min(a, axes)
    if ord == 0:
        nz = _lax.ne(x, 0)
        return _lax.reduce_sum(_promote.cast(nz, _get_aval(a).dtype), axes)
    if ord == 1:
        return _lax.reduce_sum(a, axes)
    p = float(ord)
    return _lax.pow(_lax.reduce_sum(_lax.pow(a, p), axes), 1.0 / p)


def _matrix(x, row: int, col: int, ord):
    if ord in (None, "fro"):
        return _vector(x, tuple(sorted((row, col))), 2)
    if ord in (2, -2, "nuc"):
        return _singular_value_norm(x, row, col, ord)
    a = _lax.abs(x)
    if ord in (1, -1):
        s, keep = _lax.reduce_sum(a, (row,)), col - (col > row)
    elif ord in (_math.inf, -_math.inf):
        s, keep = _lax.reduce_sum(a, (col,)), row - (row > col)
    else:
        raise _PlaitValueError(f"norm: invalid norm order {ord!r} for matrices")
    return _lax.reduce_max(s, (keep,)) if ord in (1, _math.inf) else _lax.reduce_min(s, (keep,))


def _singular_value_norm(x, row: int, col: int, ord):
    """ord 2 (largest singular value), -2 (smallest) or 'nuc' (their sum) over
    axes ``(row, col)``; the result keeps the other axes in order."""
    nd = _get_aval(x).ndim
    rest = tuple(d for d in range(nd) if d not in (row, col))
    s = svdvals(_lax.transpose(x, rest + (row, col)))
    last = (_get_aval(s).ndim - 1,)
    if ord == 2:
        return _lax.reduce_max(s, last)
    if ord == -2:
        return _lax.reduce_min(s, last)
    return _lax.reduce_sum(s, last)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """Vector norm over ``axis`` (all axes when None): ord 2, 1, 0, inf, -inf or p."""
    x = _inexact(x, "vector_norm")
    shape = _get_aval(x).shape
    axes = _promote.static_axes(axis, len(shape), "vector_norm")
    if isinstance(ord, str):
        raise _PlaitValueError(f"Invalid norm order '{ord}' for vectors")
    return _keep(_vector(x, axes, ord), shape, axes, keepdims)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """Matrix norm over the last two axes: 'fro', 1, -1, inf, -inf."""
    x = _inexact(x, "matrix_norm")
    shape = _get_aval(x).shape
    if len(shape) < 2:
        raise _PlaitValueError("matrix_norm: input must have at least 2 dimensions")
    nd = len(shape)
    return _keep(_matrix(x, nd - 2, nd - 1, ord), shape, (nd - 2, nd - 1), keepdims)


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """``numpy.linalg.norm``: vector norms over one axis, matrix norms over two."""
    x = _inexact(x, "norm")
    shape = _get_aval(x).shape
    nd = len(shape)
    if axis is None:
        if ord is None:
            return _keep(_vector(x, tuple(range(nd)), 2), shape, tuple(range(nd)), keepdims)
        if nd not in (1, 2):
            raise _PlaitValueError("Improper number of dimensions to norm.")
        axis = tuple(range(nd))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(_promote.normalize_axis(a, nd, "norm") for a in axes)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise _PlaitValueError(f"Invalid norm order '{ord}' for vectors")
        return _keep(_vector(x, axes, ord), shape, axes, keepdims)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise _PlaitValueError("Duplicate axes given.")
        return _keep(_matrix(x, axes[0], axes[1], ord), shape, axes, keepdims)
    raise _PlaitValueError("Improper number of dimensions to norm.")


def trace(x, /, *, offset: int = 0, dtype=None):
    """Sum of the ``offset`` diagonal of the last two axes."""
    return _trace(x, offset, -2, -1, dtype)


def diagonal(x, /, *, offset: int = 0):
    """The ``offset`` diagonal of the last two axes."""
    return _diagonal(x, offset, -2, -1)


def outer(x1, x2, /):
    """Outer product of two 1-D arrays."""
    for v in (x1, x2):
        v = _promote.arg(v, "outer")
        if _promote.is_python_scalar(v) or _get_aval(v).ndim != 1:
            raise _PlaitValueError("linalg.outer: inputs must be 1-dimensional")
    return _outer(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    """``numpy.linalg.tensordot`` (keyword ``axes``)."""
    return _tensordot(x1, x2, axes)


def matrix_power(a, n: int):
    """``a`` (square matrices in the last two axes) raised to the integer power ``n >= 0``."""
    x = _promote.arg(a, "matrix_power")
    shape = _get_aval(x).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise _PlaitValueError("Last 2 dimensions of the array must be square")
    n = _promote.static_int(n, "matrix_power", "n")
    if n < 0:
        x, n = inv(x), -n
    if n == 0:
        nd = len(shape)
        eye = _lax.eq(_lax.broadcasted_iota(_dtypes.int32, shape, nd - 2),
                     _lax.broadcasted_iota(_dtypes.int32, shape, nd - 1))
        return _lax.convert_element_type(eye, _get_aval(x).dtype)
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def multi_dot(arrays, *, out=None):
    """Product of a chain of matrices in the cheapest order (first/last may be 1-D)."""
    if out is not None:
        raise _PlaitValueError("multi_dot: 'out' is not supported")
    arrs = [_promote.arg(a, "multi_dot") for a in arrays]
    if len(arrs) < 2:
        raise _PlaitValueError("Expecting at least two arrays.")
    first_1d = _get_aval(arrs[0]).ndim == 1
    last_1d = _get_aval(arrs[-1]).ndim == 1
    if first_1d:
        arrs[0] = _lax.reshape(arrs[0], (1,) + _get_aval(arrs[0]).shape)
    if last_1d:
        arrs[-1] = _lax.reshape(arrs[-1], _get_aval(arrs[-1]).shape + (1,))
    for a in arrs:
        if _get_aval(a).ndim != 2:
            raise _PlaitValueError(f"{_get_aval(a).ndim}-dimensional array given. Array must be "
                                  f"two-dimensional")
    dims = [_get_aval(arrs[0]).shape[0]] + [_get_aval(a).shape[1] for a in arrs]
    k = len(arrs)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = _math.inf
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def build(i, j):
        if i == j:
            return arrs[i]
        return matmul(build(i, split[i][j]), build(split[i][j] + 1, j))

    r = build(0, k - 1)
    if first_1d:
        r = _lax.squeeze(r, (0,))
    if last_1d:
        r = _lax.squeeze(r, (_get_aval(r).ndim - 1,))
    return r


__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "matrix_transpose", "vecdot",
           "tensordot", "outer", "trace", "diagonal", "matrix_power", "multi_dot", "solve",
           "inv", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "eig", "eigvals",
           "svd", "svdvals", "pinv", "matrix_rank", "lstsq", "cond", "tensorsolve",
           "tensorinv", "cross", "LinAlgError", "EighResult", "EigResult", "SVDResult",
           "SlogdetResult", "QRResult"]
