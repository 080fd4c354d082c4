"""The lazy interpreter: ``LazyTrace`` records primitives applied to lazy arrays.

Its ``MainTrace`` (level 0.5) is permanent and never pushed on the trace stack:
``bind`` sends a primitive to the highest-level trace among its arguments, so any
primitive touching a lazy array (and no tracer of an active transformation) comes
here, while ``jit``/``grad``/``vmap`` (levels >= 1) lift lazy arrays like any
lower-level value.
"""
from __future__ import annotations

import numpy as np

from plait.core.trace import MainTrace, Trace
from plait.lax.shape_ops import broadcast_in_dim_p
from plait.lazy import modes
from plait.lazy.autodiff import record_vjp
from plait.errors import user_site
from plait.lazy.array import Const, LazyArray, Node, concrete, const_of, symbolic


class LazyTrace(Trace):
    """Records each primitive as a :class:`Node` (or runs it at once in eager mode)."""

    def pure(self, val) -> LazyArray:
        c = const_of(val)
        if c.value.ndim and c.value.size > 1 and not modes.is_eager():
            b = _uniform_broadcast(c)
            if b is not None:
                return b
        return LazyArray(c, c.aval)

    lift = pure

    def process_primitive(self, prim, tracers, params):
        if modes.is_eager() or prim.effectful:   # effects (debug prints) run when reached
            return _run_eagerly(prim, tracers, params)
        avals = [t._aval for t in tracers]
        out = prim.rule("abstract_eval")(*avals, **params)
        out_avals = list(out) if prim.multiple_results else [out]
        node = Node(prim, params, [t._ref for t in tracers], out_avals, user_site())
        return [symbolic(node, i) for i in range(len(out_avals))]

    def process_vjp(self, flat_fun, primals, description):
        return record_vjp(self, flat_fun, primals, description)


def _uniform_broadcast(c: Const):
    """An array holding one repeated value (a broadcast scalar such as ``lr`` in
    ``lr * g``, made eagerly before it met a lazy array) is recorded as
    ``broadcast_in_dim`` of that scalar, so the scalar can be a literal or an argument
    instead of a full-size buffer. Values are compared bit for bit."""
    v = c.value
    if not any(v.strides):                  # a broadcast view of one element
        s = Const(np.array(v.flat[0]), c.aval.weak_type, False)
        return _broadcast_node(s, c)
    flat = v.reshape(-1)
    n = flat.size
    if flat[0] != flat[n - 1] or flat[0] != flat[n // 2]:       # cheap early reject
        return None
    size = flat.dtype.itemsize
    if size in _UINT:
        bits = flat.view(_UINT[size])
    else:
        bits = np.ascontiguousarray(flat).view(np.uint8).reshape(n, size)
    if not (bits == bits[0]).all():
        return None
    return _broadcast_node(Const(flat[:1].reshape(()), c.aval.weak_type, False), c)


def _broadcast_node(s: Const, c: Const):
    """``broadcast_in_dim`` of the 0-d ``s`` to ``c``'s shape, recorded."""
    params = dict(shape=c.value.shape, broadcast_dimensions=())
    node = Node(broadcast_in_dim_p, params, [s], [c.aval], user_site())
    return symbolic(node, 0)


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _run_eagerly(prim, tracers, params):
    vals = [t._numpy() for t in tracers]
    out = prim.rule("abstract_eval")(*[t._aval for t in tracers], **params)
    out_avals = list(out) if prim.multiple_results else [out]
    res = prim.rule("impl")(*vals, **params)
    res = list(res) if prim.multiple_results else [res]
    return [concrete(r if type(r) is np.ndarray else np.asarray(r), a.weak_type, True)
            for r, a in zip(res, out_avals)]


LAZY_MAIN = MainTrace(0.5, LazyTrace, description="lazy evaluation")
LAZY_TRACE = LazyTrace(LAZY_MAIN)
LazyArray._trace = LAZY_TRACE
