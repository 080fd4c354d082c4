"""The run plan of a native executable: one small frozen step per thing it does.

:func:`build_plan` turns the partitioned, rendered program (``KernelStep``,
``CallStep`` and ``HostStep`` of ``partition``/``cprogram``) into a :class:`Plan`
over numbered slots of one environment list (``liveness.Slots``):

- :class:`KernelCall` — a fused Stripe kernel, ``int64_t name(void **bufs)``;
- :class:`RuleCall` — an equation rendered by its primitive's ``native`` rule
  (a LAPACK routine, or a ``while``/``scan``/``cond`` loop calling C drivers);
- :class:`HostCall` — an equation run on the host with its NumPy ``impl``.

Every step says which slots it reads and writes and which it frees after it runs
(``liveness.lifetimes``); ``NativeExecutable`` only walks the steps.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass, replace
from typing import Callable, Collection, Mapping

import numpy as np

from plait.backends.liveness import Slots, lifetimes, peak_bytes
from plait.backends.native.cprogram import CallStep, step_buffers
from plait.backends.native.partition import KernelStep


def describe(step) -> tuple[str, str]:
    """``(name, what it computes)`` of a partitioned step, as profiles and the
    ``kernels`` stage print it."""
    if isinstance(step, KernelStep):
        return step.name, ", ".join(e.prim.name for e in step.eqns)
    if isinstance(step, CallStep):
        return step.name, f"native {step.eqn.prim.name}"
    return "host", step.eqn.prim.name


@dataclass(frozen=True)
class NativeCall:
    """A call of a generated C function ``int64_t name(void **bufs)``: ``buffers``
    are its buffer slots in C order; ``allocs[i]`` is ``(shape, dtype)`` of the
    buffer the call writes at position ``i``, or the slot of the dying operand whose
    buffer it writes into (``inplace.buffer_reuses``), or None for an operand it reads.
    ``pack`` is the ctypes array type the pointers travel in, or None when ``fn``
    is an extension-module function taking the arrays themselves."""

    name: str
    what: str
    fn: Callable
    buffers: tuple[int, ...]
    allocs: tuple[tuple[tuple[int, ...], np.dtype] | None, ...]
    pack: type | None
    frees: tuple[int, ...] = ()

    @property
    def reads(self) -> tuple[int, ...]:
        return tuple(s for s, a in zip(self.buffers, self.allocs) if a is None)

    @property
    def writes(self) -> tuple[int, ...]:
        return tuple(s for s, a in zip(self.buffers, self.allocs) if a is not None)

    def label(self) -> str:
        return f"kernel {self.name}"

    def run(self, env: list, args: tuple, alias: Mapping[int, int] | None,
            alloc: Callable) -> int:
        """Call the function on ``env``'s buffers, allocating what it writes (or
        taking the donated argument ``alias`` names); its status (0: success)."""
        arrays = []
        for s, spec in zip(self.buffers, self.allocs):
            if spec is None:
                a = env[s]
                if not a.flags.c_contiguous:
                    a = env[s] = np.ascontiguousarray(a)
            elif alias and s in alias:
                a = env[s] = args[alias[s]]
            elif isinstance(spec, int):
                a = env[s] = env[spec]
            else:
                a = env[s] = alloc(spec[0], spec[1], f"the result buffer of kernel {self.name}")
            arrays.append(a)
        if self.pack is None:
            return self.fn(arrays)
        return self.fn(self.pack(*[a.__array_interface__["data"][0] for a in arrays]))


@dataclass(frozen=True)
class KernelCall(NativeCall):
    """A fused Stripe kernel (``what``: the primitives it computes)."""


@dataclass(frozen=True)
class RuleCall(NativeCall):
    """An equation rendered by its primitive's ``native`` rule: a LAPACK routine or a
    control-flow loop (``what``: ``native <primitive>``)."""


@dataclass(frozen=True)
class HostCall:
    """An equation run with its NumPy ``impl`` on the slots ``reads``, its results
    stored in ``writes``. ``forwards``: the primitive returns its operands as they
    are (``optimization_barrier``), so its results are no new buffers."""

    what: str
    impl: Callable
    params: dict
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    multiple_results: bool
    forwards: bool
    frees: tuple[int, ...] = ()

    name = "host"

    def label(self) -> str:
        return f"a host step ({self.impl.__qualname__})"

    def run(self, env: list, args: tuple, alias, alloc) -> int:
        r = self.impl(*[env[s] for s in self.reads], **self.params)
        if self.multiple_results:
            for s, x in zip(self.writes, r):
                env[s] = np.asarray(x)
        else:
            env[self.writes[0]] = np.asarray(r)
        return 0


@dataclass(frozen=True)
class Plan:
    """The steps of an executable over the slots of one environment list.

    ``slots`` numbers the values (constants, arguments, then the rest) and holds the
    values known before a call; ``outputs`` are the slots returned; ``last_use``
    maps a slot to the last step reading it and ``made_at`` an output buffer of a
    native call to the step writing it (for donation, ``alias_plan``: a donated
    argument it takes wins over the dying operand ``inplace.buffer_reuses`` chose)."""

    steps: tuple
    slots: Slots
    n_consts: int
    n_args: int
    outputs: tuple[int, ...]
    last_use: Mapping[int, int]
    made_at: Mapping[int, int]
    avals: Mapping[int, object]

    def nbytes(self, slot: int) -> int:
        a = self.avals[slot]
        return math.prod(a.shape) * np.dtype(a.dtype).itemsize

    def output_buffers(self) -> set[int]:
        """The slots returned that are buffers (not literals; constants included)."""
        return {s for s in self.outputs if s < self.n_consts or not self.slots.is_fixed(s)}

    def peak_temp_bytes(self, scratch: Mapping[str, int], aliased: Collection[int] = ()) -> int:
        """Peak bytes of the intermediates (each freed after its last use) plus the
        ``scratch`` a native call allocates while it runs (``{function name: bytes}``);
        ``aliased``: outputs given donated arguments' buffers (:meth:`alias_plan`)."""
        first = self.n_consts + self.n_args          # the first slot a step may write
        outs = self.output_buffers()
        into = {s: a for st in self.steps if isinstance(st, NativeCall)
                for s, a in zip(st.buffers, st.allocs) if isinstance(a, int)}
        for s in outs - set(aliased):               # operands made in an output's buffer
            while s in into:
                s = into[s]
                outs.add(s)

        def temp(s: int) -> int:
            return (self.nbytes(s) if s >= first and s not in outs
                    and not self.slots.is_fixed(s) else 0)
        return peak_bytes([st.writes for st in self.steps], [st.frees for st in self.steps],
                          temp, [scratch.get(st.name, 0) if isinstance(st, NativeCall) else 0
                                 for st in self.steps],
                          [dict(zip(st.writes, st.reads))
                           if isinstance(st, HostCall) and st.forwards else
                           {s: a for s, a in zip(st.buffers, st.allocs) if isinstance(a, int)}
                           if isinstance(st, NativeCall) else None
                           for st in self.steps])


