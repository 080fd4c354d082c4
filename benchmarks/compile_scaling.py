"""Compile time against program size (issue 20): a jitted Python loop unrolled N times.

``x = tanh(x * 1.01 + 0.1) + x.mean()`` repeated ``N`` times on a float32[256] vector is
traced, optimized and compiled by the native backend with a cold kernel cache (a fresh
temporary ``PLAIT_CACHE_DIR``), and the first call's time is split by phase: trace,
graph passes, partition (with Tile lowering), Stripe lowering, each Stripe pass, C
rendering, the C compiler, and the rest (loading, the first run). Compile time should
grow linearly with ``N``.

``python -m benchmarks.compile_scaling [N ...]`` prints the table (default N = 60, 100,
300, 1000); ``python -m benchmarks --only cs`` gives one row per size in the suite's table.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np

import plait
import plait.numpy as pnp

SIZES = (60, 100, 300, 1000)
LENGTH = 256


def unrolled(n: int):
    """The N-step program as a plain Python function of one array."""
    def f(x):
        for _ in range(n):
            x = pnp.tanh(x * 1.01 + 0.1) + x.mean()
        return x
    f.__name__ = f"unrolled_{n}"
    return f


def reference(n: int, x: np.ndarray) -> np.ndarray:
    """The same program in NumPy (float32 throughout, like plait's NEP 50 promotion)."""
    for _ in range(n):
        x = np.tanh(x * np.float32(1.01) + np.float32(0.1)) + x.mean(dtype=np.float32)
    return x


@contextlib.contextmanager
def cold_cache():
    """A fresh, empty kernel cache for the duration (``PLAIT_CACHE_DIR``)."""
    old = os.environ.get("PLAIT_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="plait_cs_") as d:
        os.environ["PLAIT_CACHE_DIR"] = d
        try:
            yield d
        finally:
            if old is None:
                os.environ.pop("PLAIT_CACHE_DIR", None)
            else:
                os.environ["PLAIT_CACHE_DIR"] = old


class PhaseTimer:
    """Wraps the pipeline's entry points and sums the seconds spent in each (outermost
    calls only, so nested phases are not counted twice)."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self._undo: list = []
        self._depth = 0

    def _wrap(self, phase: str, fn):
        @functools.wraps(fn)
        def timed(*a, **kw):
            if self._depth:
                return fn(*a, **kw)
            self._depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.seconds[phase] += time.perf_counter() - t0
                self._depth -= 1
        return timed

    def patch(self, obj, attr: str, phase: str) -> None:
        old = getattr(obj, attr)
        self._undo.append((obj, attr, old))
        setattr(obj, attr, self._wrap(phase, old))

    def patch_item(self, table, key, phase: str) -> None:
        old = table[key]
        self._undo.append((table, key, old))
        table[key] = self._wrap(phase, old)

    def __enter__(self):
        import plait.api as api
        import plait.passes.manager as manager
        import plait.stripe.passes as sp
        from plait.backends.native import compile as ncompile, cprogram
        from plait.codegen import toolchain  # noqa: F401
        self.patch(api, "trace_to_graph", "trace")
        for i, (name, p) in enumerate(manager.PASSES):
            self._undo.append((manager.PASSES, i, (name, p)))
            manager.PASSES[i] = (name, self._wrap(f"graph:{name}", p))
        self.patch(ncompile, "inline", "graph:inline")
        self.patch(ncompile, "partition", "partition+tile")
        self.patch(cprogram, "stripe_lower", "stripe lower")
        for name in list(sp.PASSES):
            self.patch_item(sp.PASSES, name, f"stripe:{name}")
        self.patch(cprogram, "render_program", "C render")
        self.patch(ncompile, "build_shared_object", "cc")
        return self

    def __exit__(self, *exc):
        for obj, attr, old in reversed(self._undo):
            if isinstance(obj, (dict, list)):
                obj[attr] = old
            else:
                setattr(obj, attr, old)
        self._undo.clear()


def cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the C compiler): steadier
    than wall time on a shared machine."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(n: int, check: bool = True) -> dict:
    """First-call seconds of the N-step program (cold cache) and its phase split."""
    x = np.linspace(-1, 1, LENGTH, dtype=np.float32)
    f = plait.jit(unrolled(n), backend="native")
    tiered, plait.config.tiered = plait.config.tiered, False   # time the compile itself
    try:
        with cold_cache(), PhaseTimer() as pt:
            c0, t0 = cpu_seconds(), time.perf_counter()
            y = np.asarray(f(x))
            total, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    finally:
        plait.config.tiered = tiered
    phases = dict(pt.seconds)
    phases["other"] = total - sum(phases.values())
    out = {"n": n, "total": total, "cpu": cpu, "phases": phases,
           "kernels": f.lower(x).compile().executable.kernel_count()}
    if check:
        np.testing.assert_allclose(y, reference(n, x), rtol=1e-4, atol=1e-4)
    return out


def report(results: list[dict]) -> str:
    """A markdown table: N, total seconds, kernels, then each phase's seconds."""
    phases = []
    for r in results:
        for p in r["phases"]:
            if p not in phases:
                phases.append(p)
    head = ["N", "total s", "cpu s", "kernels"] + phases
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [str(r["n"]), f"{r['total']:.2f}", f"{r['cpu']:.2f}", str(r["kernels"])]
        cells += [f"{r['phases'].get(p, 0.0):.2f}" for p in phases]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(cfg) -> tuple[list, str]:
    """Rows of the suite's table (first call per size) and the phase split."""
    from benchmarks.common import Row
    sizes = (10, 20) if cfg.smoke else (60, 100, 300) if cfg.quick else SIZES
    results, rows = [], []
    for n in sizes:
        r = measure(n)
        results.append(r)
        rows.append(Row(f"CS compile, {n}-step unrolled loop", first_call={"plait.jit": r["total"]},
                        check="vs numpy: rtol 1e-4", note=f"{r['kernels']} kernel(s), cold cache"))
    return rows, "Compile time by phase (seconds, cold kernel cache)\n" + report(results)


def main(argv=None) -> None:
    sizes = [int(a) for a in (argv if argv is not None else sys.argv[1:])] or list(SIZES)
    results = []
    for n in sizes:
        results.append(measure(n))
        print(f"N={n}: {results[-1]['total']:.2f} s", file=sys.stderr, flush=True)
    print(report(results))


if __name__ == "__main__":
    main()
