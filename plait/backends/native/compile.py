"""Compile a closed graph with the native backend and run it."""
from __future__ import annotations

import ctypes
import os
import time
import weakref

import numpy as np
from typing import Sequence

from plait.backends.native import control  # noqa: F401  (registers the native rules)
from plait.backends.native import gemm, lapack  # noqa: F401  (native rules)
from plait.backends.native.cprogram import CProgram, CallStep, step_buffers, driver_source
from plait.backends.native.launch import Launch, launch
from plait.backends.native.partition import KernelStep, partition
from plait.codegen.c_pymodule import module_source
from plait.codegen.c_stripe import PRELUDE, decode_status
from plait.codegen.toolchain import build_shared_object, require_toolchain
from plait.core.graph import (ClosedGraph, Literal, closure_convert, reset_graph_runner,
                              set_graph_runner)
from plait.core.printer import pp_graph
from plait.errors import PlaitMemoryError
from plait.passes.inline import inline
from plait.runtime import kernel_cache, metrics
from plait.runtime.cpuinfo import cpu_info
from plait.backends.native.target import host_target


class NativeExecutable:
    """Runs native kernels (ctypes calls into one shared object) and host steps in order."""

    def __init__(self, prepared: "Prepared", loaded: "tuple | None"):
        self.prepared = prepared
        closed, steps, stripe = prepared.closed, prepared.steps, prepared.stripe
        g = closed.graph
        self.closed = closed
        # (ctypes library, extension module or None) of the program's shared object
        self.lib, self.pymod = loaded if loaded is not None else (None, None)
        slot: dict = {}
        for v in g.constvars + g.invars:
            slot[v] = len(slot)
        self.consts = [c._value if hasattr(c, "_value") else np.asarray(c) for c in closed.consts]
        self.literals: list[tuple[int, np.ndarray]] = []   # scalar operands of native calls
        self.n_in = len(g.invars)
        plan = []
        for st in steps:
            if isinstance(st, (KernelStep, CallStep)):
                if self.pymod is not None:
                    fn = getattr(self.pymod, st.name)
                else:
                    fn = getattr(self.lib, st.name)
                    fn.restype = ctypes.c_int64
                    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
                bufs = []   # (slot, None) for inputs, (slot, (shape, dtype)) for outputs
                for d, a in step_buffers(st, stripe):
                    if d == "in":
                        if isinstance(a, Literal):
                            slot[a] = len(slot)
                            self.literals.append((slot[a], np.ascontiguousarray(a.val)))
                        bufs.append((slot[a], None))
                    else:
                        slot[a] = len(slot)
                        bufs.append((slot[a], (a.aval.shape, np.dtype(a.aval.dtype))))
                plan.append((True, fn, tuple(bufs), None,
                             None if self.pymod is not None else ctypes.c_void_p * len(bufs)))
            else:
                e = st.eqn
                ins = tuple(("lit", a.val) if isinstance(a, Literal) else ("var", slot[a])
                            for a in e.inputs)
                for v in e.outputs:
                    slot[v] = len(slot)
                plan.append((False, e.prim.rule("impl"), ins,
                             tuple(slot[v] for v in e.outputs), (e.params, e.prim.multiple_results)))
        self.entry = (ctypes.cast(getattr(self.lib, prepared.entry), ctypes.c_void_p).value
                      if prepared.entry and self.lib is not None else None)
        self._out_buffers = [(tuple(a.aval.shape), np.dtype(a.aval.dtype)) for a in g.outvars]
        self.n_slots = len(slot)
        self.out = [("lit", a.val) if isinstance(a, Literal) else ("var", slot[a])
                    for a in g.outvars]
        # free each intermediate after its last use, so memory is reused by liveness
        keep = {i for k, i in self.out if k == "var"} | set(range(len(self.consts)))
        last: dict[int, int] = {}
        for n, (native, _, ins, _, _) in enumerate(plan):
            for s in (ins if not native else [s for s, o in ins if o is None]):
                if isinstance(s, tuple):
                    if s[0] == "var":
                        last[s[1]] = n
                else:
                    last[s] = n
        frees: list[list[int]] = [[] for _ in plan]
        for s, n in last.items():
            if s not in keep:
                frees[n].append(s)
        self.plan = [p + (tuple(f),) for p, f in zip(plan, frees)]
        self._avals = {slot[v]: v.aval for v in slot}
        self._last_use = last
        self._made_at = {s: n for n, (native, _, ins, _, _) in enumerate(plan) if native
                         for s, o in ins if o is not None}

    def alias_plan(self, donated: Sequence[int]) -> dict[int, int]:
        """Which output buffer reuses which donated argument's buffer: ``{output slot:
        argument index}``. An output made by a native kernel takes a donated argument of
        its shape and dtype whose last use is in an earlier step (so the kernel never
        reads what it overwrites); each argument serves one output."""
        nc = len(self.consts)
        free_args = [i for i in donated if 0 <= i < self.n_in]
        plan: dict[int, int] = {}
        for k, s in self.out:
            if k != "var" or s not in self._made_at or s in plan:
                continue
            for i in free_args:
                a, o = self._avals[nc + i], self._avals[s]
                if (a.shape == o.shape and a.dtype == o.dtype
                        and self._last_use.get(nc + i, -1) < self._made_at[s]):
                    plan[s] = i
                    free_args.remove(i)
                    break
        return plan

    def run_donating(self, args, donated: Sequence[int]) -> list:
        """Run with the arguments at ``donated`` given up: their buffers (when writeable,
        contiguous and not views) become output buffers per :meth:`alias_plan`."""
        usable = [i for i in donated if isinstance(args[i], np.ndarray)
                  and args[i].base is None and args[i].flags.writeable
                  and args[i].flags.c_contiguous]
        return self._run(args, None, self.alias_plan(usable))

    def kernel_count(self) -> int:
        return sum(1 for s in self.prepared.steps if isinstance(s, KernelStep))

    def __call__(self, *args) -> list:
        return self._run(args, None)

    def launch(self, *args, deps: tuple = ()) -> tuple[list, Launch] | None:
        """Queue the whole program on the native worker thread and return at once:
        ``(outputs, launch)``, the outputs valid after ``launch.wait()`` (which raises
        ``PlaitMemoryError`` if the program ran out of memory). ``deps`` are pending
        launches writing some of ``args``. None when the program is not fully native
        (host steps) or the runtime refused; call it then."""
        if self.entry is None:
            return None
        if len(args) != self.n_in:
            raise TypeError(f"executable takes {self.n_in} arguments, got {len(args)}")
        ins = [_c_order(a) for a in self.consts + list(args)]
        outs = [_alloc(shape, dt, "an output buffer") for shape, dt in self._out_buffers]
        job = launch(self.entry, ins, outs, self.pymod, deps, self._describe)
        return None if job is None else (outs, job)

    def _describe(self, status: int) -> str:
        """The message of a native allocation failure ``status``."""
        nbytes, where = decode_status(status)
        funcs = self.prepared.functions
        if 0 < where <= len(funcs):
            name, ops = funcs[where - 1]
            what = f"a temporary of kernel {name} ({ops})"
        else:
            what = "an intermediate buffer"
        return (f"out of memory running {self.closed.graph.name or 'a compiled function'}: "
                f"{what} of {_size(nbytes)} could not be allocated. {_ADVICE}")

    def profile(self, *args, repeat: int = 5) -> list[tuple[str, str, float]]:
        """Best-of-``repeat`` seconds of every step: ``[(step, what it computes, s)]``."""
        best: list[float] = []
        for _ in range(repeat):
            times: list[float] = []
            self._run(args, times)
            best = times if not best else [min(a, b) for a, b in zip(best, times)]
        return [(name, what, t) for (name, what), t in zip(self._step_names(), best)]

    def profile_blocks(self, *args, repeat: int = 3) -> list[tuple[str, str, float]]:
        """Seconds per call of every Stripe kernel block, ``[(kernel/block, Tile statement, s)]``,
        averaged over ``repeat`` calls (compile with ``PLAIT_PROFILE=1``)."""
        if not self.prepared.timed:
            from plait.errors import PlaitValueError
            raise PlaitValueError("block timers are compiled in only with PLAIT_PROFILE=1 "
                                  "(or plait.config.profile = True) before the first call")
        timers = {}
        for st in self.prepared.steps:
            if isinstance(st, KernelStep):
                fn = getattr(self.lib, f"{st.name}_times")
                fn.restype = ctypes.POINTER(ctypes.c_double)
                blocks = [b for b in self.prepared.stripe[st.name][1].entry.stmts
                          if hasattr(b, "idxs")]
                timers[st.name] = (fn(), blocks)
        for ptr, blocks in timers.values():
            for i in range(len(blocks)):
                ptr[i] = 0.0
        for _ in range(repeat):
            self._run(args, None)
        out = []
        for name, (ptr, blocks) in timers.items():
            for i, b in enumerate(blocks):
                out.append((f"{name}/{b.name}", " ".join(b.comments)[:120], ptr[i] / repeat))
        return out

    def _step_names(self) -> list[tuple[str, str]]:
        out = []
        for st in self.prepared.steps:
            if isinstance(st, KernelStep):
                out.append((st.name, ", ".join(e.prim.name for e in st.eqns)))
            elif isinstance(st, CallStep):
                out.append((st.name, f"native {st.eqn.prim.name}"))
            else:
                out.append(("host", st.eqn.prim.name))
        return out

    def _run(self, args, times: list | None, alias: dict[int, int] | None = None) -> list:
        if len(args) != self.n_in:
            raise TypeError(f"executable takes {self.n_in} arguments, got {len(args)}")
        env = [None] * self.n_slots
        nc = len(self.consts)
        env[:nc] = self.consts
        env[nc:nc + len(args)] = args
        for s, v in self.literals:
            env[s] = v
        for native, fn, ins, outs, extra, free in self.plan:
            if times is not None:
                t0 = time.perf_counter()
            if native:
                arrays = []
                for s, out in ins:
                    if out is None:
                        a = env[s]
                        if not a.flags.c_contiguous:
                            a = env[s] = np.ascontiguousarray(a)
                    elif alias and s in alias:
                        a = env[s] = args[alias[s]]
                    else:
                        a = env[s] = _alloc(out[0], out[1],
                                            f"the result buffer of kernel "
                                            f"{getattr(fn, '__name__', '?')}")
                    arrays.append(a)
                if extra is None:          # extension-module entry point
                    status = fn(arrays)
                else:                      # ctypes entry point
                    status = fn(extra(*[a.__array_interface__["data"][0] for a in arrays]))
                if status:
                    raise PlaitMemoryError(self._describe(status))
            else:
                params, multi = extra
                token = set_graph_runner(_run_subgraph)    # sub-graphs run natively too
                try:
                    r = fn(*[env[i] if k == "var" else i for k, i in ins], **params)
                except MemoryError as e:
                    if isinstance(e, PlaitMemoryError):
                        raise
                    raise PlaitMemoryError(
                        f"out of memory in a host step ({fn.__qualname__}) of "
                        f"{self.closed.graph.name or 'a compiled function'}: a buffer "
                        f"could not be allocated ({e}). {_ADVICE}") from e
                finally:
                    reset_graph_runner(token)
                if multi:
                    for s, x in zip(outs, r):
                        env[s] = np.asarray(x)
                else:
                    env[outs[0]] = np.asarray(r)
            for s in free:
                env[s] = None
            if times is not None:
                times.append(time.perf_counter() - t0)
        return [env[i] if k == "var" else i for k, i in self.out]

    def memory_analysis(self, donated: Sequence[int] = ()) -> dict:
        """Argument, output and peak intermediate bytes: intermediates are freed after
        their last use, and a native step adds the temporaries it allocates while it
        runs (per-thread scratch, hidden buffers such as argmax's, loop carries)."""
        def nbytes(s):
            a = self._avals[s]
            return int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize
        nc = len(self.consts)
        args = sum(nbytes(s) for s in range(nc, nc + self.n_in))
        outs = {i for k, i in self.out if k == "var"}
        live, peak = 0, 0
        root: dict[int, int] = {}     # output slot of a forwarding host step -> its buffer
        refs: dict[int, int] = {}     # buffer slot -> live slots naming it
        for st, (native, _, ins, step_outs, _, free) in zip(self.prepared.steps, self.plan):
            if not native and st.eqn.prim.rules.get("forwards_operands", False):
                made = []             # an identity (optimization_barrier): no new buffer
                for (k, i), o in zip(ins, step_outs):
                    if k == "var":
                        b = root[o] = root.get(i, i)
                        refs[b] = refs.get(b, 1) + 1
            else:
                made = [s for s, o in ins if o is not None] if native else list(step_outs)
            live += sum(nbytes(s) for s in made if s not in outs)
            scratch = self.prepared.scratch.get(st.name, 0) if native else 0
            peak = max(peak, live + scratch)
            for s in free:
                b = root.get(s, s)
                n = refs.pop(b, 1) - 1
                if n > 0:
                    refs[b] = n
                elif b >= nc + self.n_in and b not in outs:
                    live -= nbytes(b)
        alias = sum(nbytes(s) for s in self.alias_plan(donated))
        return {"argument_bytes": args, "output_bytes": sum(nbytes(s) for s in outs),
                "constant_bytes": sum(c.nbytes for c in self.consts),
                "peak_temp_bytes": peak, "alias_bytes": alias}

    def as_text(self, stage: str = "c") -> str:
        """See :meth:`Prepared.as_text`."""
        return self.prepared.as_text(stage)


