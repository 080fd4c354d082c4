"""Emit a plait Graph as StableHLO MLIR text (generic operation form).

:class:`Emitter` walks a graph's equations and calls each primitive's
``to_stablehlo`` rule (registered in :mod:`plait.backends.xla.rules`) with an
:class:`Ctx` that writes operations and returns SSA names. Sub-graphs of
higher-order primitives become private ``func.func``s of the same module. The
text is plain MLIR: no jaxlib is needed to produce it.

Host callbacks run in program order: a ``!stablehlo.token`` is threaded through every
callback custom call (:class:`TokenChain`). ``main`` makes the first token; a private
function whose graph holds a callback (at any depth, :meth:`Emitter.needs_token`) takes
the token as its first parameter and returns the new one as its first result, and the
control-flow rules carry it through their regions. With the token travels the run's
context, an int64 scalar: ``main``'s last parameter, which the executable sets to the
key of the calling thread's replica context (see :mod:`plait.backends.xla.rules_callbacks`;
XLA may run a callback on another thread). The Python functions the module calls are
collected in the emitter's ``host_callbacks`` (their position is the custom call's
``index``); a module emitted without that list (``plait.export``) refuses them.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from plait.core.graph import ClosedGraph, Graph, Literal, subgraphs_of
from plait.errors import PlaitError, PlaitValueError

TOKEN_TYPE = "!stablehlo.token"
CONTEXT_TYPE = "tensor<i64>"

# names of the primitives whose rules consume and produce the token (the host callbacks)
TOKEN_PRIMS: set[str] = set()

_ELEM = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
         "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
         "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
         "complex64": "complex<f32>", "complex128": "complex<f64>"}


def elem_type(dtype) -> str:
    """The MLIR element type of a NumPy dtype."""
    return _ELEM[np.dtype(dtype).name]


def tensor_type(shape, dtype) -> str:
    """``tensor<2x3xf32>`` for shape (2, 3) float32."""
    dims = "".join(f"{int(d)}x" for d in shape)
    return f"tensor<{dims}{elem_type(dtype)}>"


def aval_type(aval) -> str:
    return tensor_type(aval.shape, aval.dtype)


def i64_array(xs) -> str:
    """``array<i64: 1, 2>`` (a dense i64 array attribute)."""
    xs = [int(x) for x in xs]
    return f"array<i64: {', '.join(map(str, xs))}>" if xs else "array<i64>"


def dense_attr(value, dtype=None) -> str:
    """A ``dense<...> : tensor<...>`` attribute holding ``value`` exactly (hex bytes)."""
    v = np.asarray(value, dtype=dtype)
    t = tensor_type(v.shape, v.dtype)
    if v.dtype == np.bool_:
        if v.size and (v.all() or not v.any()):
            return f"dense<{'true' if v.all() else 'false'}> : {t}"
        flat = ", ".join("true" if b else "false" for b in v.ravel())
        return f"dense<[{flat}]> : {t}" if v.ndim <= 1 else \
            f"dense<{_nested(v)}> : {t}"
    if v.size == 0:
        return f"dense<> : {t}"
    if v.size > 1 and np.all(v.view(np.uint8).reshape(v.size, -1) ==
                             v.view(np.uint8).reshape(v.size, -1)[:1]):
        v = v.ravel()[:1]     # a splat: one element's bytes
    raw = np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<")).tobytes()
    return f'dense<"0x{raw.hex().upper()}"> : {t}'


def _nested(v) -> str:
    if v.ndim == 0:
        return "true" if v else "false"
    return "[" + ", ".join(_nested(x) for x in v) + "]"


class TokenChain:
    """The current ``!stablehlo.token`` of one function body or region (its SSA name):
    each host callback consumes it and replaces it with the token it returns; and the
    run's context (None in a module emitted without host functions)."""

    __slots__ = ("token", "context")

    def __init__(self, token: str, context: str | None = None):
        self.token = token
        self.context = context

    @classmethod
    def of(cls, values: list) -> "TokenChain":
        """The chain whose :meth:`values` are ``values``."""
        return cls(*values)

    def values(self) -> list:
        """The SSA names a function or loop passes on: the token, then the context."""
        return [self.token] + ([self.context] if self.context else [])

    def types(self) -> list:
        return [TOKEN_TYPE] + ([CONTEXT_TYPE] if self.context else [])


