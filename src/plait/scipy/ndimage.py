"""``plait.scipy.ndimage.map_coordinates``: interpolation of an N-d array at given
coordinates, order 0 (nearest) or 1 (linear), as ``jax.scipy.ndimage``."""

import itertools as _itertools

import plait.numpy as _pnp
from plait.errors import PlaitValueError as _PlaitValueError

__all__ = ["map_coordinates"]

_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")
# as JAX: 'constant' and 'wrap' are what SciPy calls 'grid-constant' and 'grid-wrap'
_ALIASES = {"grid-constant": "constant", "grid-wrap": "wrap"}


def _remap(i, n: int, mode: str):
    """Integer index ``i`` into ``[0, n)`` under ``mode`` (``constant``: clipped; the
    caller masks)."""
    if mode in ("nearest", "constant"):
        return _pnp.clip(i, 0, n - 1)
    if mode == "wrap":
        return _pnp.remainder(i, n)
    if mode == "mirror":
        if n == 1:
            return _pnp.zeros_like(i)
        period = 2 * (n - 1)
        r = _pnp.remainder(i, period)
        return _pnp.where(r >= n, period - r, r)
    period = 2 * n      # reflect: the edge sample repeats
    r = _pnp.remainder(i, period)
    return _pnp.where(r >= n, period - 1 - r, r)


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):
    """Values of ``input`` at ``coordinates`` (a sequence of ``input.ndim`` arrays of
    one shape), by nearest-sample (``order=0``) or multilinear (``order=1``)
    interpolation. ``mode`` extends the array beyond its edges: ``constant`` (``cval``
    for samples outside), ``nearest``, ``wrap`` (period ``n``), ``mirror``, ``reflect``.
    As in JAX, ``constant`` and ``wrap`` are SciPy's ``grid-constant`` and ``grid-wrap``
    (those names are accepted too); SciPy's own ``constant``/``wrap`` differ near edges."""
    x = _pnp.asarray(input)
    if order not in (0, 1):
        raise _PlaitValueError(f"map_coordinates: order must be 0 or 1, got {order}")
    mode = _ALIASES.get(mode, mode)
    if mode not in _MODES:
        raise _PlaitValueError(f"map_coordinates: mode must be one of {_MODES}, got {mode!r}")
    coords = [_pnp.asarray(c) for c in coordinates]
    if len(coords) != x.ndim:
        raise _PlaitValueError(f"map_coordinates: need {x.ndim} coordinate arrays (one per "
                              f"input dimension), got {len(coords)}")
    shape = _pnp.broadcast_shapes(*(c.shape for c in coords))
    ftype = x.dtype if _pnp.issubdtype(x.dtype, _pnp.floating) else _pnp.float64
    per_dim = []           # per dimension: list of (index, weight, valid)
    for c, n in zip(coords, x.shape):
        c = _pnp.broadcast_to(c.astype(ftype), shape)
        if order == 0:
            i = _pnp.floor(c + 0.5).astype(_pnp.int64)   # halves round up, as SciPy
            per_dim.append([(i, None)])
        else:
            lo = _pnp.floor(c)
            w = c - lo
            lo = lo.astype(_pnp.int64)
            per_dim.append([(lo, 1.0 - w), (lo + 1, w)])
    out = None
    for corner in _itertools.product(*per_dim):
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
            v = _pnp.where(valid, v, cval)
        term = v if weight is None else v * weight
        out = term if out is None else out + term
    if not _pnp.issubdtype(x.dtype, _pnp.floating):
        out = _pnp.round(out).astype(x.dtype)
    return out
