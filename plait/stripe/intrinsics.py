"""The scalar intrinsic table: name -> (arity, NumPy implementation over arrays).

Intrinsics follow NumPy semantics on the operand arrays (dtype promotion included) with
these explicit choices: ``div`` is true division for floats and C-style truncating
division for integers; ``rem`` takes the sign of the dividend (C ``fmod``); comparisons
return ``bool``; ``and``/``or``/``xor``/``not`` are logical on ``bool`` and bitwise on
integers; ``select(c, a, b)`` picks ``a`` where ``c``; ``cast`` needs the intrinsic's
``dtype``.  Register more with :func:`register_intrinsic`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from plait.lax.special import erf_ref, erfc_ref, lgamma_ref, digamma_ref


@dataclass(frozen=True)
class IntrinsicDef:
    """Arity and vectorized implementation of one intrinsic."""

    name: str
    arity: int
    fn: Callable[..., np.ndarray]


INTRINSICS: dict[str, IntrinsicDef] = {}


def register_intrinsic(name: str, arity: int, fn: Callable[..., np.ndarray]) -> None:
    """Add (or replace) an intrinsic implementation."""
    INTRINSICS[name] = IntrinsicDef(name, arity, fn)


def _div(a, b):
    a, b = np.asarray(a), np.asarray(b)
    rt = np.result_type(a, b)
    if rt.kind in "iu":
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(b == 0, 0, np.abs(a) // np.where(b == 0, 1, np.abs(b)))
            return (q * np.sign(a) * np.sign(b)).astype(rt)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(a, b)


def _rem(a, b):
    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.result_type(a, b).kind in "iu":
            return np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b)))
        return np.fmod(a, b)


def _logical(lop, bop):
    def f(*xs):
        if all(np.asarray(x).dtype == np.bool_ for x in xs):
            return lop(*xs)
        return bop(*xs)

    return f


def _safe(fn):
    def f(*xs):
        with np.errstate(all="ignore"):
            return fn(*xs)

    return f


_UNARY = {
    "neg": np.negative, "abs": np.abs, "sign": np.sign, "exp": np.exp, "exp2": np.exp2,
    "log": np.log, "log2": np.log2, "cbrt": np.cbrt, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "floor": np.floor, "ceil": np.ceil, "round": np.round,
    "logistic": lambda x: 1 / (1 + np.exp(-x)), "is_finite": np.isfinite,
    "is_nan": np.isnan, "ident": lambda x: x, "assign": lambda x: x, "cast": lambda x: x,
    "not": _logical(np.logical_not, np.invert), "square": np.square,
    "reciprocal": lambda x: 1 / x,
    "erf": erf_ref, "erfc": erfc_ref, "lgamma": lgamma_ref, "digamma": digamma_ref,
}
_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _div, "rem": _rem,
    "pow": np.power, "max": np.maximum, "min": np.minimum, "atan2": np.arctan2,
    "cmp_eq": np.equal, "cmp_ne": np.not_equal, "cmp_lt": np.less, "cmp_le": np.less_equal,
    "cmp_gt": np.greater, "cmp_ge": np.greater_equal,
    "and": _logical(np.logical_and, np.bitwise_and), "or": _logical(np.logical_or, np.bitwise_or),
    "xor": _logical(np.logical_xor, np.bitwise_xor), "shl": np.left_shift, "shr": np.right_shift,
    "nextafter": np.nextafter, "copysign": np.copysign,
}

for _n, _f in _UNARY.items():
    register_intrinsic(_n, 1, _safe(_f))
for _n, _f in _BINARY.items():
    register_intrinsic(_n, 2, _safe(_f))
register_intrinsic("select", 3, lambda c, a, b: np.where(np.asarray(c).astype(bool), a, b))
register_intrinsic("cond", 3, lambda c, a, b: np.where(np.asarray(c).astype(bool), a, b))
