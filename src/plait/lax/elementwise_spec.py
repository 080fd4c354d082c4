"""One descriptor per elementwise operation: every fact about it, in one place.

An :class:`ElementwiseOp` says what an elementwise op is in every layer:

- **lax** (``define`` makes the primitive): its accepted dtype classes, result dtype,
  NumPy semantics (the ``impl``, also the Stripe interpreter's intrinsic), jvp (one
  function per operand) or linear transpose, batching (unary: the batch dim passes
  through; n-ary: operands share one batch dim);
- **Tile/Stripe**: the intrinsic name it lowers to (``None``: no native lowering, the
  equation runs on the host);
- **C** (read by ``plait.codegen.c_expr``): per dtype class a C expression template,
  or the libm function its float form calls, whether glibc's vector math library
  (libmvec) has a SIMD variant of that function, and any helper C it needs; a
  CPU-only spelling (``cpu_c``/``cpu_helper``: plait's own vector math, GCC C) that
  the CPU renderer prefers while the OpenCL renderer keeps the portable one;
- **StableHLO**: the op spelling of its ``to_stablehlo`` rule; without one, XLA lowers
  the op through ``composite`` (the op written with other primitives), else the XLA
  rules module has a custom rule for it;
- **cost analysis**: ``transcendental`` ops count one transcendental per element (the
  others one flop).

A descriptor without ``dtypes`` is a Stripe-only intrinsic (``square``, ``select``...):
no primitive, but interpreted and rendered from the same record.

Readers subscribe with :func:`on_define` (called for every op defined so far and every
op defined later), so an op defined in any module, at any time, reaches all layers.
This module imports only ``core`` and the ``lax`` registrars, so every layer may read it.
Adding an elementwise primitive is one ``define(ElementwiseOp(...))`` block (see
``plait/transforms/RULES.md``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from plait.core.primitive import Primitive
from plait.lax._ad_helpers import defjvp, defjvp_zero, deflinear
from plait.lax._base import (ALL, BOOL, COMPLEX, FLOAT, INEXACT, INT, INTEGRAL,
                             NUMERIC, UINT, standard_binop, standard_unop, to_bool)
from plait.lax._batch_helpers import defbroadcasting, defvectorized
from plait.errors import PlaitValueError

__all__ = ["ElementwiseOp", "ZERO", "define", "on_define", "by_intrinsic", "ops", "primitive",
           # dtype classes for ElementwiseOp.dtypes
           "ALL", "BOOL", "COMPLEX", "FLOAT", "INEXACT", "INT", "INTEGRAL", "NUMERIC", "UINT"]

#: ``jvp=ZERO``: the outputs have zero derivative (integer/bool results, step functions)
ZERO = "zero"


@dataclass(frozen=True)
class ElementwiseOp:
    """Every fact about one elementwise operation (see the module docstring).

    ``c`` maps dtype classes to C expression templates: a key is a string of class
    letters (``f`` float, ``i`` signed int, ``u`` unsigned int, ``b`` bool), a template
    uses ``{0}``, ``{1}``... for the operands, ``{ct}`` for the C compute type, ``{f}``
    for the float-function suffix (``"f"`` below float64, ``""`` at float64) and
    ``{bits}`` for the operand's width. ``libm`` (e.g. ``"exp"``) adds the float
    template ``exp{f}(...)`` unless ``c`` has an ``f`` key; ``vecmath`` declares its
    libmvec SIMD variants so loops calling it vectorize. ``c_helper`` is C source put
    in every program's prelude (``static inline`` functions the templates call), so it
    must be C99 that OpenCL C also compiles. ``cpu_c`` (same keys as ``c``) overrides
    ``c`` in the CPU renderer only, and ``cpu_helper`` is the C its templates call
    (chunks: a chunk several ops share, such as the vecmath core, is emitted once).
    ``cpu_v16`` is the float32 template of the CPU renderer's explicit-vector kernels
    (operands are 16-lane ``plait_v16f`` values, helpers from ``_vecmath_c.V16_C``); an
    op without one keeps its kernels auto-vectorized.

    Dtype classes (``dtypes``) are the constants of this module: ``FLOAT``, ``INEXACT``
    (float and complex), ``NUMERIC``, ``INTEGRAL`` (bool and integers), ``ALL``...
    """

    name: str
    arity: int
    numpy: Callable[..., np.ndarray]
    dtypes: Sequence[str] | None = None
    out_dtype: Callable | None = None
    warn_ok: bool = False
    jvp: Sequence[Callable | None] | str | None = None
    transpose: Callable | None = None
    linear: bool = False
    intrinsic: str | None = None
    c: dict[str, str] = field(default_factory=dict)
    libm: str | None = None
    vecmath: bool = False
    c_helper: str = ""
    cpu_c: dict[str, str] = field(default_factory=dict)
    cpu_helper: tuple[str, ...] = ()
    cpu_v16: str | None = None
    stablehlo: str | None = None
    composite: Callable | None = None
    transcendental: bool = False

    @property
    def bool_result(self) -> bool:
        """True when the op's result is ``bool`` whatever its operands."""
        return self.out_dtype is to_bool

    def c_template(self, kind: str, cpu: bool = False) -> str | None:
        """The C template for operands of dtype class ``kind`` (``f``/``i``/``u``/``b``);
        ``cpu``: for the CPU renderer (``cpu_c`` first)."""
        for keys, tpl in (self.cpu_c.items() if cpu else ()):
            if kind in keys:
                return tpl
        for keys, tpl in self.c.items():
            if kind in keys:
                return tpl
        if kind == "f" and self.libm:
            return self.libm + "{f}(" + ", ".join(f"{{{k}}}" for k in range(self.arity)) + ")"
        return None


