"""The vector cross product ``cross`` (vectors of 2 or 3 components, broadcast)."""
from __future__ import annotations

import numpy as np

from plait.core.trace import get_aval
from plait.errors import PlaitValueError
from plait.numpy import _promote
from plait.numpy import ufuncs as uf
from plait.numpy import shapes as sh


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """Cross product of the vectors along ``axisa`` of ``a`` and ``axisb`` of ``b``
    (2-component vectors have an implicit zero third component; two of them give the
    scalar z component)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x = _promote.asarray_strong(a, name="cross")
    y = _promote.asarray_strong(b, name="cross")
    if get_aval(x).ndim < 1 or get_aval(y).ndim < 1:
        raise PlaitValueError("At least one array has zero dimension")
    x = sh.moveaxis(x, _promote.normalize_axis(axisa, get_aval(x).ndim, "cross"), -1)
    y = sh.moveaxis(y, _promote.normalize_axis(axisb, get_aval(y).ndim, "cross"), -1)
    na, nb = get_aval(x).shape[-1], get_aval(y).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise PlaitValueError("incompatible dimensions for cross product\n"
                              "(dimension must be 2 or 3)")
    dt = np.promote_types(get_aval(x).dtype, get_aval(y).dtype)
    x, y = _promote.cast(x, dt), _promote.cast(y, dt)
    a0, a1 = x[..., 0], x[..., 1]
    b0, b1 = y[..., 0], y[..., 1]
    z = uf.subtract(uf.multiply(a0, b1), uf.multiply(a1, b0))
    if na == 2 and nb == 2:
        return _promote.cast(z, dt)
    a2 = x[..., 2] if na == 3 else None
    b2 = y[..., 2] if nb == 3 else None
    if a2 is None:
        cx, cy = uf.multiply(a1, b2), uf.negative(uf.multiply(a0, b2))
    elif b2 is None:
        cx, cy = uf.negative(uf.multiply(a2, b1)), uf.multiply(a2, b0)
    else:
        cx = uf.subtract(uf.multiply(a1, b2), uf.multiply(a2, b1))
        cy = uf.subtract(uf.multiply(a2, b0), uf.multiply(a0, b2))
    shape = _promote.broadcast_shapes(get_aval(cx).shape, get_aval(cy).shape,
                                      get_aval(z).shape)
    out = sh.stack([_promote.cast(_promote.broadcast_to_shape(c, shape), dt)
                    for c in (cx, cy, z)], axis=-1)
    return sh.moveaxis(out, -1, _promote.normalize_axis(axisc, len(shape) + 1, "cross"))


__all__ = ["cross"]
