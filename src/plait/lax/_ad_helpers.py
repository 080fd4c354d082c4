"""Registrars and small helpers for the autodiff rules written next to each primitive.

The rule interfaces are fixed (see ``plait/transforms/RULES.md``):

- ``jvp``: ``rule(primals, tangents, **params) -> (primal_out, tangent_out)``; a tangent
  may be the symbolic :class:`~plait.core.ad_util.Zero`.
- ``transpose``: ``rule(cotangent_out, *invals, **params) -> list`` with one entry per
  input (a cotangent, ``Zero`` or ``None``); linear inputs arrive as
  :class:`~plait.core.ad_util.UndefinedPrimal`.

Everything here is written with ``plait.lax`` operations so that rules are themselves
differentiable and stage under ``jit``. ``plait.lax`` must not import
``plait.transforms``; the interpreters that *use* these rules live there.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from plait.core import dtypes
from plait.core.ad_util import Zero, UndefinedPrimal, is_undefined_primal
from plait.core.aval import ShapedArray
from plait.core.primitive import Primitive
from plait.core.trace import get_aval, wrap_array

__all__ = ["Zero", "UndefinedPrimal", "is_undefined_primal", "is_zero", "tangent_aval",
           "differentiable", "zeros", "full", "instantiate", "add_tangents", "defjvp",
           "defjvp_zero", "deflinear", "aval_of_operand"]


def is_zero(t) -> bool:
    """True for a symbolic zero tangent/cotangent."""
    return isinstance(t, Zero)


def differentiable(aval: ShapedArray) -> bool:
    """Only floating and complex values carry nonzero tangents."""
    return dtypes.is_inexact(aval.dtype)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The abstract value of a tangent of a value of ``aval`` (never weak)."""
    return aval.strip_weak()


def aval_of_operand(x) -> ShapedArray:
    """Abstract value of a rule input: an UndefinedPrimal, a Zero or an array."""
    if isinstance(x, (UndefinedPrimal, Zero)):
        return x.aval
    return get_aval(x)


def full(shape, value, dtype, weak_type: bool = False):
    """An array of ``shape`` filled with ``value`` (a broadcast scalar when traced)."""
    from plait.lax.shape_ops import broadcast_in_dim
    scalar = wrap_array(np.asarray(value, dtype=dtype), weak_type)
    return broadcast_in_dim(scalar, tuple(shape), ())


def zeros(aval: ShapedArray):
    """Zeros of ``aval``'s shape and dtype."""
    return full(aval.shape, 0, aval.dtype)


def instantiate(t):
    """A concrete (possibly traced) array for a tangent that may be a symbolic Zero."""
    return zeros(t.aval) if isinstance(t, Zero) else t


def add_tangents(a, b):
    """``a + b`` where either may be a symbolic Zero (or None, meaning 'nothing yet')."""
    if a is None or isinstance(a, Zero):
        return b
    if b is None or isinstance(b, Zero):
        return a
    from plait.lax.elementwise import add
    return add(a, b)


def defjvp(prim: Primitive, *jvp_fns: Callable | None) -> None:
    """Register a jvp rule from one function per input.

    ``jvp_fns[i](g, ans, *primals, **params)`` returns the output tangent contributed
    by tangent ``g`` of input ``i`` (``None`` marks an input with no derivative). The
    contributions of nonzero tangents are summed.
    """
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out = None
        for fn, g in zip(jvp_fns, tangents):
            if fn is None or isinstance(g, Zero):
                continue
            out = add_tangents(out, fn(g, ans, *primals, **params))
        return ans, (Zero(tangent_aval(get_aval(ans))) if out is None else out)
    prim.def_rule("jvp", rule)


def defjvp_zero(prim: Primitive) -> None:
    """Register a jvp rule for a primitive whose outputs have zero derivative
    (comparisons, rounding, integer results, argmax, ...)."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if prim.multiple_results:
            return ans, [Zero(tangent_aval(get_aval(a))) for a in ans]
        return ans, Zero(tangent_aval(get_aval(ans)))
    prim.def_rule("jvp", rule)


def deflinear(prim: Primitive, transpose: Callable) -> None:
    """Register the rules of a primitive linear in all its inputs jointly.

    The jvp applies the primitive to the tangents (symbolic zeros instantiated, or a
    Zero result when every tangent is zero); ``transpose`` is registered as is.
    """
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if all(isinstance(t, Zero) for t in tangents):
            if prim.multiple_results:
                return ans, [Zero(tangent_aval(get_aval(a))) for a in ans]
            return ans, Zero(tangent_aval(get_aval(ans)))
        return ans, prim.bind(*[instantiate(t) for t in tangents], **params)
    prim.def_rule("jvp", rule)
    prim.def_rule("transpose", transpose)
