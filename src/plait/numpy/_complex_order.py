"""NumPy's order of complex numbers for ``max``/``min``/``argmax``/``argmin``.

Complex values compare lexicographically (real part first, then imaginary part); a
value with a NaN in either part is a NaN, and the first NaN along the axis wins, as
in NumPy. Built from real ``plait.lax`` reductions and a gather, so it stages under
``jit`` on every backend and the value reductions are differentiable (the gradient
goes to the selected element).
"""
from __future__ import annotations

import math

import numpy as np

from plait import lax
from plait.core import dtypes
from plait.core.trace import get_aval
from plait.numpy._promote import cast


def _bcast(v, shape: tuple, ax: int):
    return lax.broadcast_in_dim(v, shape, tuple(d for d in range(len(shape)) if d != ax))


def arg_extreme(x, ax: int, largest: bool):
    """Index (int64) of the first lexicographic maximum (``largest``) or minimum of the
    complex ``x`` along ``ax``; the index of the first NaN when there is one."""
    shape = get_aval(x).shape
    re, im = lax.real(x), lax.imag(x)
    isnan = lax.bitwise_or(lax.ne(re, re), lax.ne(im, im))
    reduce = lax.reduce_max if largest else lax.reduce_min
    best_re = reduce(re, (ax,))
    on_best_re = lax.eq(re, _bcast(best_re, shape, ax))
    fill = lax.broadcast_in_dim(cast(-math.inf if largest else math.inf, get_aval(im).dtype),
                                shape, ())
    best_im = reduce(lax.select(on_best_re, im, fill), (ax,))
    hit = lax.bitwise_and(on_best_re, lax.eq(im, _bcast(best_im, shape, ax)))
    first_hit = lax.argmax(lax.convert_element_type(hit, dtypes.int8), ax)
    first_nan = lax.argmax(lax.convert_element_type(isnan, dtypes.int8), ax)
    return lax.select(lax.reduce_or(isnan, (ax,)), first_nan, first_hit)


def extreme(x, axes: tuple, largest: bool, initial=None):
    """The lexicographic max (``largest``) or min of the complex ``x`` over ``axes``;
    ``initial`` (a scalar of ``x``'s dtype) takes part as if it came first."""
    shape = get_aval(x).shape
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    kept_shape = tuple(shape[d] for d in kept)
    n = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    flat = lax.reshape(lax.transpose(x, kept + tuple(axes)), kept_shape + (n,))
    last = len(kept_shape)
    if initial is not None:
        init = lax.broadcast_in_dim(initial, kept_shape + (1,), ())
        flat = lax.concatenate([init, flat], last)
    idx = arg_extreme(flat, last, largest)
    from plait.numpy.indexing import take_along_axis
    picked = take_along_axis(flat, lax.reshape(idx, kept_shape + (1,)), last)
    return lax.reshape(picked, kept_shape)


__all__ = ["arg_extreme", "extreme"]
