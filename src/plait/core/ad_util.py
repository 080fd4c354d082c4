"""Markers shared by the autodiff interpreters and the primitives' rules.

``Zero(aval)`` is a symbolic zero tangent or cotangent (no array is built).
``UndefinedPrimal(aval)`` marks a linear input in a ``transpose`` rule.
"""
from __future__ import annotations

from plait.core.aval import ShapedArray


class Zero:
    """A symbolic zero of abstract value ``aval``."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """The linear input of a transpose rule: only its abstract value is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x) -> bool:
    return isinstance(x, UndefinedPrimal)
