"""One C program per executable: kernels, graph drivers, and control-flow loops.

``CProgram.kernel`` lowers a kernel step through Stripe and renders it as
``int64_t name(void **bufs)``. ``CProgram.graph_function`` renders a whole sub-graph as
``int64_t name(void **ins, void **outs)``: a driver that allocates the intermediates,
calls the graph's kernels and control-flow functions in order, and frees each buffer
after its last use. Every function returns 0 or an allocation-failure status
(``c_stripe.oom_status``); a driver stops at the first failure, frees what it holds
and returns the status. ``CProgram.scratch`` records the peak bytes each function
allocates beyond its arguments (``memory_analysis`` adds them to the peak). Control-flow primitives provide a ``native`` rule (registered in
``control.py``) that renders a loop or branch calling such drivers, so a ``while``,
``scan`` or ``cond`` whose bodies are fully native runs without returning to Python.
A sub-graph with a host step is not native; its equation stays a host step.
"""
from __future__ import annotations

import itertools
import logging
import math
import time
from dataclasses import dataclass, replace

import numpy as np

from plait.backends.liveness import Lifetimes, lifetimes, peak_bytes
from plait.backends.native.inplace import buffer_reuses, carry_updates, kept
from plait.backends.native.partition import HostStep, KernelStep, partition
from plait.codegen.c_cpu import render_program, temp_bytes
from plait.codegen.c_expr import C_TYPES, literal
from plait.codegen.c_stripe import oom_status
from plait.codegen.toolchain import find_toolchain
from plait.backends.native.openmp import omp_threads
from plait.config import config
from plait.core.graph import Graph, Literal, Var
from plait.passes.inline import inline_graph
from plait.profiler import events
from plait.runtime import progress
from plait.stripe import lower as stripe_lower
from plait.stripe.alias import pointwise_update
from plait.stripe.passes import run_passes
from plait.tile.lowering import STRIPE_DTYPES


@dataclass
class CallStep:
    """An equation rendered as ``int64_t name(void **bufs)`` (inputs, then outputs)."""

    name: str
    eqn: object

    @property
    def inputs(self) -> list:
        return list(self.eqn.inputs)

    @property
    def outputs(self) -> list:
        return list(self.eqn.outputs)


def nbytes(aval) -> int:
    return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize


def c_literal(a: Literal) -> str:
    """A C expression of a scalar literal's value, in its storage type."""
    return literal(a.val.item(), STRIPE_DTYPES[np.dtype(a.aval.dtype)])


def storage_type(aval) -> str:
    return C_TYPES[STRIPE_DTYPES[np.dtype(aval.dtype)]]


