"""The scalar intrinsic table: name -> (arity, NumPy implementation over arrays).

Every elementwise primitive that lowers natively contributes its intrinsic here from
its descriptor (:mod:`plait.lax.elementwise_spec`: the same NumPy semantics as the
primitive's ``impl``); the Stripe-only intrinsics below (introduced by lowering rules
and passes, with no primitive of their own) are descriptors too, so the C renderer
reads every intrinsic's spelling from one place. Intrinsics compute on the operand
arrays with floating-point warnings off; ``div`` is true division for floats and
C-style truncating division for integers (``x / 0 == 0``); ``rem`` takes the sign of
the dividend (C ``fmod``); comparisons return ``bool``; ``and``/``or``/``xor``/``not``
are logical on ``bool`` and bitwise on integers; ``select(c, a, b)`` (and ``cond``)
picks ``a`` where ``c``; ``cast`` needs the intrinsic's ``dtype``. Register more with
:func:`register_intrinsic` (NumPy only) or, with a C spelling, ``define`` a descriptor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from plait.lax._base import to_bool
from plait.lax.elementwise_spec import ElementwiseOp, define, on_define


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


def _on_arrays(fn):
    def f(*xs):
        with np.errstate(all="ignore"):
            return fn(*(np.asarray(x) for x in xs))
    return f


def _register(op: ElementwiseOp, prim) -> None:
    if op.intrinsic:
        register_intrinsic(op.intrinsic, op.arity, _on_arrays(op.numpy))


on_define(_register)


def _select(c, a, b):
    return np.where(c.astype(bool), a, b)


def _identity(x):
    return x


# Stripe-only intrinsics: one descriptor each (no primitive: no dtypes)
for _name in ("ident", "assign", "cast"):
    define(ElementwiseOp(_name, 1, _identity, intrinsic=_name, c={"fiub": "{0}"}))
define(ElementwiseOp("is_nan", 1, np.isnan, out_dtype=to_bool, intrinsic="is_nan",
                     c={"fiub": "isnan({0})"}))
define(ElementwiseOp("log2", 1, np.log2, intrinsic="log2", libm="log2", vecmath=True))
define(ElementwiseOp("square", 1, np.square, intrinsic="square",
                     c={"fiub": "(({ct})({0} * {0}))"}))
define(ElementwiseOp("reciprocal", 1, lambda x: 1 / x, intrinsic="reciprocal",
                     c={"fiub": "(({ct})1 / {0})"}))
for _name in ("select", "cond"):
    define(ElementwiseOp(_name, 3, _select, intrinsic=_name, c={"fiub": "({0} ? {1} : {2})"}))