class Prepared:
    """Everything before the C compiler: kernel partition, Tile, Stripe, C source."""

    def __init__(self, closed: ClosedGraph):
        self.closed = inline(closed)
        dump = _dump_dir(self.closed)
        from plait.config import config
        self.timed = config.profile
        cprog = CProgram(host_target(), dump, self.timed)
        self.steps = cprog.native_steps(partition(self.closed.graph))
        self.stripe = cprog.stripe
        self.functions = cprog.functions     # numbered kernels, for failure messages
        self.scratch = cprog.scratch         # name -> peak bytes a C function allocates
        self.source = PRELUDE + "\n\n" + cprog.source()
        self.entry = None     # the whole program as one C function, when fully native
        self.native = any(isinstance(s, (KernelStep, CallStep)) for s in self.steps)
        if self.native and all(isinstance(s, (KernelStep, CallStep)) for s in self.steps):
            self.entry = "plait_run"
            self.source += ("\n\n" + driver_source("plait_main", closure_convert(self.closed),
                                               self.steps, self.stripe)
                            + "\n\nint64_t plait_run(void **ins, void **outs) "
                              "{ return plait_main(ins, outs); }\n")
        if dump:
            for stage, fname in (("graph", "graph.txt"), ("kernels", "kernels.txt"),
                                 ("tile", "tile.txt"), ("c", "kernels.c")):
                with open(os.path.join(dump, fname), "w") as f:
                    f.write(self.as_text(stage))

    def executable(self, loaded: "tuple | None") -> NativeExecutable:
        """The executable over ``loaded``, the program's ``(library, module)`` (None when
        the program has no kernels)."""
        return NativeExecutable(self, loaded)

    def as_text(self, stage: str = "c") -> str:
        """``c`` (generated source), ``kernels`` (partition), ``stripe``/``stripe-opt``, ``tile``."""
        if stage == "c":
            return self.source
        if stage == "kernels":
            lines = []
            for st in self.steps:
                if isinstance(st, KernelStep):
                    lines.append(f"{st.name}: " + ", ".join(e.prim.name for e in st.eqns))
                elif isinstance(st, CallStep):
                    lines.append(f"{st.name}: native {st.eqn.prim.name}")
                else:
                    lines.append(f"host: {st.eqn.prim.name}")
            return "\n".join(lines)
        if stage == "tile":
            from plait.tile.printer import format_program
            return "\n\n".join(format_program(st.program) for st in self.steps
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


def _dump_dir(closed: ClosedGraph) -> str | None:
    """``$PLAIT_DUMP_DIR/<function>_<hash of its graph>`` (created), or None."""
    from plait.config import config
    if not config.dump_dir:
        return None
    import hashlib
    text = pp_graph(closed)
    d = os.path.join(config.dump_dir, f"{closed.graph.name or 'graph'}_"
                     f"{hashlib.sha256(text.encode()).hexdigest()[:10]}")
    os.makedirs(d, exist_ok=True)
    return d


def stage_text(closed: ClosedGraph, stage: str) -> str:
    """A compilation stage's text (``kernels``, ``tile``, ``stripe``, ``stripe-opt``, ``c``),
    produced without invoking the C compiler."""
    return Prepared(closed).as_text(stage)


_MODULE_NAME = "plait_k_MODULE"


def compile_native(closed: ClosedGraph) -> NativeExecutable:
    """Compile ``closed`` to native code (raises CompileError without a C compiler)."""
    tc = require_toolchain()
    t0 = time.perf_counter()
    prep = Prepared(closed)
    loaded = None
    if prep.native:
        # the key covers the module wrapper too (its name, which is the key, left out)
        wrapper = module_source(_MODULE_NAME, {
            st.name: (len(st.inputs), len(st.outputs)) for st in prep.steps
            if isinstance(st, (KernelStep, CallStep))}, prep.entry) if tc.python_include else ""
        key = kernel_cache.entry_key(prep.source, wrapper, tc.identity(),
                                     ",".join(sorted(cpu_info().flags)))
        full, module = prep.source, None
        if wrapper:
            module = f"plait_k_{key}"
            full += "\n\n" + wrapper.replace(_MODULE_NAME, module)
        loaded = kernel_cache.load(key, lambda out: build_shared_object(full, out, tc),
                                   lambda path: _open_library(path, module))
    metrics.bump("native_compile_s", time.perf_counter() - t0)
    return prep.executable(loaded)


_ADVICE = ("Free memory or raise the process's memory limit (ulimit -v, RLIMIT_AS), use "
           "smaller inputs, or compute in chunks (for example plait.lax.map over slices).")


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit} ({n} bytes)"
    return f"{n} bytes"