_OPS: dict[str, ElementwiseOp] = {}            # by primitive (or intrinsic-only) name
_BY_INTRINSIC: dict[str, ElementwiseOp] = {}
_PRIMS: dict[str, Primitive] = {}
_LISTENERS: list[Callable[[ElementwiseOp, Primitive | None], None]] = []


def define(op: ElementwiseOp) -> Primitive | None:
    """Register ``op`` with every layer; returns its primitive (``None`` for a
    Stripe-only intrinsic, one without ``dtypes``)."""
    if op.name in _OPS:
        raise PlaitValueError(f"elementwise op {op.name!r} is already defined")
    if op.arity < 1 or (op.dtypes is not None and op.arity > 2):
        raise PlaitValueError(f"elementwise op {op.name!r}: primitives take 1 or 2 operands")
    prim = None if op.dtypes is None else _make_primitive(op)
    _OPS[op.name] = op
    if op.intrinsic:
        _BY_INTRINSIC[op.intrinsic] = op
    if prim is not None:
        _PRIMS[op.name] = prim
    for listener in list(_LISTENERS):
        listener(op, prim)
    return prim


def _make_primitive(op: ElementwiseOp) -> Primitive:
    make = standard_unop if op.arity == 1 else standard_binop
    prim = make(op.name, tuple(op.dtypes), op.numpy, out_dtype=op.out_dtype,
                warn_ok=op.warn_ok)
    if op.linear:
        deflinear(prim, op.transpose)
    elif op.jvp == ZERO:
        defjvp_zero(prim)
    elif op.jvp is not None:
        defjvp(prim, *op.jvp)
        if op.transpose is not None:
            prim.def_rule("transpose", op.transpose)
    (defvectorized if op.arity == 1 else defbroadcasting)(prim)
    return prim


def on_define(listener: Callable[[ElementwiseOp, Primitive | None], None]) -> None:
    """Call ``listener(op, primitive)`` for every op defined so far and every later one."""
    _LISTENERS.append(listener)
    for name, op in list(_OPS.items()):
        listener(op, _PRIMS.get(name))


def by_intrinsic(name: str) -> ElementwiseOp | None:
    """The op whose Tile/Stripe intrinsic is ``name`` (None when there is none)."""
    return _BY_INTRINSIC.get(name)


def ops() -> list[ElementwiseOp]:
    """Every op defined so far, in definition order."""
    return list(_OPS.values())


def primitive(name: str) -> Primitive:
    """The primitive of the op ``name``."""
    return _PRIMS[name]