class CProgram:
    """Accumulates the C functions of one executable."""

    def __init__(self, target, dump_dir: str | None = None, timed: bool = False):
        self.target = target
        self.dump_dir = dump_dir
        self.timed = timed
        self.parts: list[str] = []
        self.stripe: dict = {}
        self._ids = itertools.count()
        self._graphs: dict[int, tuple[Graph, str | None]] = {}
        # rendered kernels, numbered from 1 in allocation-failure statuses
        self.functions: list[tuple[str, str]] = []      # (name, what it computes)
        self.scratch: dict[str, int] = {}               # name -> peak bytes it allocates
        # (Tile program without its name, updates asked) -> (kernel, outputs it allows)
        self._kernels: dict = {}
        # driver name -> the outputs it may write over their inputs (graph_function)
        self.in_place: dict[str, frozenset[int]] = {}
        self._movable: list[tuple[str, str]] = []   # (name, text): self-contained kernels

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def kernel(self, st: KernelStep, updates: tuple = ()) -> frozenset:
        """Lower, optimize and render one kernel. A kernel whose Tile program equals an
        earlier one's (up to its name: a repeated step of an unrolled loop, a layer
        applied twice) reuses that kernel's Stripe and calls its C function.
        ``updates`` are ``(input buffers, output buffer)`` pairs the caller would like to
        pass in the same memory; returns the outputs for which the optimized program
        allows it (``alias.pointwise_update``), whose pointers are then not ``restrict``."""
        key = (replace(st.program, name=""), updates)
        same = None if self.timed else self._kernels.get(key)
        if same is not None:
            self.stripe[st.name] = self.stripe[same[0]]
            self.scratch[st.name] = self.scratch[same[0]]
            self.parts.append(f"PLAIT_KERNEL int64_t {st.name}(void **bufs) "
                              f"{{ return {same[0]}(bufs); }}")
            return same[1]
        with events.span(f"{st.name}: Tile -> Stripe", "compile"):
            before = stripe_lower(st.program)
        after = run_passes(before, self.target, self.dump_dir, verify=config.checks)
        allowed = frozenset(w for reads, w in updates if pointwise_update(after, reads, w))
        shared = frozenset(n for reads, w in updates if w in allowed for n in (*reads, w))
        self.stripe[st.name] = (before, after)
        self.functions.append((st.name, ", ".join(e.prim.name for e in st.eqns)))
        tc = find_toolchain()
        threads = omp_threads() if tc is not None and tc.openmp else 1
        self.scratch[st.name] = temp_bytes(after, threads)
        text = render_program(after, st.name, self.timed, len(self.functions), shared)
        self.parts.append(text)
        self._movable.append((st.name, text))
        self._kernels[key] = (st.name, allowed)
        return allowed

    def native_steps(self, steps: list, updates: dict | None = None,
                     allowed: dict | None = None, reuses: list = ()) -> list:
        """Render kernels; turn host steps with a ``native`` rule into call steps.
        ``updates`` maps a kernel's name to the pairs :meth:`kernel` is asked about,
        ``reuses`` (``inplace.buffer_reuses``) adds a kernel's dying operands whose
        maker became native code (asking about the others would only cost the
        kernel its ``restrict``), and ``allowed`` receives what it allows, by kernel
        name."""
        out = []
        updates = updates or {}
        allowed = {} if allowed is None else allowed
        dying: dict = {}
        for m, w, _, _, reads, write in reuses:
            dying.setdefault(w, []).append((m, (reads, write)))
        progress.phase("Tile -> Stripe -> C", total=sum(isinstance(s, KernelStep) for s in steps))
        for n, st in enumerate(steps):
            if isinstance(st, KernelStep):
                t0 = time.perf_counter()
                ask = updates.get(st.name, ()) + tuple(
                    pair for m, pair in dying.get(n, ()) if not isinstance(out[m], HostStep))
                allowed[st.name] = self.kernel(st, ask)
                progress.kernel_done()
                if config.log_compiles:
                    logging.getLogger("plait").warning(
                        "plait: kernel %s (%s): lowered, optimized and rendered in %.1f ms",
                        st.name, ", ".join(e.prim.name for e in st.eqns)[:80],
                        1e3 * (time.perf_counter() - t0))
                out.append(st)
                continue
            rule = st.eqn.prim.rules.get("native")
            if rule is not None and (_dtypes_ok(st.eqn)
                                     or st.eqn.prim.rules.get("native_complex", False)):
                name = self.fresh("cf")
                if rule(self, st.eqn, name):
                    out.append(CallStep(name, st.eqn))
                    continue
            out.append(st)
        return out

    def graph_function(self, graph: Graph, carries: tuple = ()) -> str | None:
        """Name of a C driver computing ``graph``, or None if part of it is host-only.
        ``carries`` are ``(input index, output index)`` pairs of a loop's carries: those
        the driver may write over their input (the caller passing the same buffer for
        both) go into ``self.in_place[name]`` as output indices."""
        hit = self._graphs.get(id(graph))
        if hit is not None:
            return hit[1]
        name = self.fresh("g")
        flat = inline_graph(graph)
        parts = partition(flat, self.target, prefix=f"{name}_")
        checks, updates = carry_updates(flat, parts, carries)
        # the caller's output buffers may be a carry's input: only intermediates move
        pairs = buffer_reuses(flat, parts, outputs=False)
        allowed: dict = {}
        steps = self.native_steps(parts, updates, allowed, pairs)
        if any(isinstance(s, HostStep) for s in steps):
            self._graphs[id(graph)] = (graph, None)
            return None
        self.in_place[name] = frozenset(ko for ko, chk in checks.items()
                                        if chk is None or chk[1] in allowed[chk[0]])
        reuse = kept(pairs, steps, allowed)
        self.parts.append(driver_source(name, flat, steps, self.stripe, reuse))
        self.scratch[name] = driver_peak(flat, steps, self.stripe, self.scratch, reuse)
        self._graphs[id(graph)] = (graph, name)   # keeps the graph alive for the id
        return name

    def source(self) -> str:
        return "\n\n".join(self.parts)

    def units(self, full: str, head: str, n: int) -> list[str]:
        """``full`` (``head``, the prelude every unit needs, then this program and what
        follows it) as at most ``n`` translation units to compile at the same time.
        Rendered kernels need only the prelude, so the largest move to the extra units,
        each unit ``head`` plus its kernels, balanced by size; the first unit keeps the
        rest (drivers, library calls and their tables) with the moved kernels'
        prototypes. A program too small to gain stays one unit."""
        if n < 2 or len(full) < 2 * UNIT_MIN_BYTES:
            return [full]
        bins: list[list[str]] = [[] for _ in range(n)]
        sizes = [len(full)] + [len(head)] * (n - 1)
        moved = []
        for name, text in sorted(self._movable, key=lambda k: -len(k[1])):
            k = min(range(1, n), key=sizes.__getitem__)
            if sizes[k] + len(text) >= sizes[0] - len(text):
                continue            # moving it would make this unit the larger one
            bins[k].append(text)
            sizes[k] += len(text)
            sizes[0] -= len(text)
            moved.append(name)
        extra = [head + "\n\n" + "\n\n".join(b) for b in bins[1:] if b]
        if not extra or min(len(u) for u in extra) < UNIT_MIN_BYTES:
            return [full]
        main = full
        for b in bins[1:]:
            for text in b:
                main = main.replace(text, "", 1)
        protos = "".join(f"PLAIT_KERNEL int64_t {k}(void **bufs);\n" for k in moved)
        return [head + "\n\n" + protos + main[len(head):]] + extra