class Ctx:
    """What a ``to_stablehlo`` rule sees: the avals and an op writer.

    ``ctx.op(name, operands, out_types, attrs, regions)`` appends one generic
    operation and returns its result names (a list). ``ctx.chain`` is the token chain
    of the enclosing function or region (None where no callback needs one).
    """

    def __init__(self, emitter: "Emitter", lines: list, in_avals, out_avals,
                 chain: TokenChain | None = None):
        self.em = emitter
        self.lines = lines
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.chain = chain

    def fresh(self) -> str:
        return self.em.fresh()

    def op(self, name: str, operands, operand_types, result_types, attrs: str = "",
           regions: list | None = None) -> list:
        n = len(result_types)
        res = self.fresh()
        lhs = f"{res}:{n} = " if n > 1 else (f"{res} = " if n == 1 else "")
        attr = f" {{{attrs}}}" if attrs else ""
        reg = ""
        if regions:
            reg = " (" + ", ".join("{\n" + r + "\n}" for r in regions) + ")"
        rt = result_types[0] if n == 1 else "(" + ", ".join(result_types) + ")"
        self.lines.append(f'{lhs}"{name}"({", ".join(operands)}){reg}{attr} : '
                          f'({", ".join(operand_types)}) -> {rt}')
        if n == 1:
            return [res]
        return [f"{res}#{i}" for i in range(n)]

    def op1(self, name, operands, operand_types, result_type, attrs="", regions=None) -> str:
        return self.op(name, operands, operand_types, [result_type], attrs, regions)[0]

    def region(self, arg_types: list, body) -> str:
        """A one-block region: ``body(ctx, arg_names) -> (result names, result types)``."""
        args = [self.fresh() for _ in arg_types]
        lines: list = []
        sub = Ctx(self.em, lines, None, None)
        outs, types = body(sub, args)
        lines.append(f'"stablehlo.return"({", ".join(outs)}) : ({", ".join(types)}) -> ()')
        head = "^bb0(" + ", ".join(f"{a}: {t}" for a, t in zip(args, arg_types)) + "):"
        return head + "\n" + "\n".join("  " + ln for ln in lines)

    def const(self, value, dtype) -> str:
        v = np.asarray(value, dtype=dtype)
        return self.op1("stablehlo.constant", [], [], tensor_type(v.shape, v.dtype),
                        f"value = {dense_attr(v)}")

    def full(self, value, shape, dtype) -> str:
        """A ``shape`` tensor of ``value`` (a broadcast scalar constant)."""
        c = self.const(value, dtype)
        if not tuple(shape):
            return c
        return self.op1("stablehlo.broadcast_in_dim", [c], [tensor_type((), dtype)],
                        tensor_type(shape, dtype), "broadcast_dimensions = array<i64>")

    def needs_token(self, graph: Graph) -> bool:
        return self.em.needs_token(graph)

    def host_callback(self, fn: Callable, what: str) -> int:
        """The ``index`` of the host function ``fn`` in the module's callbacks (``what``
        names the callback in the refusal of a module emitted without them)."""
        return self.em.host_callback(fn, what)

    def call_graph(self, graph: Graph, operands: list, operand_types: list) -> list:
        """``func.call`` of ``graph`` emitted as a private function of the module; a
        graph holding a host callback is passed this context's token and advances it."""
        fname = self.em.function(graph)
        outs = [aval_type(a) for a in graph.out_avals]
        if self.em.needs_token(graph):
            if self.chain is None:
                raise PlaitError(f"the xla backend has no token to sequence the host "
                                 f"callbacks of {graph.name or 'a sub-graph'} here; this is "
                                 f"a plait bug, please report it")
            res = self.op("func.call", self.chain.values() + list(operands),
                          self.chain.types() + list(operand_types), [TOKEN_TYPE] + outs,
                          f"callee = @{fname}")
            self.chain.token = res[0]
            return res[1:]
        if not outs:
            self.op("func.call", operands, operand_types, [], f"callee = @{fname}")
            return []
        return self.op("func.call", operands, operand_types, outs, f"callee = @{fname}")


