"""Covariance and correlation matrices: cov, corrcoef (NumPy's algorithm, in plait ops).

Frequency and analytic weights may be traced; a non-positive number of degrees of
freedom gives inf/nan entries (NumPy also warns).
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
from plait.numpy.linalg_ops import dot
from plait.numpy.indexing import diagonal


def _rows(x, dt, rowvar: bool, name: str):
    x = _promote.cast(_promote.asarray_strong(x, name=name), dt)
    s = get_aval(x).shape
    if len(s) > 2:
        raise PlaitValueError("m has more than 2 dimensions")
    if len(s) < 2:
        x = lax.reshape(x, (1,) * (2 - len(s)) + s)
    if not rowvar and get_aval(x).shape[0] != 1:
        x = lax.transpose(x, (1, 0))
    return x


def _weights(w, n: int, name: str, integral: bool):
    w = _promote.asarray_strong(w, name=name)
    if get_aval(w).ndim > 1:
        raise PlaitValueError(f"cannot handle multidimensional {name}")
    if get_aval(w).shape[0] != n:
        raise PlaitValueError(f"incompatible numbers of samples and {name}")
    if integral and not dtypes.is_integer(get_aval(w).dtype) \
            and not dtypes.is_bool(get_aval(w).dtype):
        if not isinstance(w, Tracer) and not np.all(concrete_value(w) == np.around(
                concrete_value(w))):
            raise PlaitTypeError("fweights must be integer")
    return _promote.cast(w, dtypes.float64)


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None,
        aweights=None, *, dtype=None):
    """Covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``."""
    mv = _promote.asarray_strong(m, name="cov")
    kinds = [get_aval(mv).dtype, np.float64]
    if y is not None:
        y = _promote.asarray_strong(y, name="cov")
        kinds.append(get_aval(y).dtype)
    dt = dtypes.canonical_dtype(np.result_type(*kinds) if dtype is None else dtype)
    X = _rows(mv, dt, rowvar, "cov")
    if get_aval(X).shape[0] == 0:
        return _promote.wrap(np.zeros((0, 0), dt))
    if y is not None:
        X = sh.concatenate([X, _rows(y, dt, rowvar, "cov")], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = get_aval(X).shape[1]
    w = None
    if fweights is not None:
        w = _weights(fweights, n, "fweights", True)
    if aweights is not None:
        aw = _weights(aweights, n, "aweights", False)
        w = aw if w is None else uf.multiply(w, aw)
    if w is None:
        avg = red.mean(X, axis=1)
        fact = float(n - ddof)
    else:
        w_sum = red.sum(w)
        avg = uf.divide(red.sum(uf.multiply(X, w), axis=1), w_sum)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = uf.subtract(w_sum, ddof)
        else:
            fact = uf.subtract(w_sum, uf.divide(uf.multiply(ddof, red.sum(uf.multiply(w, aw))),
                                                w_sum))
    fact = uf.where(uf.less_equal(fact, 0), 0.0, fact)
    Xc = uf.subtract(X, _promote.cast(avg, dt)[:, None])
    Xt = lax.transpose(Xc if w is None else uf.multiply(Xc, w), (1, 0))
    c = dot(Xc, uf.conjugate(Xt))
    c = _promote.cast(uf.multiply(c, uf.true_divide(1, fact)), get_aval(c).dtype)
    return sh.squeeze(c)


def corrcoef(x, y=None, rowvar: bool = True, *, dtype=None):
    """Pearson correlation coefficients (``cov`` normalised, clipped to [-1, 1])."""
    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).ndim == 0:
        return uf.divide(c, c)
    d = diagonal(c)
    std = uf.sqrt(uf.real(d))
    c = uf.divide(uf.divide(c, std[:, None]), std[None, :])
    if dtypes.is_complex(get_aval(c).dtype):
        return lax.complex(uf.clip(uf.real(c), -1, 1), uf.clip(uf.imag(c), -1, 1))
    return uf.clip(c, -1, 1)


__all__ = ["cov", "corrcoef"]