#: below this many bytes of C a translation unit is not worth its own compiler process
#: (each one compiles the prelude again and the link adds a step)
UNIT_MIN_BYTES = 24 * 1024


def _dtypes_ok(eqn) -> bool:
    return all(np.dtype(a.aval.dtype) in STRIPE_DTYPES
               for a in list(eqn.inputs) + list(eqn.outputs))


def step_buffers(st, stripe: dict) -> list[tuple[str, object]]:
    """``[("in", atom) | ("out", var)]`` in the step's C buffer order."""
    if isinstance(st, KernelStep):
        prog = stripe[st.name][1]
        return [("in", st.inputs[b.name]) if b.kind == "in" else ("out", st.outputs[b.name])
                for b in prog.buffers]
    return [("in", a) for a in st.inputs] + [("out", v) for v in st.outputs]


def _driver_lifetimes(graph: Graph, steps: list, stripe: dict) -> tuple[list, Lifetimes]:
    """``(writes, lifetimes)`` of a driver's steps over graph variables: what each step
    writes, and the intermediates each frees (arguments and outputs are not its own)."""
    reads, writes = [], []
    for st in steps:
        bufs = step_buffers(st, stripe)
        reads.append([a for d, a in bufs if d == "in" and isinstance(a, Var)])
        writes.append([a for d, a in bufs if d == "out"])
    keep = set(graph.invars) | {a for a in graph.outvars if isinstance(a, Var)}
    return writes, lifetimes(reads, writes, keep)


