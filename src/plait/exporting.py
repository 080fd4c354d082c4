"""``plait.export``: a jitted function as a portable StableHLO artifact.

``plait.export(f)(*specs)`` traces ``f`` on arrays or ``ShapeDtypeStruct``-like specs
(anything with ``shape`` and ``dtype``) and returns an :class:`Exported`: the
StableHLO module (constants embedded), its input and output specs, ``serialize()``
bytes, and ``call(*args)``, which compiles the module with XLA (the ``xla``
extra) and runs it. ``plait.export.deserialize(b)`` rebuilds an ``Exported`` in a
process that never saw the Python function. Arguments and results are flat lists
of arrays.

Differentiation follows ``jax.export``: ``Exported.vjp()`` is the exported VJP
(``(*primals, *output_cotangents) -> input cotangents``), built from the traced
function while it is at hand and kept across ``serialize(vjp_order=k)`` /
``deserialize`` for ``k`` orders. ``call`` on traced arguments (inside ``grad``,
``jit``, ``vmap``: one call per batch element) runs the module as a host callback
whose derivative is that VJP; a function deserialized without its VJP says how
to export it with one when differentiated (it still runs under jit and vmap).
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

    def __init__(self, fun_name: str, in_specs: list, out_specs: list, mlir_module: str,
                 vjp: "Exported | Callable[[], Exported] | None" = None):
        self.fun_name = fun_name
        self.in_specs = [ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in in_specs]
        self.out_specs = [ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in out_specs]
        self.mlir_module = mlir_module
        self._vjp = vjp          # an Exported, a thunk that exports it, or None
        self._exe = None

    def has_vjp(self) -> bool:
        """Whether :meth:`vjp` (and so differentiating :meth:`call`) is available."""
        return self._vjp is not None

    def vjp(self) -> "Exported":
        """The exported VJP: ``(*primals, *output_cotangents)`` -> one cotangent per
        input (zeros for integer inputs)."""
        if self._vjp is None:
            raise PlaitValueError(
                f"exported function {self.fun_name!r} has no VJP: it was deserialized from "
                f"bytes written without one; serialize it with "
                f"exported.serialize(vjp_order=1) (or higher) to differentiate it later")
        if not isinstance(self._vjp, Exported):
            self._vjp = self._vjp()
        return self._vjp

    def serialize(self, vjp_order: int = 0) -> bytes:
        """Bytes that :func:`deserialize` turns back into this ``Exported``, with the
        VJPs of orders ``1..vjp_order`` (so the result can be differentiated that often)."""
        if not isinstance(vjp_order, int) or vjp_order < 0:
            raise PlaitValueError(f"serialize: vjp_order must be an int >= 0, got "
                                  f"{vjp_order!r}")
        vjp_blob = self.vjp().serialize(vjp_order - 1) if vjp_order else b""
        text = self.mlir_module.encode()
        head = {"name": self.fun_name,
                "in": [[list(s.shape), s.dtype.name] for s in self.in_specs],
                "out": [[list(s.shape), s.dtype.name] for s in self.out_specs],
                "module_bytes": len(text), "vjp_bytes": len(vjp_blob)}
        return _MAGIC + json.dumps(head).encode() + b"\n" + text + vjp_blob

    def call(self, *args) -> list:
        """Run the module on ``args`` (flat arrays matching ``in_specs``) with XLA. On
        traced arguments it becomes a host callback, differentiable through :meth:`vjp`."""
        from plait.core.trace import Tracer
        if any(isinstance(a, Tracer) for a in args):
            return self._call_traced(args)
        return self._run(args)

    def _call_traced(self, args) -> list:
        from plait.transforms import custom_vjp
        from plait.lax.callbacks import pure_callback
        if len(args) != len(self.in_specs):
            raise PlaitTypeError(f"exported {self.fun_name!r} takes {len(self.in_specs)} "
                                 f"arguments, got {len(args)}")

        def host(*xs):
            return self._run(xs)

        @custom_vjp
        def primal(*xs):
            return tuple(pure_callback(host, self.out_specs, *xs, vmap_method="sequential"))

        def fwd(*xs):
            return primal(*xs), xs

        def bwd(xs, cts):
            if self._vjp is None:
                raise PlaitTypeError(
                    f"exported function {self.fun_name!r} cannot be differentiated: it was "
                    f"deserialized without its VJP; serialize it with "
                    f"exported.serialize(vjp_order=1) (or export the transformed "
                    f"function, e.g. plait.grad(f), instead)")
            return tuple(self.vjp().call(*xs, *cts))
        primal.defvjp(fwd, bwd)
        return list(primal(*args))

    def _run(self, args) -> list:
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
            self._exe = pjrt.compile_text(self.mlir_module, self.out_specs)
            self._in_avals = [self._exe.aval(s.shape, s.dtype) for s in self.in_specs]
        return self._exe.call([], vals, self._in_avals)


def _vjp_function(flat: Callable, n_in: int) -> Callable:
    """``(*primals, *output_cotangents) -> input cotangents`` of ``flat``."""
    def vjp_fun(*args):
        from plait.transforms import vjp
        _, pullback = vjp(flat, *args[:n_in])
        return list(pullback(list(args[n_in:])))
    return vjp_fun


def export(fun: Callable, *, format: str = "stablehlo") -> Callable[..., Exported]:
    """``export(f)(*specs)`` -> :class:`Exported` (see the module docstring);
    ``export(f, format="c")(*specs)`` -> a standalone C library
    (:class:`plait.backends.native.standalone.CLibrary`: ``source``, ``header``,
    ``build_line()``, ``write(dir)``) computing ``f`` with the native backend's code."""
    if format not in ("stablehlo", "c"):
        raise PlaitValueError(f"export: format must be 'stablehlo' or 'c', got {format!r}")

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
        if format == "c":
            from plait.backends.native.standalone import c_library
            return c_library(closed, name, where=f"export(format='c') of {name}")
        text = emit_module(closed, name, embed_consts=True)
        outs = [(a.shape, a.dtype) for a in closed.out_avals]

        def vjp_thunk() -> Exported:
            vjp_fun = _vjp_function(flat, len(avals))
            vjp_fun.__name__ = f"{name}_vjp"
            return export(vjp_fun)(*avals, *[ShapeDtypeStruct(s, d) for s, d in outs])
        return Exported(name, [(a.shape, a.dtype) for a in avals], outs, text, vjp_thunk)
    return trace


def deserialize(blob: bytes) -> Exported:
    """The :class:`Exported` that ``Exported.serialize`` wrote."""
    if not blob.startswith(_MAGIC):
        raise PlaitValueError("deserialize: these bytes are not a plait export "
                              "(missing the plait-stablehlo-v1 header)")
    head, body = blob[len(_MAGIC):].split(b"\n", 1)
    h = json.loads(head)
    n = h.get("module_bytes", len(body))
    vjp = deserialize(body[n:]) if h.get("vjp_bytes") else None
    return Exported(h["name"], h["in"], h["out"], body[:n].decode(), vjp)


export.deserialize = deserialize
export.ShapeDtypeStruct = ShapeDtypeStruct
