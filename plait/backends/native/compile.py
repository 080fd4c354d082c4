"""Compile a closed graph with the native backend and run it."""
from __future__ import annotations

import ctypes
import time

import numpy as np

from plait.backends.native.partition import HostStep, KernelStep, partition
from plait.codegen.c_stripe import PRELUDE, render_program
from plait.codegen.toolchain import build_shared_object, require_toolchain
from plait.core.graph import ClosedGraph, Literal
from plait.core.printer import pp_graph
from plait.passes.inline import inline
from plait.runtime import kernel_cache, metrics
from plait.runtime.cpuinfo import cpu_info
from plait.stripe import lower as stripe_lower
from plait.stripe.passes import run_passes
from plait.stripe.targets import host_target


class NativeExecutable:
    """Runs native kernels (ctypes calls into one shared object) and host steps in order."""

    def __init__(self, closed: ClosedGraph, steps: list, stripe: dict, source: str,
                 lib_path: str | None):
        g = closed.graph
        self.closed = closed
        self.steps_src = steps
        self.stripe = stripe
        self.source = source
        self.lib = ctypes.CDLL(lib_path) if lib_path else None
        slot: dict = {}
        for v in g.constvars + g.invars:
            slot[v] = len(slot)
        self.consts = [c._value if hasattr(c, "_value") else np.asarray(c) for c in closed.consts]
        self.n_in = len(g.invars)
        plan = []
        for st in steps:
            if isinstance(st, KernelStep):
                fn = getattr(self.lib, st.name)
                fn.restype = None
                fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
                prog = stripe[st.name][1]
                # buffers in program order: (slot, None) for inputs, (slot, (shape, dtype))
                for b in prog.buffers:
                    if b.kind == "out":
                        v = st.outputs[b.name]
                        slot[v] = len(slot)
                order = {b.name: k for k, b in enumerate(prog.buffers)}
                bufs = [None] * len(prog.buffers)
                for b in prog.buffers:
                    if b.kind == "in":
                        bufs[order[b.name]] = (slot[st.inputs[b.name]], None)
                    else:
                        v = st.outputs[b.name]
                        bufs[order[b.name]] = (slot[v], (v.aval.shape, np.dtype(v.aval.dtype)))
                plan.append((True, fn, tuple(bufs), None, ctypes.c_void_p * len(bufs)))
            else:
                e = st.eqn
                ins = tuple(("lit", a.val) if isinstance(a, Literal) else ("var", slot[a])
                            for a in e.inputs)
                for v in e.outputs:
                    slot[v] = len(slot)
                plan.append((False, e.prim.rule("impl"), ins,
                             tuple(slot[v] for v in e.outputs), (e.params, e.prim.multiple_results)))
        self.plan = plan
        self.n_slots = len(slot)
        self.out = [("lit", a.val) if isinstance(a, Literal) else ("var", slot[a])
                    for a in g.outvars]

    def kernel_count(self) -> int:
        return sum(1 for s in self.steps_src if isinstance(s, KernelStep))

    def __call__(self, *args) -> list:
        if len(args) != self.n_in:
            raise TypeError(f"executable takes {self.n_in} arguments, got {len(args)}")
        env = [None] * self.n_slots
        nc = len(self.consts)
        env[:nc] = self.consts
        env[nc:nc + len(args)] = args
        for native, fn, ins, outs, extra in self.plan:
            if native:
                ptrs = []
                for s, out in ins:
                    if out is None:
                        a = env[s]
                        if not a.flags.c_contiguous:
                            a = env[s] = np.ascontiguousarray(a)
                    else:
                        a = env[s] = np.empty(out[0], out[1])
                    ptrs.append(a.__array_interface__["data"][0])
                fn(extra(*ptrs))
            else:
                params, multi = extra
                r = fn(*[env[i] if k == "var" else i for k, i in ins], **params)
                if multi:
                    for s, x in zip(outs, r):
                        env[s] = np.asarray(x)
                else:
                    env[outs[0]] = np.asarray(r)
        return [env[i] if k == "var" else i for k, i in self.out]

    def as_text(self, stage: str = "c") -> str:
        """``c`` (generated source), ``kernels`` (partition), ``stripe``/``stripe-opt``, ``tile``."""
        if stage == "c":
            return self.source
        if stage == "kernels":
            lines = []
            for st in self.steps_src:
                if isinstance(st, KernelStep):
                    lines.append(f"{st.name}: " + ", ".join(e.prim.name for e in st.eqns))
                else:
                    lines.append(f"host: {st.eqn.prim.name}")
            return "\n".join(lines)
        if stage == "tile":
            from plait.tile.printer import format_program
            return "\n\n".join(format_program(st.program) for st in self.steps_src
                               if isinstance(st, KernelStep))
        if stage in ("stripe", "stripe-opt"):
            from plait.stripe import to_text
            return "\n\n".join(to_text(p[0 if stage == "stripe" else 1])
                               for p in self.stripe.values())
        if stage == "graph":
            return pp_graph(self.closed)
        from plait.errors import PlaitValueError
        raise PlaitValueError(f"unknown stage {stage!r}: use graph, kernels, tile, stripe, "
                              f"stripe-opt or c")


def compile_native(closed: ClosedGraph) -> NativeExecutable:
    """Compile ``closed`` to native code (raises CompileError without a C compiler)."""
    tc = require_toolchain()
    t0 = time.perf_counter()
    closed = inline(closed)
    steps = partition(closed.graph)
    target = host_target()
    stripe = {}
    parts = [PRELUDE]
    for st in steps:
        if isinstance(st, KernelStep):
            before = stripe_lower(st.program)
            after = run_passes(before, target)
            stripe[st.name] = (before, after)
            parts.append(render_program(after, st.name))
    source = "\n\n".join(parts)
    lib = None
    if stripe:
        key = kernel_cache.entry_key(source, tc.identity(), ",".join(sorted(cpu_info().flags)))
        lib = kernel_cache.get_or_build(key, lambda out: build_shared_object(source, out, tc))
    metrics.bump("native_compile_s", time.perf_counter() - t0)
    return NativeExecutable(closed, steps, stripe, source, lib)
