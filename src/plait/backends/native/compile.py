"""Compile a closed graph with the native backend and run it."""
from __future__ import annotations

import ctypes
import logging
import os
import time
import weakref

import numpy as np
from typing import Sequence

from plait.backends.native import control  # noqa: F401  (registers the native rules)
from plait.backends.native import dynslice, fft, gemm, lapack  # noqa: F401  (native rules)
from plait.backends.native.cprogram import CProgram, CallStep, driver_source, step_buffers
from plait.backends.native.inplace import buffer_reuses, kept
from plait.backends.native.launch import Launch, launch
from plait.backends.native.partition import KernelStep, partition
from plait.backends.native.plan import HostCall, Plan, build_plan, describe
from plait.backends.native.tiered import compile_tiered
from plait.codegen.c_pymodule import load_module, module_source
from plait.codegen.c_cpu import PRELUDE
from plait.codegen.c_expr import op_prelude
from plait.codegen.c_stripe import decode_status
from plait.codegen.toolchain import build_shared_object, require_toolchain
from plait.core.graph import ClosedGraph, closure_convert, reset_graph_runner, set_graph_runner
from plait.cost import eqns_cost
from plait.core.printer import pp_graph
from plait.errors import PlaitMemoryError
from plait.passes.inline import inline
from plait.profiler import events
from plait.runtime import kernel_cache, metrics, progress, recycle
from plait.runtime.cpuinfo import cpu_info
from plait.runtime.heap import keep_heaps
from plait.backends.native.target import host_target
from plait.stripe.targets import Target
from plait.config import config, set_openmp_wait_defaults


class NativeExecutable:
    """Runs native kernels (ctypes calls into one shared object) and host steps in order."""

    def __init__(self, prepared: "Prepared", loaded: "tuple | None"):
        self.prepared = prepared
        self.closed = closed = prepared.closed
        # (ctypes library, extension module or None) of the program's shared object
        self.lib, self.pymod = loaded if loaded is not None else (None, None)
        self.consts = [c._value if hasattr(c, "_value") else np.asarray(c) for c in closed.consts]
        self.n_in = len(closed.graph.invars)
        self.plan: Plan = build_plan(closed.graph, self.consts, prepared.steps, prepared.stripe,
                                     self.lib, self.pymod, prepared.reuse)
        self.entry = (ctypes.cast(getattr(self.lib, prepared.entry), ctypes.c_void_p).value
                      if prepared.entry and self.lib is not None else None)
        self._out_buffers = [(tuple(a.aval.shape), np.dtype(a.aval.dtype))
                             for a in closed.graph.outvars]
        self._env = self.plan.slots.environment()     # copied per call
        self._host = any(isinstance(st, HostCall) for st in self.plan.steps)
        keep_heaps()     # each call's temporaries reuse the last call's pages

    def alias_plan(self, donated: Sequence[int]) -> dict[int, int]:
        """Which output buffer reuses which donated argument's buffer: ``{output slot:
        argument index}``. An output made by a native kernel takes a donated argument of
        its shape and dtype whose last use is in an earlier step (so the kernel never
        reads what it overwrites); each argument serves one output."""
        p = self.plan
        free_args = [i for i in donated if 0 <= i < self.n_in]
        plan: dict[int, int] = {}
        for s in p.outputs:
            if s not in p.made_at or s in plan:
                continue
            for i in free_args:
                a, o = p.avals[p.n_consts + i], p.avals[s]
                if (a.shape == o.shape and a.dtype == o.dtype
                        and p.last_use.get(p.n_consts + i, -1) < p.made_at[s]):
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
        if events.ACTIVE:                  # plait.profiler.trace(): time every step
            from plait.profiler.record import run_recorded
            return run_recorded(self, args)
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
        if events.ACTIVE and job is not None:   # plait.profiler: queued on the C worker
            t = events.now()
            events.complete(f"launch {self.closed.graph.name or 'graph'}", "call", t, t,
                            {"kernels": self.kernel_count()})
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
            stamps: list[tuple[float, float]] = []
            self._run(args, stamps)
            times = [t1 - t0 for t0, t1 in stamps]
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
        return [describe(st) for st in self.prepared.steps]

    def _run(self, args, times: list | None, alias: dict[int, int] | None = None) -> list:
        """Run every step; ``times`` (when a list) gets each step's (start, end) seconds."""
        if len(args) != self.n_in:
            raise TypeError(f"executable takes {self.n_in} arguments, got {len(args)}")
        p = self.plan
        env = list(self._env)
        env[p.n_consts:p.n_consts + len(args)] = args
        # sub-graphs of host steps (control flow) run natively too
        token = set_graph_runner(_run_subgraph) if self._host else None
        try:
            for st in p.steps:
                if times is not None:
                    t0 = time.perf_counter()
                try:
                    status = st.run(env, args, alias, _alloc)
                except MemoryError as e:
                    if isinstance(e, PlaitMemoryError):
                        raise
                    raise PlaitMemoryError(
                        f"out of memory in {st.label()} of "
                        f"{self.closed.graph.name or 'a compiled function'}: a buffer "
                        f"could not be allocated ({e}). {_ADVICE}") from e
                if status:
                    raise PlaitMemoryError(self._describe(status))
                for s in st.frees:
                    env[s] = None
                if times is not None:
                    times.append((t0, time.perf_counter()))
        finally:
            if token is not None:
                reset_graph_runner(token)
        return [env[s] for s in p.outputs]

    def memory_analysis(self, donated: Sequence[int] = ()) -> dict:
        """Argument, output and peak intermediate bytes: intermediates are freed after
        their last use, and a native step adds the temporaries it allocates while it
        runs (per-thread scratch, hidden buffers such as argmax's, loop carries)."""
        p = self.plan
        first = p.n_consts + p.n_args
        outs = p.output_buffers()
        aliased = self.alias_plan(donated)
        return {"argument_bytes": sum(p.nbytes(s) for s in range(p.n_consts, first)),
                "output_bytes": sum(p.nbytes(s) for s in outs),
                "constant_bytes": sum(c.nbytes for c in self.consts),
                "peak_temp_bytes": p.peak_temp_bytes(self.prepared.scratch, aliased),
                "alias_bytes": sum(p.nbytes(s) for s in aliased)}

    def as_text(self, stage: str = "c") -> str:
        """See :meth:`Prepared.as_text`."""
        return self.prepared.as_text(stage)


