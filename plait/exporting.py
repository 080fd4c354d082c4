"""``plait.export``: a jitted function as a portable StableHLO artifact.

``plait.export(f)(*specs)`` traces ``f`` on arrays or ``ShapeDtypeStruct``-like specs
(anything with ``shape`` and ``dtype``) and returns an :class:`Exported`: the
StableHLO module (constants embedded), its input and output specs, ``serialize()``
bytes, and ``call(*args)``, which compiles the module with XLA (the ``xla``
extra) and runs it. ``plait.export.deserialize(b)`` rebuilds an ``Exported`` in a
process that never saw the Python function. Arguments and results are flat lists
of arrays. An exported function is a black box: it cannot be traced, differentiated
or vmapped (export the gradient function itself instead).
"""
from __future__ import annotations

import json
from typing import Callable

import numpy as np

from plait.abstract import ShapeDtypeStruct
from plait.core.aval import ShapedArray
from plait.errors import PlaitTypeError, PlaitValueError

_MAGIC = b"plait-stablehlo-v1\n"


class Exported:
    """A traced function as StableHLO: ``mlir_module``, specs, ``serialize``, ``call``."""

    def __init__(self, fun_name: str, in_specs: list, out_specs: list, mlir_module: str):
        self.fun_name = fun_name
        self.in_specs = [ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in in_specs]
        self.out_specs = [ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in out_specs]
        self.mlir_module = mlir_module
        self._exe = None

    def serialize(self) -> bytes:
        """Bytes that :func:`deserialize` turns back into this ``Exported``."""
        head = {"name": self.fun_name,
                "in": [[list(s.shape), s.dtype.name] for s in self.in_specs],
                "out": [[list(s.shape), s.dtype.name] for s in self.out_specs]}
        return _MAGIC + json.dumps(head).encode() + b"\n" + self.mlir_module.encode()

    def call(self, *args) -> list:
        """Run the module on ``args`` (flat arrays matching ``in_specs``) with XLA."""
        from plait.core.trace import Tracer
        if any(isinstance(a, Tracer) for a in args):
            raise PlaitTypeError(f"exported function {self.fun_name!r} cannot be traced, "
                                 f"differentiated or vmapped; export the transformed "
                                 f"function (e.g. plait.grad(f)) instead")
        if len(args) != len(self.in_specs):
            raise PlaitTypeError(f"exported {self.fun_name!r} takes {len(self.in_specs)} "
                                 f"arguments, got {len(args)}")
        vals = []
        for i, (a, s) in enumerate(zip(args, self.in_specs)):
            v = np.asarray(a._value if hasattr(a, "_value") else a)
            if v.shape != s.shape or v.dtype != s.dtype:
                raise PlaitTypeError(f"exported {self.fun_name!r}: argument {i} is "
                                     f"{v.dtype.name}{list(v.shape)}, expected "
                                     f"{s.dtype.name}{list(s.shape)}")
            vals.append(v)
        if self._exe is None:
            from plait.backends.xla import pjrt
            self._exe = pjrt.compile_text(self.mlir_module)
        outs = self._exe.run([self._exe.put(v) for v in vals])
        from plait.backends.xla.pjrt import to_numpy
        return [to_numpy(o) for o in outs]


def export(fun: Callable) -> Callable[..., Exported]:
    """``export(f)(*specs)`` -> :class:`Exported` (see the module docstring)."""
    def trace(*specs) -> Exported:
        from plait.backends.xla.emitter import emit_module
        from plait.core.staging import trace_to_graph
        from plait.passes import optimize
        avals = []
        for i, s in enumerate(specs):
            if not hasattr(s, "shape") or not hasattr(s, "dtype"):
                raise PlaitValueError(f"export: argument {i} must be an array or a spec with "
                                      f"shape and dtype, got {type(s).__name__}")
            avals.append(ShapedArray(tuple(s.shape), np.dtype(s.dtype)))
        name = getattr(fun, "__name__", "fun")

        def flat(*xs):
            r = fun(*xs)
            return list(r) if isinstance(r, (list, tuple)) else [r]
        closed, _ = trace_to_graph(flat, avals, description=f"export of {name}", name=name)
        closed = optimize(closed)
        text = emit_module(closed, name, embed_consts=True)
        return Exported(name, [(a.shape, a.dtype) for a in avals],
                        [(a.shape, a.dtype) for a in closed.out_avals], text)
    return trace


def deserialize(blob: bytes) -> Exported:
    """The :class:`Exported` that ``Exported.serialize`` wrote."""
    if not blob.startswith(_MAGIC):
        raise PlaitValueError("deserialize: these bytes are not a plait export "
                              "(missing the plait-stablehlo-v1 header)")
    head, text = blob[len(_MAGIC):].split(b"\n", 1)
    h = json.loads(head)
    return Exported(h["name"], h["in"], h["out"], text.decode())


export.deserialize = deserialize
export.ShapeDtypeStruct = ShapeDtypeStruct