def driver_peak(graph: Graph, steps: list, stripe: dict, scratch: dict,
                reuse: dict | None = None) -> int:
    """Peak bytes ``driver_source``'s function holds: its intermediates (each freed
    after its last use) plus the scratch of the step running; a value ``reuse`` puts
    in an operand's buffer (``{y: x}``) holds no buffer of its own."""
    reuse = reuse or {}
    writes, life = _driver_lifetimes(graph, steps, stripe)
    home = _output_homes(graph, reuse)
    return peak_bytes(writes, life.frees, lambda v: 0 if v in home else max(nbytes(v.aval), 1),
                      [scratch.get(st.name, 0) for st in steps],
                      [{y: reuse[y] for y in ws if y in reuse} for ws in writes])


def _output_homes(graph: Graph, reuse: dict) -> dict:
    """``{value: output index}``: each output a step makes, at its first index, and the
    values ``reuse`` chains into it, made in that output's buffer (an output is never a
    reused operand: it outlives every step)."""
    home: dict = {}
    for k, a in enumerate(graph.outvars):
        if isinstance(a, Var) and a not in home and a not in graph.invars:
            home[a] = k
    for y, k in list(home.items()):
        while y in reuse:
            y = reuse[y]
            home[y] = k
    return home


def driver_source(name: str, graph: Graph, steps: list, stripe: dict,
                  reuse: dict | None = None) -> str:
    """``int64_t name(void **ins, void **outs)`` running ``steps``; it returns the first
    failing step's status (0 on success) after freeing its intermediates. A value in
    ``reuse`` (``{y: x}``, :func:`inplace.kept`) is written into its operand's buffer."""
    reuse = reuse or {}
    home = _output_homes(graph, reuse)
    body: list[str] = []
    ptr: dict = {}
    for k, v in enumerate(graph.invars):
        ptr[v] = f"ins[{k}]"
    _, life = _driver_lifetimes(graph, steps, stripe)
    lits = itertools.count()
    temps: list[str] = []
    owned: dict = {}
    for n, st in enumerate(steps):
        bufs = []
        for d, a in step_buffers(st, stripe):
            if d == "in":
                if isinstance(a, Literal):
                    lv = f"lit{next(lits)}"
                    body.append(f"  {storage_type(a.aval)} {lv} = {c_literal(a)};")
                    bufs.append(f"&{lv}")
                else:
                    bufs.append(ptr[a])
            else:
                if a in home:
                    ptr[a] = f"outs[{home[a]}]"
                elif a in reuse:
                    ptr[a] = ptr[reuse[a]]
                    owned[a] = owned.pop(reuse[a])
                else:
                    tv = f"t{len(temps)}"
                    temps.append(tv)
                    size = max(nbytes(a.aval), 1)
                    body.append(f"  {tv} = malloc({size}); "
                                f"if (!{tv}) {{ rc = {oom_status(size, 0)}LL; goto done; }}")
                    ptr[a] = tv
                    owned[a] = tv
                bufs.append(ptr[a])
        body.append(f"  {{ void *b[] = {{{', '.join(bufs)}}}; rc = {st.name}(b); }} "
                    f"if (rc) goto done;")
        for v in life.frees[n]:
            tv = owned.pop(v, None)     # None: a reused operand, or one in an output
            if tv is not None:
                body.append(f"  free({tv}); {tv} = NULL;")
    for k, a in enumerate(graph.outvars):
        if isinstance(a, Literal):
            body.append(f"  {{ {storage_type(a.aval)} l = {c_literal(a)}; "
                        f"memcpy(outs[{k}], &l, sizeof l); }}")
        elif home.get(a) != k:
            body.append(f"  memcpy(outs[{k}], {ptr[a]}, {nbytes(a.aval)});")
    lines = [f"PLAIT_DRIVER static int64_t {name}(void **ins, void **outs) {{", "  int64_t rc = 0;"]
    if temps:
        lines.append(f"  void {', '.join('*' + t + ' = NULL' for t in temps)};")
    lines += body
    if steps:
        lines.append("done:")
    lines += [f"  free({t});" for t in temps]
    lines += ["  return rc;", "}"]
    return "\n".join(lines)