def _user_tile(step) -> str:
    """The user Tile statements (``plait.tile.op``) a kernel holds, as written, as comments."""
    out = []
    for e in step.eqns:
        if e.prim.has_rule("tile_comment"):
            out.extend("// " + ln for ln in e.prim.rule("tile_comment")(**e.params).splitlines())
    return "\n".join(out) + "\n" if out else ""


class Prepared:
    """Everything before the C compiler: kernel partition, Tile, Stripe, C source."""

    def __init__(self, closed: ClosedGraph):
        self.closed = inline(closed)
        dump = _dump_dir(self.closed)
        self.timed = config.profile
        self.target = target = host_target()
        cprog = CProgram(target, dump, self.timed)
        parts = partition(self.closed.graph, target)
        pairs = buffer_reuses(self.closed.graph, parts, outputs=True)
        allowed: dict = {}
        self.steps = cprog.native_steps(parts, None, allowed, pairs)
        self.reuse = kept(pairs, self.steps, allowed)   # {value: operand whose buffer it takes}
        self.stripe = cprog.stripe
        self.functions = cprog.functions     # numbered kernels, for failure messages
        self.scratch = cprog.scratch         # name -> peak bytes a C function allocates
        self._cprog, self._head = cprog, PRELUDE + op_prelude()
        self.source = self._head + "\n\n" + cprog.source()
        self.entry = None     # the whole program as one C function, when fully native
        self.native = any(isinstance(s, (KernelStep, CallStep)) for s in self.steps)
        if self.native and all(isinstance(s, (KernelStep, CallStep)) for s in self.steps):
            self.entry = "plait_run"
            self.source += ("\n\n" + driver_source("plait_main", closure_convert(self.closed),
                                               self.steps, self.stripe, self.reuse)
                            + "\n\nint64_t plait_run(void **ins, void **outs) "
                              "{ return plait_main(ins, outs); }\n")
        if dump:
            for stage, fname in (("graph", "graph.txt"), ("kernels", "kernels.txt"),
                                 ("tile", "tile.txt"), ("c", "kernels.c")):
                with open(os.path.join(dump, fname), "w") as f:
                    f.write(self.as_text(stage))

    def units(self, full: str) -> list[str]:
        """``full`` (this program's source and its module wrapper) as the translation
        units to compile at the same time, one per core of the target (at most
        ``_MAX_UNITS``)."""
        return self._cprog.units(full, self._head, min(self._cprog.target.cores, _MAX_UNITS))

    def executable(self, loaded: "tuple | None") -> NativeExecutable:
        """The executable over ``loaded``, the program's ``(library, module)`` (None when
        the program has no kernels)."""
        return NativeExecutable(self, loaded)

    def as_text(self, stage: str = "c") -> str:
        """``c`` (generated source), ``kernels`` (partition), ``stripe``/``stripe-opt``, ``tile``."""
        if stage == "c":
            return self.source
        if stage == "kernels":
            return "\n".join("%s: %s" % describe(st) for st in self.steps)
        if stage == "tile":
            from plait.tile.printer import format_program
            return "\n\n".join(_user_tile(st) + format_program(st.program) for st in self.steps
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
_MAX_UNITS = 4      # compiler processes per program build, at most


def compile_native(closed: ClosedGraph) -> NativeExecutable:
    """Compile ``closed`` to native code (raises CompileError without a C compiler)."""
    with progress.compiling(closed.graph.name or "a graph"):
        return _compile_native(closed)


def compile_native_tiered(closed: ClosedGraph):
    """The native backend's entry (``backends.BACKENDS``): with ``config.tiered`` the
    build runs in the background behind a ``TieredExecutable`` whose first calls the
    interpreter, or for long loops a quick native build, answers (``tiered.py``); else
    :func:`compile_native`."""
    if not config.tiered:
        return compile_native(closed)
    require_toolchain()
    return compile_tiered(closed, _compile_native, _compile_quick)


# The quick tier's optimization level: GCC's -O1 compiles a program's C in about half
# the time of -O3 (W3 HMM T=100: 0.59 s against 1.22 s for its larger unit) and
# -fexpensive-optimizations keeps its multiply-add contraction (-O1 alone forms no FMA);
# no vectorization, little inlining, so it runs slower (the HMM solve 10 ms against 3.4)
QUICK_FLAGS = ("-O1", "-fexpensive-optimizations")


def _compile_native(closed: ClosedGraph, prep: "Prepared | None" = None,
                    entry: tuple | None = None) -> NativeExecutable:
    tc = require_toolchain()
    t0 = time.perf_counter()
    if prep is None:
        prep = _prepare(closed)
    loaded = _load(prep, tc, entry=entry) if prep.native else None
    metrics.bump("native_compile_s", time.perf_counter() - t0)
    return prep.executable(loaded)


# A heavy program (tiered.FAST_TIER_MAX_FLOPS) takes the quick tier only when its own
# generated code does at most this much per call: at -O1 that code runs unvectorized,
# a few GFLOP/s, so up to a few tenths of a second, less than the -O3 build it saves
# (0.5 s on W4, whose generated code does 0.06 of its 60.6 GFLOP)
QUICK_MAX_GENERATED_FLOPS = 1e9
def generated_flops(prep: "Prepared") -> float:
    """Flops per call of the program's own generated C: its kernels and every native
    call whose primitive's rule does not run a library (``native_library``: GEMM,
    convolutions, FFT, LAPACK); a loop counts whole, body times trips."""
    eqns = []
    for st in prep.steps:
        if isinstance(st, KernelStep):
            eqns.extend(st.eqns)
        elif isinstance(st, CallStep) and not st.eqn.prim.rules.get("native_library", False):
            eqns.append(st.eqn)
    return eqns_cost(eqns)["flops"]


def _compile_quick(closed: ClosedGraph, heavy: bool = False):
    """For a program the interpreter would answer too slowly: its optimized executable
    when the kernel cache holds it (or it has no kernels), else ``(executable, build)``:
    an executable built now with :data:`QUICK_FLAGS`, and ``build(closed)``, the
    optimized build of the same C (the Python stages are not repeated) for the
    background. ``heavy``: a program over the fast tier's flops, whose optimized
    executable is built now too unless its generated code does at most
    :data:`QUICK_MAX_GENERATED_FLOPS` (its work is in the libraries)."""
    tc = require_toolchain()
    t0 = time.perf_counter()
    prep = _prepare(closed)
    entry = _entry(prep, tc) if prep.native else None
    if (entry is None or kernel_cache.cached(entry[0])
            or heavy and generated_flops(prep) > QUICK_MAX_GENERATED_FLOPS):
        loaded = _load(prep, tc, entry=entry) if entry else None
        metrics.bump("native_compile_s", time.perf_counter() - t0)
        return prep.executable(loaded)
    quick = prep.executable(_load(prep, tc, QUICK_FLAGS))
    metrics.bump("native_compile_s", time.perf_counter() - t0)
    return quick, lambda c: _compile_native(c, prep, entry)


def _prepare(closed: ClosedGraph) -> "Prepared":
    with events.span("partition, Tile, Stripe passes, C", "compile"):
        return Prepared(closed)


def _entry(prep: "Prepared", tc, flags: tuple = ()) -> tuple[str, str, str | None]:
    """``(kernel cache key, full C source, extension module name or None)`` of the
    program built with the toolchain's flags and then ``flags``."""
    # the key covers the module wrapper too (its name, which is the key, left out)
    wrapper = module_source(_MODULE_NAME, {
        st.name: "".join(d[0] for d, _ in step_buffers(st, prep.stripe))
        for st in prep.steps if isinstance(st, (KernelStep, CallStep))},
        prep.entry) if tc.python_include else ""
    key = kernel_cache.entry_key(prep.source, wrapper, tc.identity(),
                                 ",".join(sorted(cpu_info().flags)), *flags)
    full, module = prep.source, None
    if wrapper:
        module = f"plait_k_{key}"
        full += "\n\n" + wrapper.replace(_MODULE_NAME, module)
    return key, full, module


def _load(prep: "Prepared", tc, flags: tuple = (), entry: tuple | None = None) -> tuple:
    """The program's loaded ``(library, module)``, from the kernel cache or built
    (``entry``: its :func:`_entry` for ``flags``, when the caller has it)."""
    key, full, module = entry or _entry(prep, tc, flags)
    return kernel_cache.load(key, lambda out: _build(prep.units(full), out, tc, flags),
                             lambda path: _open_library(path, module, prep.target))


def _build(units: list[str], out: str, tc, flags: tuple = ()) -> None:
    """Run the C compiler on the program's translation units, with the toolchain's
    flags then ``flags`` (a profiler event when a trace is active; its time is logged
    with ``log_compiles``)."""
    progress.phase("C compiler")
    t0 = time.perf_counter()
    size = sum(len(u) for u in units)
    with events.span("C compiler", "compile", {"source_bytes": size, "units": len(units)}):
        build_shared_object(units, out, tc, flags)
    if config.log_compiles:
        logging.getLogger("plait").warning(
            "plait: C compiler built %d KiB of C in %d unit(s) into one shared object in "
            "%.2f s%s", size // 1024, len(units), time.perf_counter() - t0,
            f" ({' '.join(flags)})" if flags else "")


_ADVICE = ("Free memory or raise the process's memory limit (ulimit -v, RLIMIT_AS), use "
           "smaller inputs, or compute in chunks (for example plait.lax.map over slices).")


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit} ({n} bytes)"
    return f"{n} bytes"