def build_plan(graph, consts: list, steps: list, stripe: dict, lib, pymod,
               reuse: Mapping | None = None) -> Plan:
    """The plan running ``steps`` (partitioned and rendered from ``graph``, whose
    constants are ``consts``) with the functions of ``lib`` (ctypes) or ``pymod``
    (the extension module over the same shared object, preferred when loaded); a
    value in ``reuse`` (``{y: x}``) is written into its operand's buffer."""
    reuse = reuse or {}
    slots = Slots(graph.constvars, consts, graph.invars)
    avals = {i: v.aval for i, v in enumerate(graph.constvars + graph.invars)}
    made = []
    for st in steps:
        name, what = describe(st)
        if isinstance(st, (KernelStep, CallStep)):
            buffers, allocs = [], []
            for d, a in step_buffers(st, stripe):
                s = slots.read(a) if d == "in" else slots.write(a)
                avals[s] = a.aval
                buffers.append(s)
                allocs.append(None if d == "in" else slots.read(reuse[a]) if a in reuse
                              else (a.aval.shape, np.dtype(a.aval.dtype)))
            cls = KernelCall if isinstance(st, KernelStep) else RuleCall
            made.append(cls(name, what, _entry(lib, pymod, name), tuple(buffers), tuple(allocs),
                            None if pymod is not None else ctypes.c_void_p * len(buffers)))
        else:
            e = st.eqn
            reads = tuple(slots.read(a) for a in e.inputs)
            writes = tuple(slots.write(v) for v in e.outputs)
            for a, s in zip(list(e.inputs) + list(e.outputs), reads + writes):
                avals[s] = a.aval
            made.append(HostCall(what, e.prim.rule("impl"), e.params, reads, writes,
                                 e.prim.multiple_results,
                                 bool(e.prim.rules.get("forwards_operands", False))))
    outputs = tuple(slots.read(a) for a in graph.outvars)
    for s, a in zip(outputs, graph.outvars):
        avals[s] = a.aval
    keep = set(outputs) | set(slots.fixed)
    life = lifetimes([st.reads for st in made], [st.writes for st in made], keep)
    final = tuple(replace(st, frees=f) for st, f in zip(made, life.frees))
    made_at = {s: n for n, st in enumerate(final) if isinstance(st, NativeCall)
               for s in st.writes}
    return Plan(final, slots, len(graph.constvars), len(graph.invars), outputs,
                life.last_use, made_at, avals)


def _entry(lib, pymod, name: str) -> Callable:
    """The C function ``name``: the extension module's wrapper when loaded, else the
    ctypes function (typed ``int64_t (void **)``)."""
    if pymod is not None:
        return getattr(pymod, name)
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int64
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    return fn
