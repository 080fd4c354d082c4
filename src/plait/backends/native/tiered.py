"""Tiered execution: a new program's first calls answered while its native build runs.

:func:`compile_tiered` returns at once with a :class:`TieredExecutable`. The native
build (partition, Tile, Stripe passes, C, the C compiler, loading) runs on one
background builder thread, one program after another in request order; until it is
done every call runs on the fast tier, the reference interpreter
(``plait.backends.interp``: each primitive's NumPy ``impl``), and from the first call
after it is done on the native executable. Which tier answered is on
:attr:`TieredExecutable.tier`, in ``as_text("tiers")``, in ``plait.profiler`` traces
(a ``run ... (interp tier)`` span per call), in the ``tier_interp_calls`` /
``tier_quick_calls`` / ``tier_native_swaps`` metrics and, with ``log_compiles``, in the log.

Both tiers evaluate the same optimized graph. Elementwise operations, comparisons,
selection, integer and bitwise arithmetic, indexing, gathers/scatters, shape
operations and the random-bit generator give identical results on both (the native
C follows the NumPy semantics of each primitive). Reductions, contractions
(``dot_general``: BLAS on the fast tier, the GEMM library or generated loops on the
native one) and convolutions differ only by floating-point reassociation: the order
in which a sum is accumulated, a few ulps, growing with the reduced length; and
transcendental functions (``exp``, ``tanh``, ``log``, ...) may differ by their
libraries' last-place rounding (NumPy's versus the C library's). Host callbacks,
control flow (sub-graphs run by the interpreter's ``run_graph``), donation (the fast
tier reuses no buffer, the donated arrays are still consumed) and lazy launches (the
fast tier runs on the calling thread, like a refused launch) behave the same.

The fast tier is the interpreter with faster NumPy evaluations of a few primitives
(``tier_ops``: convolutions as BLAS products), equal to the reference up to
reassociation. A graph the interpreter cannot run (a primitive without a NumPy
``impl``, or a collective of ``pmap``), one heavier than ``FAST_TIER_MAX_FLOPS`` per
call (its first call is mostly running, which native code does best), or one whose loops
repeat more than ``FAST_TIER_MAX_DISPATCHES`` primitive applications per call
(:func:`interp_dispatches`: the interpreter's per-operation dispatch then outlasts the
build) skips the fast tier: its first call waits for the build, or runs on the quick
tier below. A failed build is kept and raised, as the
plait error it was (anything else wrapped in ``CompileError``), by the next call and
every call after. The builder is a daemon thread, so a build still running never holds
up interpreter exit (the kernel cache publishes an entry by one atomic rename, so a
build cut short leaves nothing half-written).

A program whose loops repeat too long for the interpreter
(:data:`FAST_TIER_MAX_DISPATCHES`) starts instead on the quick tier: the native backend
builds its C now at -O1 (about half of -O3's compiler time; ``compile.QUICK_FLAGS``)
and the -O3 build of the same C runs on the builder thread; a program whose -O3 build
is in the kernel cache skips it. The quick tier runs the same C, so its results differ
from the native tier's only where the optimizer changes rounding: a multiply and an add
fused into one FMA in one build and not the other (inlining decides what is adjacent),
a vectorized reduction's order, and a float64 ``exp``/``log``/... taken from glibc's
vector library in one and its scalar one in the other (last place). Measured (W3 HMM
T = 100, 10 Newton steps; 2 cores, cold cache): first result 1.61 s waiting for -O3,
1.01 s on the quick tier; the solve 10 ms at -O1, 3.4 ms at -O3.

A heavy program (over ``FAST_TIER_MAX_FLOPS``) takes the quick tier too when its time
is in the contraction libraries (GEMM, convolutions: compiled once per machine, at the
same optimization either way) and its own generated code does at most
``compile.QUICK_MAX_GENERATED_FLOPS``; its -O3 build then starts only after the first
call returns (``defer``): built beside that call, it took a core from it. Measured (W4's
All-CNN-C step, 60.6 GFLOP of which 0.06 in generated code; 2 cores, GEMM library
cached, the program not): first result 1.42-1.44 s waiting for -O3, 0.94-0.96 s on the
quick tier (1.25-1.61 s with the -O3 build started at once); calls 2-4 take 0.65, 0.6
and 0.4 s while -O3 builds, 0.31 s after.

``plait.config.tiered`` (``$PLAIT_TIERED``) switches it: on by default; off makes the
native backend compile before the first call returns, as the test suite does.
"""
from __future__ import annotations