def _alloc(shape: tuple, dtype: np.dtype, what: str) -> np.ndarray:
    """``np.empty`` (a recycled buffer when it is large, :mod:`plait.runtime.recycle`),
    raising ``PlaitMemoryError`` that names the buffer on failure."""
    try:
        big = recycle.take(shape, dtype)
        return big if big is not None else np.empty(shape, dtype)
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


_SUBGRAPHS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _run_subgraph(graph, args) -> list:
    """Run a control-flow body or branch with its cached native executable."""
    exe = _SUBGRAPHS.get(graph)
    if exe is None:
        exe = _SUBGRAPHS[graph] = compile_native(ClosedGraph(graph, []))
    return exe(*[np.asarray(a) for a in args])


def _open_library(path: str, module: str | None, target: Target) -> tuple:
    """``(ctypes library, extension module or None)`` of a cached shared object (raises
    OSError or ImportError when it does not load; the kernel cache then rebuilds it)."""
    set_openmp_wait_defaults()       # before libgomp loads with this library
    lib = ctypes.CDLL(path)
    lapack.init_library(lib)         # LAPACK pointers, for programs that call LAPACK
    gemm.init_library(lib, target)   # GEMM library addresses, for programs that call it
    fft.init_library(lib, target)    # the FFT library's entry, for programs that call it
    return lib, (load_module(module, path) if module else None)


