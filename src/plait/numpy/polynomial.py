"""The ``poly*`` functions on coefficient arrays (highest power first) and ``vander``.

``polyfit`` solves the column-scaled least-squares problem with a Householder QR
written in plait operations (one unrolled reflection per coefficient) when there
are at least ``deg + 1`` points and neither ``rcond``, ``full`` nor ``cov`` is
given; otherwise (and for the minimum-norm under-determined fit) it uses
``plait.numpy.linalg.lstsq`` (an SVD), as NumPy does. ``roots`` is the eigenvalues
of the companion matrix and ``poly`` of a square matrix the characteristic
polynomial of its eigenvalues (``plait.numpy.linalg.eigvals``).

Value-dependent results: NumPy's ``polymul`` drops leading zero coefficients of its
inputs, its ``polydiv`` strips leading near-zero remainder
coefficients and ``poly`` returns a real array when complex roots come in
conjugate pairs. Eagerly all three behave as in NumPy; under ``jit`` ``polydiv``
returns the remainder with ``len(v) - 1`` coefficients (leading ones may be
zero), ``polymul`` keeps leading zeros (the product has them too) and ``poly``
keeps complex input complex. ``roots`` strips leading and trailing zero
coefficients and returns a real array when every root is real only eagerly; under
``jit`` the coefficients are used as given (the leading one must be nonzero) and
the roots are complex.
"""
from __future__ import annotations

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy import reductions as red
from plait.numpy import shapes as sh
from plait.numpy.signal import convolve
from plait.numpy import _linalg_decomp as _la
from plait.numpy.linalg_ops import matmul


def _coeffs(p, name: str):
    x = _promote.asarray_strong(p, name=name)
    if get_aval(x).ndim == 0:
        x = lax.reshape(x, (1,))
    if get_aval(x).ndim != 1:
        raise PlaitValueError(f"{name}: coefficients must be a 1-D sequence")
    return x


def vander(x, N: int | None = None, increasing: bool = False):
    """Columns are powers of the 1-D ``x`` (``x**(N-1), ..., x, 1`` unless ``increasing``)."""
    xv = _promote.asarray_strong(x, name="vander")
    if get_aval(xv).ndim != 1:
        raise PlaitValueError("x must be a one-dimensional array or sequence.")
    n = get_aval(xv).shape[0]
    N = n if N is None else _promote.static_int(N, "vander", "N")
    if N < 0:
        raise PlaitValueError("negative dimensions are not allowed")
    dt = np.promote_types(get_aval(xv).dtype, dtypes.int64)
    xv = _promote.cast(xv, dt)
    if N == 0:
        return _promote.wrap(np.zeros((n, 0), dt))
    ones = _promote.broadcast_to_shape(_promote.cast(1, dt), (n, 1))
    cols = lax.broadcast_in_dim(xv, (n, N - 1), (0,))
    powers = lax.cumprod(lax.concatenate([ones, cols], 1), 1)
    return powers if increasing else lax.rev(powers, (1,))


def polyval(p, x):
    """Value of the polynomial ``p`` at ``x`` (Horner's scheme, NumPy's dtype rules)."""
    pv = _coeffs(p, "polyval")
    xv = _promote.asarray_strong(x, name="polyval")
    y = _promote.cast(uf.multiply(xv, 0), get_aval(xv).dtype)   # NumPy: zeros_like(x)
    for k in range(get_aval(pv).shape[0]):
        y = uf.add(uf.multiply(y, xv), pv[k])
    return y


def _pad_front(a, n: int):
    m = get_aval(a).shape[0]
    return a if m >= n else lax.pad(a, _promote.cast(0, get_aval(a).dtype), [(n - m, 0, 0)])


def polyadd(a1, a2):
    """Sum of two polynomials."""
    a, b = _coeffs(a1, "polyadd"), _coeffs(a2, "polyadd")
    n = max(get_aval(a).shape[0], get_aval(b).shape[0])
    return uf.add(_pad_front(a, n), _pad_front(b, n))


