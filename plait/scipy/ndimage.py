"""``plait.scipy.ndimage.map_coordinates``: interpolation of an N-d array at given
coordinates, order 0 (nearest) or 1 (linear), as ``jax.scipy.ndimage``."""
from __future__ import annotations

import itertools

import plait.numpy as pnp
from plait.errors import PlaitValueError

__all__ = ["map_coordinates"]

_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")
# as JAX: 'constant' and 'wrap' are what SciPy calls 'grid-constant' and 'grid-wrap'
_ALIASES = {"grid-constant": "constant", "grid-wrap": "wrap"}


def _remap(i, n: int, mode: str):
    """Integer index ``i`` into ``[0, n)`` under ``mode`` (``constant``: clipped; the
    caller masks)."""
    if mode in ("nearest", "constant"):
        return pnp.clip(i, 0, n - 1)
    if mode == "wrap":
        return pnp.remainder(i, n)
    if mode == "mirror":
        if n == 1:
            return pnp.zeros_like(i)
        period = 2 * (n - 1)
        r = pnp.remainder(i, period)
        return pnp.where(r >= n, period - r, r)
    period = 2 * n      # reflect: the edge sample repeats
    r = pnp.remainder(i, period)
    return pnp.where(r >= n, period - 1 - r, r)


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):
    """Values of ``input`` at ``coordinates`` (a sequence of ``input.ndim`` arrays of
    one shape), by nearest-sample (``order=0``) or multilinear (``order=1``)
    interpolation. ``mode`` extends the array beyond its edges: ``constant`` (``cval``
    for samples outside), ``nearest``, ``wrap`` (period ``n``), ``mirror``, ``reflect``.
    As in JAX, ``constant`` and ``wrap`` are SciPy's ``grid-constant`` and ``grid-wrap``
    (those names are accepted too); SciPy's own ``constant``/``wrap`` differ near edges."""
    x = pnp.asarray(input)
    if order not in (0, 1):
        raise PlaitValueError(f"map_coordinates: order must be 0 or 1, got {order}")
    mode = _ALIASES.get(mode, mode)
    if mode not in _MODES:
        raise PlaitValueError(f"map_coordinates: mode must be one of {_MODES}, got {mode!r}")
    coords = [pnp.asarray(c) for c in coordinates]
    if len(coords) != x.ndim:
        raise PlaitValueError(f"map_coordinates: need {x.ndim} coordinate arrays (one per "
                              f"input dimension), got {len(coords)}")
    shape = pnp.broadcast_shapes(*(c.shape for c in coords))
    ftype = x.dtype if pnp.issubdtype(x.dtype, pnp.floating) else pnp.float64
    per_dim = []           # per dimension: list of (index, weight, valid)
    for c, n in zip(coords, x.shape):
        c = pnp.broadcast_to(c.astype(ftype), shape)
        if order == 0:
            i = pnp.floor(c + 0.5).astype(pnp.int64)   # halves round up, as SciPy
            per_dim.append([(i, None)])
        else:
            lo = pnp.floor(c)
            w = c - lo
            lo = lo.astype(pnp.int64)
            per_dim.append([(lo, 1.0 - w), (lo + 1, w)])
    out = None
    for corner in itertools.product(*per_dim):
        idx, weight, valid = [], None, None
        for (i, w), n in zip(corner, x.shape):
            idx.append(_remap(i, n, mode))
            if mode == "constant":
                ok = (i >= 0) & (i < n)
                valid = ok if valid is None else valid & ok
            if w is not None:
                weight = w if weight is None else weight * w
        v = x[tuple(idx)].astype(ftype)
        if valid is not None:
            v = pnp.where(valid, v, cval)
        term = v if weight is None else v * weight
        out = term if out is None else out + term
    if not pnp.issubdtype(x.dtype, pnp.floating):
        out = pnp.round(out).astype(x.dtype)
    return out
