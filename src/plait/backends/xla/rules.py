"""``to_stablehlo`` rules: how each primitive lowers to StableHLO (registered on the
primitives through the rule registry, as :mod:`plait.tile.rules` does for ``to_tile``).

A rule is ``rule(ctx, *operand_names, **params) -> name | [names]``; ``ctx`` (an
:class:`~plait.backends.xla.emitter.Ctx`) knows the operand and result avals and
writes operations. Semantics follow each primitive's NumPy ``impl`` (the reference):
truncating integer division with ``x // 0 == 0`` and ``x % 0 == 0``, NaN-propagating
max/min, first-NaN argmax/argmin, float16 sums accumulated in float32.
:data:`REFUSED` lists the primitives with no lowering and why.
"""
from __future__ import annotations

import numpy as np

from plait.backends.xla.emitter import Ctx, aval_type, tensor_type
from plait.core.primitive import Primitive

RULE = "to_stablehlo"

# primitives that deliberately have no lowering, with the reason (checked by a test)
REFUSED: dict[str, str] = {
    "custom_lin": "an internal placeholder of forward-mode AD of custom_vjp functions; its "
                  "impl raises, so no executable graph contains it",
}


def lowering_rule(prim: Primitive):
    """The ``to_stablehlo`` rule of ``prim`` (MissingRuleError naming it when absent)."""
    if prim.name in REFUSED and not prim.has_rule(RULE):
        from plait.errors import PlaitValueError
        raise PlaitValueError(f"the xla backend cannot lower {prim.name}: "
                              f"{REFUSED[prim.name]}")
    return prim.rule(RULE)


def _t(a) -> str:
    return aval_type(a)


def _acc(dt) -> np.dtype:
    dt = np.dtype(dt)
    return np.dtype(np.float32) if dt == np.float16 else dt


def convert(ctx: Ctx, x: str, shape, src, dst) -> str:
    if np.dtype(src) == np.dtype(dst):
        return x
    return ctx.op1("stablehlo.convert", [x], [tensor_type(shape, src)], tensor_type(shape, dst))


def _cmp_type(dt) -> str:
    dt = np.dtype(dt)
    if dt.kind in "fc":
        return "FLOAT"
    if dt.kind in "ub":
        return "UNSIGNED"
    return "SIGNED"


def compare(ctx: Ctx, a: str, b: str, shape, dtype, direction: str) -> str:
    t = tensor_type(shape, dtype)
    return ctx.op1("stablehlo.compare", [a, b], [t, t], tensor_type(shape, np.bool_),
                   f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                   f"compare_type = #stablehlo<comparison_type {_cmp_type(dtype)}>")


def binary(ctx: Ctx, name: str, a: str, b: str, shape, dtype, out_dtype=None) -> str:
    t = tensor_type(shape, dtype)
    return ctx.op1(name, [a, b], [t, t], tensor_type(shape, out_dtype or dtype))


def unary(ctx: Ctx, name: str, a: str, shape, dtype, out_dtype=None) -> str:
    return ctx.op1(name, [a], [tensor_type(shape, dtype)], tensor_type(shape, out_dtype or dtype))


def select(ctx: Ctx, p: str, a: str, b: str, shape, dtype) -> str:
    t = tensor_type(shape, dtype)
    return ctx.op1("stablehlo.select", [p, a, b], [tensor_type(shape, np.bool_), t, t], t)


def _reg(prims, fn):
    for p in prims:
        p.def_rule(RULE, fn)


def _register_all():
    from plait.backends.xla import rules_elementwise, rules_structural, rules_control  # noqa
    from plait.backends.xla import rules_extra, rules_lapack, rules_tile  # noqa: F401
    from plait.backends.xla import rules_callbacks  # noqa: F401


_register_all()