def polysub(a1, a2):
    """Difference of two polynomials."""
    a, b = _coeffs(a1, "polysub"), _coeffs(a2, "polysub")
    n = max(get_aval(a).shape[0], get_aval(b).shape[0])
    return uf.subtract(_pad_front(a, n), _pad_front(b, n))


def _strip_leading_zeros(p):
    """NumPy's ``poly1d`` view of coefficients: leading zeros dropped (eagerly; under jit
    the coefficients are kept as given, see the module docstring)."""
    if isinstance(p, Tracer):
        return p
    v = concrete_value(p)
    nz = np.nonzero(v)[0]
    start = int(nz[0]) if nz.size else max(v.shape[0] - 1, 0)
    return lax.slice(p, (start,), (v.shape[0],)) if v.shape[0] else p


def polymul(a1, a2):
    """Product of two polynomials (leading zero coefficients dropped, as NumPy does)."""
    return convolve(_strip_leading_zeros(_coeffs(a1, "polymul")),
                    _strip_leading_zeros(_coeffs(a2, "polymul")))


def polyder(p, m: int = 1):
    """The ``m``-th derivative of ``p``."""
    m = _promote.static_int(m, "polyder", "m")
    if m < 0:
        raise PlaitValueError("Order of derivative must be positive (see polyint)")
    y = _promote.asarray_strong(p, name="polyder")
    for _ in range(m):
        n = get_aval(y).shape[0] - 1
        y = uf.multiply(lax.slice(y, (0,), (max(n, 0),)),
                        _promote.wrap(np.arange(n, 0, -1)))
    return y


def polyint(p, m: int = 1, k=None):
    """The ``m``-th antiderivative of ``p`` with integration constants ``k``."""
    m = _promote.static_int(m, "polyint", "m")
    if m < 0:
        raise PlaitValueError("Order of integral must be positive (see polyder)")
    if k is None:
        ks = [0.0] * m
    else:
        kv = _promote.asarray_strong(k, name="polyint")
        kv = lax.reshape(kv, (get_aval(kv).size,))
        nk = get_aval(kv).shape[0]
        if nk == 1 and m > 1:
            ks = [uf.multiply(kv[0], 1.0)] * m
        elif nk < m:
            raise PlaitValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
        else:
            ks = [kv[i] for i in range(m)]
    y = _promote.asarray_strong(p, name="polyint")
    for i in range(m):
        n = get_aval(y).shape[0]
        q = uf.true_divide(y, _promote.wrap(np.arange(n, 0, -1)))
        c = _promote.asarray_strong(ks[i], dtypes.float64) if _promote.is_python_scalar(ks[i]) \
            else ks[i]
        y = sh.concatenate([q, lax.reshape(_promote.asarray_strong(c), (1,))])
    return y


def polydiv(u, v):
    """Quotient and remainder of polynomial division ``u / v``."""
    uv = uf.add(_coeffs(u, "polydiv"), 0.0)
    vv = uf.add(_coeffs(v, "polydiv"), 0.0)
    dt = get_aval(uf.add(uv[0], vv[0])).dtype
    uv, vv = _promote.cast(uv, dt), _promote.cast(vv, dt)
    m, n = get_aval(uv).shape[0] - 1, get_aval(vv).shape[0] - 1
    scale = uf.true_divide(1.0, vv[0])
    r = [uv[i] for i in range(m + 1)]
    q = []
    for k in range(0, m - n + 1):
        d = uf.multiply(scale, r[k])
        q.append(d)
        for j in range(n + 1):
            r[k + j] = uf.subtract(r[k + j], uf.multiply(d, vv[j]))
    quot = sh.stack(q) if q else _promote.wrap(np.zeros((1,), dt))
    full = sh.stack(r)
    if isinstance(full, Tracer):   # the structural zeros only (see the module docstring)
        start = min(max(m - n + 1, 0), m)
    else:                          # NumPy: strip every leading near-zero coefficient
        vals, start = concrete_value(full), 0
        while start < m and np.allclose(vals[start], 0, rtol=1e-14):
            start += 1
    return quot, lax.slice(full, (start,), (m + 1,))


