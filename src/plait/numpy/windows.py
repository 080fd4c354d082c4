"""Window functions: bartlett, blackman, hamming, hanning, kaiser.

``M`` (the number of points) is static; the results are float64 as in NumPy.
``kaiser``'s ``beta`` may be a traced value (the window is differentiable in it).
"""
from __future__ import annotations

import math

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy.mathfuncs import i0


def _points(M, name: str):
    """``(M, n)``: the static length and ``n = 1-M, 3-M, ..., M-1`` (float64), or
    ``(M, None)`` when the window is empty or a single 1."""
    M = _promote.static_int(M, name, "M") if not isinstance(M, float) else int(M)
    if M < 1:
        return M, _promote.wrap(np.zeros((0,), np.float64))
    if M == 1:
        return M, _promote.wrap(np.ones((1,), np.float64))
    n = uf.add(uf.multiply(lax.iota(dtypes.float64, M), 2.0), float(1 - M))
    return M, n


def _cosine_window(M, name: str, terms):
    M, n = _points(M, name)
    if M <= 1:
        return n
    out = None
    for k, c in enumerate(terms):
        t = uf.multiply(c, uf.cos(uf.multiply(n, k * math.pi / (M - 1)))) if k else \
            uf.multiply(uf.add(uf.multiply(n, 0.0), 1.0), c)
        out = t if out is None else uf.add(out, t)
    return out


def bartlett(M):
    """The triangular (Bartlett) window of ``M`` points."""
    M, n = _points(M, "bartlett")
    if M <= 1:
        return n
    return uf.where(uf.less_equal(n, 0), uf.add(1.0, uf.divide(n, M - 1)),
                    uf.subtract(1.0, uf.divide(n, M - 1)))


def blackman(M):
    """The Blackman window of ``M`` points."""
    return _cosine_window(M, "blackman", (0.42, 0.5, 0.08))


def hamming(M):
    """The Hamming window of ``M`` points."""
    return _cosine_window(M, "hamming", (0.54, 0.46))


def hanning(M):
    """The Hann window of ``M`` points."""
    return _cosine_window(M, "hanning", (0.5, 0.5))


def kaiser(M, beta):
    """The Kaiser window of ``M`` points with shape parameter ``beta``."""
    M = _promote.static_int(M, "kaiser", "M") if not isinstance(M, float) else int(M)
    b = _promote.cast(_promote.asarray_strong(beta, name="kaiser"), dtypes.float64)
    if M == 1:
        return _promote.wrap(np.ones((1,), np.float64))
    if M < 1:
        return _promote.wrap(np.zeros((0,), np.float64))
    alpha = (M - 1) / 2.0
    r = uf.divide(uf.subtract(lax.iota(dtypes.float64, M), alpha), alpha)
    arg = uf.multiply(b, uf.sqrt(uf.maximum(uf.subtract(1.0, uf.multiply(r, r)), 0.0)))
    return uf.divide(i0(arg), i0(b))


__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]