import contextvars
import logging
import os
import queue
import threading
import time
from typing import Callable

from plait.backends.interp import InterpExecutable
from plait.backends.native import tier_ops
from plait.config import config
from plait.core.graph import ClosedGraph, Graph, subgraphs_of
from plait.errors import CompileError, PlaitError
from plait.lax.parallel import CollectivePrimitive
from plait.profiler import events
from plait.runtime import metrics

_log = logging.getLogger("plait")


class TieredExecutable:
    """An executable whose calls run on a fast tier (``fast_tier``: ``"interp"``, the
    interpreter, or ``"quick"``, the program's native build at -O1) until the native
    executable is built on the background thread, then on the native one."""

    # jit asks every executable for a device-resident call path (OpenCL has one); the
    # native executable has none, and asking must not wait for the build (attributes
    # not defined here are the native executable's, so looking them up waits)
    call_arrays = None

    def __init__(self, closed: ClosedGraph, fast: Callable[..., list],
                 build: Callable[[ClosedGraph], object], fast_tier: str = "interp",
                 defer: bool = False):
        self.closed = closed
        self.name = closed.graph.name or "a compiled function"
        self._fast = fast
        self.fast_tier = fast_tier
        self._native = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self.tier = "none"              # which tier answered the last call
        self.fast_calls = 0             # calls the fast tier answered
        self.build_s: float | None = None   # seconds from the request to the native one
        self._t0 = time.perf_counter()
        # defer: the build is queued when the first call returns (or something waits
        # for it), not now
        self._deferred: Callable | None = build if defer else None
        self._defer_lock = threading.Lock()
        if not defer:
            _BUILDER.submit(self, build)

    def _start_deferred(self) -> None:
        """Queue the deferred build, once."""
        with self._defer_lock:
            build, self._deferred = self._deferred, None
        if build is not None:
            _BUILDER.submit(self, build)

    # -- the builder's side -------------------------------------------------------------
    def _finish(self, native, error: BaseException | None) -> None:
        self.build_s = time.perf_counter() - self._t0
        self._native, self._error = native, error
        self._done.set()
        if config.log_compiles:
            if error is None:
                _log.warning("plait: %s: native tier ready after %.2f s (%d calls answered "
                             "by the %s tier)", self.name, self.build_s, self.fast_calls,
                             self.fast_tier)
            else:
                _log.warning("plait: %s: the native build failed after %.2f s; the next "
                             "call raises: %s", self.name, self.build_s, error)

    # -- which tier ---------------------------------------------------------------------
    def ready(self) -> bool:
        """Whether the native build has finished (successfully or not)."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None):
        """The native executable, waiting up to ``timeout`` seconds (None: as long as the
        build takes) for it; raises the build's error, or ``CompileError`` on timeout."""
        self._start_deferred()
        if not self._done.wait(timeout):
            raise CompileError(f"the native build of {self.name} did not finish within "
                               f"{timeout} s")
        return self._checked()

    def _checked(self):
        if self._error is not None:
            raise self._error.with_traceback(None)
        return self._native

    def _current(self):
        """The native executable when it is ready (raising its build error), else None."""
        if self._native is not None:
            return self._native
        if self._done.is_set():
            return self._checked()
        return None

    # -- calling ------------------------------------------------------------------------
    def __call__(self, *args) -> list:
        exe = self._native
        if exe is not None:                   # the steady state: one check, one call
            if self.tier != "native":
                self._answered("native")
            return exe(*args)
        exe = self._current()
        if exe is not None:
            return self(*args)
        return self._run_fast(args)

    def run_donating(self, args, donated) -> list:
        """Run giving up ``donated`` arguments: the native tier may reuse their buffers;
        the fast tier reuses none (the quick tier's executable could, but it is not
        asked: the donation contract holds either way)."""
        exe = self._current()
        if exe is not None:
            self._answered("native")
            return exe.run_donating(args, donated)
        return self._run_fast(tuple(args))

    def launch(self, *args, deps: tuple = ()):
        """The native tier's asynchronous launch; None (run it by calling) before it is
        ready, as the interpreter's launch (the quick tier runs synchronously too)."""
        exe = self._current()
        if exe is None:
            return None
        launched = exe.launch(*args, deps=deps)
        if launched is not None:
            self._answered("native")
        return launched

    def _answered(self, tier: str) -> None:
        if self.tier != tier:
            if tier == "native" and self.tier == self.fast_tier:
                metrics.bump("tier_native_swaps")
            self.tier = tier

    def _run_fast(self, args) -> list:
        tier = self.fast_tier
        self._answered(tier)
        self.fast_calls += 1
        metrics.bump(f"tier_{tier}_calls")
        if config.log_compiles and self.fast_calls == 1:
            _log.warning("plait: %s: answered by the %s tier while the native build "
                         "runs in the background", self.name, tier)
        try:
            if not events.ACTIVE:
                return self._fast(*args)
            with events.span(f"run {self.name} ({tier} tier)", "call",
                             {"tier": tier, "equations": len(self.closed.graph.eqns)}):
                return self._fast(*args)
        finally:
            if self._deferred is not None:
                self._start_deferred()

    # -- everything else is the native executable's -------------------------------------
    def as_text(self, stage: str = "c") -> str:
        """A stage of the native executable (waiting for its build), or ``tiers``: which
        tier answered and when the native one became ready."""
        if stage == "tiers":
            if self._deferred is not None:
                state = "to be built after the first call"
            elif not self._done.is_set():
                state = "building"
            elif self._error is not None:
                state = f"failed after {self.build_s:.2f} s: {self._error}"
            else:
                state = f"ready after {self.build_s:.2f} s"
            return (f"{self.name}: last call answered by the {self.tier} tier; "
                    f"{self.fast_calls} calls answered by the {self.fast_tier} tier; "
                    f"native tier {state}")
        return self.wait().as_text(stage)

    def __getattr__(self, attr: str):
        # memory_analysis, profile, profile_blocks, kernel_count, alias_plan, prepared, ...
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.wait(), attr)