def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with the given roots (1-D input)."""
    z = _promote.asarray_strong(seq_of_zeros, name="poly")
    shape = get_aval(z).shape
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        z = _la.eigvals(z)
        shape = get_aval(z).shape
    if len(shape) == 0:
        z = lax.reshape(z, (1,))
    elif len(shape) != 1:
        raise PlaitValueError("input must be 1d or non-empty square 2d array.")
    if get_aval(z).shape[0] == 0:
        return 1.0
    dt = get_aval(z).dtype
    work = dt if dt in (dtypes.float32, dtypes.float64, dtypes.complex64,
                        dtypes.complex128) else dtypes.float64
    z = _promote.cast(z, work)
    a = _promote.wrap(np.ones((1,), work))
    one = _promote.wrap(np.ones((1,), work))
    for i in range(get_aval(z).shape[0]):
        a = convolve(a, lax.concatenate([one, lax.reshape(lax.neg(z[i]), (1,))], 0))
    if dtypes.is_complex(work) and not isinstance(a, Tracer):
        roots = np.asarray(concrete_value(z), complex)
        if np.all(np.sort(roots) == np.sort(roots.conjugate())):
            a = lax.real(a)
    return a


def roots(p):
    """Roots of the polynomial with coefficients ``p`` (highest power first): the
    eigenvalues of its companion matrix, plus one zero root per trailing zero."""
    pv = _promote.asarray_strong(p, name="roots")
    if get_aval(pv).ndim != 1:
        raise PlaitValueError("Input must be a rank-1 array.")
    dt = get_aval(pv).dtype
    if not dtypes.is_inexact(dt) or dt == dtypes.float16:
        pv = _promote.cast(pv, dtypes.float64)
    eager = not isinstance(pv, Tracer)
    n_zero_roots = 0
    if eager:
        vals = np.asarray(concrete_value(pv))
        nz = np.flatnonzero(vals)
        if nz.size == 0:
            return _promote.wrap(np.zeros((0,), vals.dtype))
        n_zero_roots = len(vals) - 1 - int(nz[-1])
        pv = lax.slice(pv, (int(nz[0]),), (int(nz[-1]) + 1,))
    N = get_aval(pv).shape[0]
    work = get_aval(pv).dtype
    if N > 1:
        row = uf.true_divide(uf.negative(pv[1:]), pv[0])
        below = _promote.cast(_promote.wrap(np.eye(N - 1, k=-1)[1:]), work)
        A = lax.concatenate([lax.reshape(row, (1, N - 1)), below], 0)
        r = _la.eigvals(A)
    else:
        r = _promote.wrap(np.zeros((0,), np.result_type(work, np.complex64)))
    if eager:
        rv = np.asarray(concrete_value(r))
        if np.all(rv.imag == 0):
            r = lax.real(r)
        if n_zero_roots:
            zdt = get_aval(r).dtype
            r = lax.concatenate([r, _promote.wrap(np.zeros((n_zero_roots,), zdt))], 0)
    return r


def _householder_lstsq(A, b):
    """Least-squares solution of ``A c = b`` (``A``: m x k with m >= k, full rank;
    ``b``: m x r) by Householder QR and back substitution, unrolled over the k columns."""
    m, k = get_aval(A).shape
    rows = lax.iota(dtypes.int64, m)
    for j in range(k):
        col = A[:, j]
        below = uf.greater_equal(rows, j)
        x = uf.where(below, col, 0.0)
        x0 = col[j]
        norm = uf.sqrt(red.sum(uf.multiply(x, x)))
        alpha = uf.multiply(uf.where(uf.greater_equal(x0, 0), -1.0, 1.0), norm)
        v = uf.subtract(x, uf.where(uf.equal(rows, j), alpha, 0.0))
        vnorm2 = red.sum(uf.multiply(v, v))
        safe = uf.where(uf.equal(vnorm2, 0), 1.0, vnorm2)
        beta = uf.where(uf.equal(vnorm2, 0), 0.0, uf.true_divide(2.0, safe))
        A = uf.subtract(A, uf.multiply(beta, uf.multiply(v[:, None], red.sum(
            uf.multiply(v[:, None], A), axis=0)[None, :])))
        b = uf.subtract(b, uf.multiply(beta, uf.multiply(v[:, None], red.sum(
            uf.multiply(v[:, None], b), axis=0)[None, :])))
    sol = [None] * k
    for i in range(k - 1, -1, -1):
        acc = b[i]
        for j in range(i + 1, k):
            acc = uf.subtract(acc, uf.multiply(A[i, j], sol[j]))
        sol[i] = uf.true_divide(acc, A[i, i])
    return sh.stack(sol)


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov: bool = False):
    """Least-squares polynomial fit of degree ``deg`` (coefficients highest power first;
    one column per column of a 2-D ``y``)."""
    deg = _promote.static_int(deg, "polyfit", "deg")
    if deg < 0:
        raise PlaitValueError("expected deg >= 0")
    xv = uf.add(_promote.asarray_strong(x, name="polyfit"), 0.0)
    yv = uf.add(_promote.asarray_strong(y, name="polyfit"), 0.0)
    if get_aval(xv).ndim != 1:
        raise PlaitTypeError("expected 1D vector for x")
    if get_aval(xv).shape[0] == 0:
        raise PlaitTypeError("expected non-empty vector for x")
    if get_aval(yv).ndim < 1 or get_aval(yv).ndim > 2:
        raise PlaitTypeError("expected 1D or 2D array for y")
    if get_aval(xv).shape[0] != get_aval(yv).shape[0]:
        raise PlaitTypeError("expected x and y to have same length")
    n = get_aval(xv).shape[0]
    lhs = vander(xv, deg + 1)
    rhs = yv
    if w is not None:
        wv = uf.add(_promote.asarray_strong(w, name="polyfit"), 0.0)
        if get_aval(wv).shape != (n,):
            raise PlaitTypeError("expected a 1-d array for weights of the same length as x")
        lhs = uf.multiply(lhs, wv[:, None])
        rhs = uf.multiply(rhs, wv if get_aval(rhs).ndim == 1 else wv[:, None])
    scale = uf.sqrt(red.sum(uf.multiply(lhs, lhs), axis=0))
    scale = uf.where(uf.equal(scale, 0), 1.0, scale)
    lhs = uf.true_divide(lhs, scale)
    one_col = get_aval(rhs).ndim == 1
    if not (full or cov or rcond is not None or n < deg + 1):
        c = _householder_lstsq(lhs, rhs[:, None] if one_col else rhs)
        c = uf.true_divide(c, scale[:, None])
        return c[:, 0] if one_col else c
    if rcond is None:
        rcond = n * float(np.finfo(get_aval(lhs).dtype).eps)
    c, resids, rank, s = _la.lstsq(lhs, rhs, rcond)
    c = uf.true_divide(c, scale if one_col else scale[:, None])
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    order = deg + 1
    vbase = _la.inv(matmul(sh.matrix_transpose(lhs), lhs))
    vbase = uf.true_divide(vbase, uf.multiply(scale[:, None], scale[None, :]))
    if isinstance(cov, str) and cov == "unscaled":
        fac = 1.0
    else:
        if n <= order:
            raise PlaitValueError("the number of data points must exceed order to scale "
                                  "the covariance matrix")
        fac = uf.true_divide(resids, float(n - order))
    if one_col:
        return c, uf.multiply(vbase, fac)
    return c, uf.multiply(vbase[:, :, None], fac)


__all__ = ["vander", "polyval", "polyadd", "polysub", "polymul", "polyder", "polyint",
           "polydiv", "poly", "roots", "polyfit"]
