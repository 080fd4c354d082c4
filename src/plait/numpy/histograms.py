"""Multi-dimensional histograms: histogram2d, histogramdd.

Both run eagerly and under ``jit``: bin counts are static (``bins`` is an int per
dimension or an array of edges), the edges of integer ``bins`` come from ``range``
or from the data's min and max (traced is fine), each sample's bin is found with
``searchsorted`` and the counts are a ``bincount`` of the flattened bin index.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import PlaitTypeError, PlaitValueError
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy import reductions as red
from plait.numpy import shapes as sh
from plait.numpy.creation import linspace
from plait.numpy.sorting import searchsorted, bincount


def _outer_edges(col, rng, i: int):
    if rng is not None:
        lo, hi = rng
        if lo > hi:
            raise PlaitValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise PlaitValueError(f"supplied range of [{lo}, {hi}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        return lo, hi
    if get_aval(col).size == 0:
        return 0, 1
    lo, hi = red.min(col), red.max(col)
    if not isinstance(lo, Tracer):
        if not (np.isfinite(concrete_value(lo)) and np.isfinite(concrete_value(hi))):
            raise PlaitValueError(f"autodetected range of [{concrete_value(lo)}, "
                                  f"{concrete_value(hi)}] is not finite")
    same = uf.equal(lo, hi)
    return uf.where(same, uf.subtract(lo, 0.5), lo), uf.where(same, uf.add(hi, 0.5), hi)


def _sample(sample, name: str):
    if isinstance(sample, (list, tuple)) and not _promote.is_array(sample):
        cols = [_promote.asarray_strong(c, name=name) for c in sample]
        cols = [lax.reshape(c, (get_aval(c).size,)) for c in cols]
        return sh.stack(cols, axis=1) if cols else None
    s = _promote.asarray_strong(sample, name=name)
    if get_aval(s).ndim == 2:
        return s
    return lax.reshape(s, (get_aval(s).size, 1)) if get_aval(s).ndim <= 1 else None


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """``(hist, edges)``: counts (float64) of the ``(N, D)`` samples in a D-dimensional
    grid of bins, and the list of each dimension's bin edges."""
    s = _sample(sample, "histogramdd")
    if s is None:
        raise PlaitValueError("histogramdd: sample must be an (N, D) array or a sequence of "
                              "D 1-D arrays")
    N, D = get_aval(s).shape
    if isinstance(bins, (list, tuple)) or (_promote.is_array(bins) and get_aval(bins).ndim):
        if len(bins) != D:
            raise PlaitValueError("The dimension of bins must be equal to the dimension of "
                                  "the sample x.")
        bins = list(bins)
    else:
        bins = [bins] * D
    if range is None:
        range = (None,) * D
    elif len(range) != D:
        raise PlaitValueError("range argument must have one entry per dimension")
    edges, index, nbin = [], None, []
    for i in builtins.range(D):
        col = s[:, i]
        b = bins[i]
        if np.ndim(b) == 0 and not (_promote.is_array(b) and get_aval(b).ndim):
            if isinstance(b, Tracer):
                raise PlaitTypeError(f"`bins[{i}]` must be a static int under jit")
            try:
                n = operator.index(b)
            except TypeError:
                raise PlaitTypeError(f"`bins[{i}]` must be an integer, when a scalar") from None
            if n < 1:
                raise PlaitValueError(f"`bins[{i}]` must be positive, when an integer")
            lo, hi = _outer_edges(col, range[i], i)
            e = linspace(lo, hi, n + 1)
        else:
            e = _promote.asarray_strong(b, name="histogramdd")
            if get_aval(e).ndim != 1:
                raise PlaitValueError(f"`bins[{i}]` must be a scalar or 1d array")
            if not isinstance(e, Tracer):
                ev = concrete_value(e)
                if np.any(ev[:-1] > ev[1:]):
                    raise PlaitValueError(f"`bins[{i}]` must be monotonically increasing, "
                                          f"when an array")
        edges.append(e)
        m = get_aval(e).shape[0]
        nbin.append(m + 1)
        k = searchsorted(e, col, side="right")
        k = uf.where(uf.equal(col, e[m - 1]), uf.subtract(k, 1), k)
        index = k if index is None else uf.add(uf.multiply(index, m + 1), k)
    total = int(np.prod(nbin))
    if index is None:
        index = _promote.wrap(np.zeros((0,), np.int64))
    w = None if weights is None else _promote.asarray_strong(weights, name="histogramdd")
    hist = bincount(_promote.cast(index, dtypes.int64), w, length=total)
    hist = _promote.cast(lax.reshape(hist, tuple(nbin)), dtypes.float64)
    hist = lax.slice(hist, (1,) * D, tuple(n - 1 for n in nbin))
    if density:
        ssum = red.sum(hist)
        for i, e in enumerate(edges):
            shape = [1] * D
            shape[i] = nbin[i] - 2
            hist = uf.divide(hist, lax.reshape(sh.diff(e), tuple(shape)))
        hist = uf.divide(hist, ssum)
    return hist, edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """``(hist, xedges, yedges)``: the 2-D histogram of the samples ``(x, y)``."""
    xv = _promote.asarray_strong(x, name="histogram2d")
    yv = _promote.asarray_strong(y, name="histogram2d")
    if get_aval(xv).shape != get_aval(yv).shape or get_aval(xv).ndim != 1:
        raise PlaitValueError("histogram2d: x and y must be 1-D arrays of the same length")
    n = 1 if not isinstance(bins, (list, tuple)) and not (
        _promote.is_array(bins) or isinstance(bins, np.ndarray)) else len(bins)
    if n != 1 and n != 2:
        bins = [bins, bins]   # one array of edges for both dimensions
    hist, edges = histogramdd([xv, yv], bins, range, density, weights)
    return hist, edges[0], edges[1]


__all__ = ["histogramdd", "histogram2d"]