def _alloc(shape: tuple, dtype: np.dtype, what: str) -> np.ndarray:
    """``np.empty``, raising ``PlaitMemoryError`` that names the buffer on failure."""
    try:
        return np.empty(shape, dtype)
    except MemoryError as e:
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        raise PlaitMemoryError(f"out of memory: {what}, shape {tuple(shape)} "
                               f"{np.dtype(dtype).name}, {_size(n)}, could not be allocated. "
                               f"{_ADVICE}") from e


def _c_order(a) -> np.ndarray:
    """``a`` as a C-contiguous array, not copied when it already is one (a buffer that
    an earlier launch is still writing must be passed as is)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _openmp_defaults() -> None:
    """Threads that spin briefly, then sleep. libgomp's default spins ~300k rounds,
    which makes every barrier cost a scheduler time slice when the cores are shared
    (measured: a 256^2 matmul at 4 GFLOP/s against 150 with passive waiting, on 2 busy
    cores; the W6 MLP step at 3.7 ms against 0.65 ms with two processes on 2 cores).
    Purely passive waiting pays a wake-up of tens of microseconds per parallel loop on
    an idle machine (W6 step 0.81 ms alone); a 2000-round spin keeps most of both
    (0.47 ms alone, 0.84-0.96 ms with two processes). libgomp reads these when the
    first kernel library loads it; a user's setting wins."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("GOMP_SPINCOUNT", "2000")


_SUBGRAPHS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _run_subgraph(graph, args) -> list:
    """Run a control-flow body or branch with its cached native executable."""
    exe = _SUBGRAPHS.get(graph)
    if exe is None:
        exe = _SUBGRAPHS[graph] = compile_native(ClosedGraph(graph, []))
    return exe(*[np.asarray(a) for a in args])


def _open_library(path: str, module: str | None) -> tuple:
    """``(ctypes library, extension module or None)`` of a cached shared object (raises
    OSError or ImportError when it does not load; the kernel cache then rebuilds it)."""
    _openmp_defaults()
    lib = ctypes.CDLL(path)
    lapack.init_library(lib)         # LAPACK pointers, for programs that call LAPACK
    gemm.init_library(lib)           # GEMM library addresses, for programs that call it
    return lib, (_load_module(module, path) if module else None)


def _load_module(name: str, path: str):
    """Import the kernels' extension module from the cached shared object (kept in the
    kernel cache's bounded index; CPython's own ``sys.modules`` entry is dropped)."""
    import importlib.machinery
    import importlib.util
    import sys
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    sys.modules.pop(name, None)
    return mod