class Emitter:
    """Builds one module: ``main`` plus a private function per distinct sub-graph."""

    def __init__(self, host_callbacks: list | None = None):
        from plait.backends.xla import rules  # noqa: F401  (the rules and TOKEN_PRIMS)
        self.count = 0
        self.funcs: list[str] = []
        self.names: dict[int, str] = {}
        self.graphs: list[Graph] = []   # the sub-graphs named, kept alive: ids stay unique
        self.host_callbacks = host_callbacks
        self._token_needs: dict[int, bool] = {}

    def needs_token(self, graph: Graph) -> bool:
        """Whether ``graph`` holds a host callback, in itself or any sub-graph."""
        key = id(graph)
        if key not in self._token_needs:
            self._token_needs[key] = any(
                e.prim.name in TOKEN_PRIMS or any(self.needs_token(g)
                                                  for g in subgraphs_of(e.params))
                for e in graph.eqns)
        return self._token_needs[key]

    def host_callback(self, fn: Callable, what: str) -> int:
        if self.host_callbacks is None:
            raise PlaitValueError(
                f"this StableHLO module cannot call the Python function {what}: a "
                f"serialized module (plait.export) cannot carry Python code. Remove the "
                f"callback from the exported function, or run it with plait.jit")
        self.host_callbacks.append(fn)
        return len(self.host_callbacks) - 1

    def fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    def function(self, graph: Graph) -> str:
        key = id(graph)
        if key not in self.names:
            name = f"g{len(self.names)}"
            self.names[key] = name
            self.graphs.append(graph)
            self.funcs.append(self.emit_func(name, graph, [], private=True))
        return self.names[key]

    def emit_func(self, name: str, graph: Graph, constvars: list, private: bool,
                  const_values: list | None = None) -> str:
        env: dict = {}
        params = []
        lines: list = []
        chain = None
        if self.needs_token(graph):
            context = self.fresh() if self.host_callbacks is not None else None
            if private:
                chain = TokenChain(self.fresh(), context)
                params += [f"{v}: {t}" for v, t in zip(chain.values(), chain.types())]
            else:
                chain = TokenChain(Ctx(self, lines, None, None).op1(
                    "stablehlo.after_all", [], [], TOKEN_TYPE), context)
        if const_values is not None:     # constants embedded in the function body
            kept = []                    # (a None value stays a parameter)
            for v, c in zip(constvars, const_values):
                if c is None:
                    kept.append(v)
                else:
                    env[v] = Ctx(self, lines, None, None).const(np.asarray(c), v.aval.dtype)
            constvars = kept
        for v in list(constvars) + list(graph.invars):
            a = self.fresh()
            env[v] = a
            params.append(f"{a}: {aval_type(v.aval)}")
        if chain is not None and chain.context and not private:
            params.append(f"{chain.context}: {CONTEXT_TYPE}")
        self.emit_eqns(graph, env, lines, chain)
        outs, types = [], []
        if chain is not None and private:
            outs.append(chain.token)
            types.append(TOKEN_TYPE)
        for v in graph.outvars:
            outs.append(self.read(v, env, lines))
            types.append(aval_type(v.aval))
        lines.append(f'"func.return"({", ".join(outs)}) : ({", ".join(types)}) -> ()')
        vis = "private" if private else "public"
        res = ", ".join(types)
        return (f"func.func {vis} @{name}({', '.join(params)}) -> ({res}) {{\n"
                + "\n".join("  " + ln for ln in lines) + "\n}")

    def read(self, a, env, lines) -> str:
        if isinstance(a, Literal):
            return Ctx(self, lines, None, None).const(a.val, a.aval.dtype)
        return env[a]

    def emit_eqns(self, graph: Graph, env: dict, lines: list,
                  chain: TokenChain | None = None) -> None:
        from plait.backends.xla.rules import lowering_rule
        for eqn in graph.eqns:
            ins = [self.read(a, env, lines) for a in eqn.inputs]
            ctx = Ctx(self, lines, [a.aval for a in eqn.inputs], [v.aval for v in eqn.outputs],
                      chain)
            rule = lowering_rule(eqn.prim)
            outs = rule(ctx, *ins, **eqn.params)
            if not eqn.prim.multiple_results:
                outs = [outs]
            for v, o in zip(eqn.outputs, outs):
                env[v] = o


def emit_module(closed: ClosedGraph, name: str = "plait", embed_consts: bool = False,
                max_embed_bytes: int | None = None, host_callbacks: list | None = None) -> str:
    """The StableHLO module of ``closed``: ``main(consts..., args...)`` returns the outputs
    (``main(args...)`` with the constants inside the module when ``embed_consts``; with
    ``max_embed_bytes`` too, only those of at most that many bytes, the others staying
    leading parameters in their order, see :func:`embedded_consts`). The host functions
    of its callbacks are appended to ``host_callbacks``; without that list a callback
    raises ``PlaitValueError`` (a module to serialize)."""
    em = Emitter(host_callbacks)
    consts = None
    if embed_consts:
        consts = [c if keep else None for c, keep in
                  zip(const_values(closed), embedded_consts(closed, max_embed_bytes))]
    main = em.emit_func("main", closed.graph, closed.graph.constvars, private=False,
                        const_values=consts)
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in (name or "plait"))
    return f"module @{safe} {{\n" + "\n".join([main] + em.funcs) + "\n}\n"


def takes_context(closed: ClosedGraph) -> bool:
    """Whether the ``main`` that :func:`emit_module` writes for ``closed`` with host
    functions takes the run's context as its last parameter (it holds a callback)."""
    return Emitter().needs_token(closed.graph)


def const_values(closed: ClosedGraph) -> list:
    """The host values of ``closed``'s constants."""
    return [c._value if hasattr(c, "_value") else np.asarray(c) for c in closed.consts]


def embedded_consts(closed: ClosedGraph, max_bytes: int | None) -> list[bool]:
    """Which constants of ``closed`` :func:`emit_module` embeds given ``max_bytes``
    (None: all of them)."""
    return [max_bytes is None or int(np.prod(v.aval.shape)) * np.dtype(v.aval.dtype).itemsize
            <= max_bytes for v in closed.graph.constvars]