class _Builder:
    """One daemon thread building queued programs in request order."""

    def __init__(self):
        self._queue: "queue.SimpleQueue" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pending: list = []          # jobs not finished, in request order

    def submit(self, exe: TieredExecutable, build: Callable) -> None:
        job = (exe, build, contextvars.copy_context())   # the caller's context variables
        with self._lock:
            self._pending.append(job)
        self._start(job)

    def _start(self, job) -> None:
        self._queue.put(job)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="plait-tier-build",
                                                daemon=True)
                self._thread.start()

    def _serve(self) -> None:
        while True:
            exe, build, ctx = self._queue.get()
            try:
                native = ctx.run(build, exe.closed)
            except PlaitError as e:
                exe._finish(None, e)
            except BaseException as e:   # a bug in a pass: still a plait error, not lost
                err = CompileError(f"the native build of {exe.name} failed in the "
                                   f"background: {type(e).__name__}: {e}")
                err.__cause__ = e
                exe._finish(None, err)
            else:
                exe._finish(native, None)
            with self._lock:
                self._pending.remove((exe, build, ctx))

    def after_fork_in_child(self) -> None:
        """A forked child has no builder thread: it builds what was unfinished itself."""
        pending = self._pending
        self.__init__()
        self._pending = list(pending)
        for job in self._pending:
            self._start(job)


_BUILDER = _Builder()
os.register_at_fork(after_in_child=_BUILDER.after_fork_in_child)


def wait_all(timeout: float | None = None) -> bool:
    """Wait until every native build requested so far has finished (successfully or
    not: a failure is raised by the executable's next call); False on ``timeout``.
    Benchmarks call it before timing steady state."""
    with _BUILDER._lock:
        pending = [job[0] for job in _BUILDER._pending]
    end = None if timeout is None else time.perf_counter() + timeout
    for exe in pending:
        left = None if end is None else max(end - time.perf_counter(), 0.0)
        if not exe._done.wait(left):
            return False
    return True


def _interpretable(closed: ClosedGraph) -> bool:
    """Whether every primitive of the graph and its sub-graphs has a NumPy ``impl`` and
    none is a collective (whose ``impl`` reads the running replica's communicator,
    which the interpreter's constant folding at build time would not see)."""
    stack = [closed.graph]
    while stack:
        g = stack.pop()
        for e in g.eqns:
            if not e.prim.has_rule("impl") or isinstance(e.prim, CollectivePrimitive):
                return False
            stack.extend(subgraphs_of(e.params))
    return True


# Above this many floating-point operations per call (plait.cost) a program's first
# call is dominated by running it, not by compiling it, and the fast tier, running the
# same work in NumPy while the build takes a core, loses. Measured on 2 shared cores
# (load ~11), cold cache, first call: W1 MLP grad (0.4 GFLOP) 1.4 s on the fast tier
# against 3.2-3.4 s waiting for native; the digits step (0.1 GFLOP) 1.1 s against
# 13.5-16 s; the All-CNN-C step (61 GFLOP) 51 s against 25 s; VGG19 backward
# (118 GFLOP) 29-46 s against 24 s.
FAST_TIER_MAX_FLOPS = 10e9


def _cheap_enough(closed: ClosedGraph) -> bool:
    from plait.cost import cost_analysis
    try:
        return cost_analysis(closed)["flops"] <= FAST_TIER_MAX_FLOPS
    except Exception:        # noqa: BLE001  a missing cost rule: no estimate, tier it
        return True


# Above this many primitive applications a call repeats in loops (interp_dispatches
# beyond the graph's own equations) the fast tier, paying a Python dispatch and a small
# NumPy call for each on the core the build also needs, answers later than the build.
# The build's time grows with the equations, not with their trips, so a long
# straight-line program keeps the fast tier. Measured on 2 shared cores (load 7-12), cold
# cache, first result (benchmarks' --quick first calls): W3 HMM T=100 (10.8k repeated
# dispatches, 10 Newton steps) 13.0 / 11.6 s on the fast tier against 6.5 / 6.6 s waiting
# for native; the VAE epoch (32.8k, a scan over the batches) 16.6 / 17.8 s against
# 4.1 / 3.8 s; the unrolled loop N=1000 (7000 dispatches, none repeated) 1.39 s on the
# fast tier against 3.90 s waiting, so it is counted by repeats, not dispatches.
FAST_TIER_MAX_DISPATCHES = 5000


def interp_dispatches(graph: Graph, trips: bool = True) -> int:
    """Primitive applications one call of ``graph`` makes on the interpreter, each one a
    Python dispatch: an equation holding sub-graphs counts itself plus their dispatches
    times their runs per call, a ``scan`` body (a static ``fori_loop`` too) ``length``
    times, a ``while`` body once (its trip count is not known statically), every branch
    of a ``cond`` (an upper bound), as ``plait.cost`` counts flops. ``trips=False``
    counts every body once: the equations the native build compiles."""
    total = 0
    for e in graph.eqns:
        total += 1
        subs = list(subgraphs_of(e.params))
        if subs:
            reps = int(e.params.get("length", 1) or 1) if trips else 1
            total += reps * sum(interp_dispatches(g, trips) for g in subs)
    return total


def _loops_short_enough(closed: ClosedGraph) -> bool:
    repeated = interp_dispatches(closed.graph) - interp_dispatches(closed.graph, trips=False)
    return repeated <= FAST_TIER_MAX_DISPATCHES


def compile_tiered(closed: ClosedGraph, build: Callable[..., object],
                   quick: Callable[..., object] | None = None):
    """``build(closed)`` on the background thread behind a :class:`TieredExecutable`
    answering on the interpreter meanwhile. When the interpreter cannot run the graph:
    ``build(closed)`` here and now. When its loops repeat more than
    :data:`FAST_TIER_MAX_DISPATCHES` primitive applications (:func:`interp_dispatches`):
    ``quick(closed)``, which returns either the finished executable (its optimized build
    was cached) or ``(quick executable, build)``, the latter then run in the background
    behind a :class:`TieredExecutable` on the quick tier. When its flops exceed
    :data:`FAST_TIER_MAX_FLOPS`: ``quick(closed, heavy=True)``, which also builds the
    optimized executable now unless the program's work is in the libraries, and a quick
    tier's optimized build starts after the first call (without ``quick``, both cases
    ``build(closed)`` here and now)."""
    if not _interpretable(closed):
        return build(closed)
    heavy = not _cheap_enough(closed)
    if not heavy and _loops_short_enough(closed):
        return TieredExecutable(closed, tier_ops.FastTier(InterpExecutable(closed)), build)
    if quick is None:
        return build(closed)
    got = quick(closed, heavy=True) if heavy else quick(closed)
    if not isinstance(got, tuple):
        return got
    fast, rest = got
    return TieredExecutable(closed, fast, rest, fast_tier="quick", defer=heavy)
