"""Threads mode: several threads tracing ``jit`` functions and running eager ops at once.

Single-threaded first, every program's eager and ``jit`` results are recorded. Then
``threads`` workers run the same programs concurrently, each call either eager or a
fresh ``jit`` (a new function object, so it traces), while one more thread keeps
tracing a long chain (the issue-21 reproducer class: an eager op of another thread
must never be staged into that trace or come back as a tracer). Every result must be
a ``plait.Array`` with the same bytes as the single-threaded one; any exception or
leaked tracer is a failure.
"""
from __future__ import annotations

import threading
import time

import numpy as np

import plait
import plait.numpy as pnp
from plait.fuzz.compare import quiet
from plait.fuzz.engines import NodeError, _batch_fn, run_eager
from plait.fuzz.generate import random_program
from plait.fuzz.values import Report


def _key(values) -> list:
    return [(np.asarray(v).dtype.str, np.asarray(v).shape, np.asarray(v).tobytes()) for v in values]


def _leaks(values) -> list:
    return [type(v).__name__ for v in values if not isinstance(v, plait.Array)]


def _jit_once(program, backend: str):
    return quiet(plait.jit(_batch_fn([program]), backend=backend), *program.inputs)


def _long_chain(x):
    for _ in range(400):
        x = pnp.sin(x) * 0.5 + 0.25
    return x


def run_threads(seed: int, programs: int, minutes: float, threads: int = 4, rounds: int = 3,
                backend: str = "interp", log=None) -> Report:
    """Run ``programs`` programs ``rounds`` times in each of ``threads`` threads."""
    rep = Report("threads")
    rng = np.random.default_rng(seed)
    t0 = time.monotonic()
    progs, ref = [], []
    while len(progs) < programs:
        p = random_program(rng)
        if not p.nodes:
            continue
        eager = run_eager(p)
        if isinstance(eager, NodeError):
            continue
        try:
            jitted = _jit_once(p, backend)
        except Exception:  # noqa: BLE001 - values mode reports programs that fail alone
            continue
        progs.append(p)
        ref.append((_key(eager), _key(jitted)))
    failures: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def record(msg: str) -> None:
        with lock:
            failures.append(msg)

    def worker(w: int) -> None:
        order = np.random.default_rng(seed * 1000 + w).permutation(len(progs) * rounds) % len(progs)
        for n, i in enumerate(order):
            if stop.is_set():
                return
            p = progs[int(i)]
            mode = "eager" if (n + w) % 2 else "jit"
            try:
                if mode == "eager":
                    got = run_eager(p)
                    if isinstance(got, NodeError):
                        raise got.exc
                else:
                    got = _jit_once(p, backend)
            except Exception as e:  # noqa: BLE001
                record(f"program {int(i)} {mode} in thread {w}: {type(e).__name__}: {str(e)[:200]}")
                continue
            leaked = _leaks(got)
            if leaked:
                record(f"program {int(i)} {mode} in thread {w}: returned {leaked[0]} instead of Array")
            elif _key(got) != ref[int(i)][0 if mode == "eager" else 1]:
                record(f"program {int(i)} {mode} in thread {w}: values differ from the single-threaded run")

    def tracer() -> None:
        x = np.ones(8, np.float32)
        while not stop.is_set():
            try:
                plait.jit(lambda v: _long_chain(v), backend=backend)(x)
            except Exception as e:  # noqa: BLE001
                record(f"long trace: {type(e).__name__}: {str(e)[:200]}")

    probe_x = np.ones(8, np.float32)
    probe_want = _key([pnp.cos(probe_x)])

    def eager_probe() -> None:
        x, want = probe_x, probe_want
        while not stop.is_set():
            try:
                r = pnp.cos(x)
            except Exception as e:  # noqa: BLE001
                record(f"eager cos during a trace: {type(e).__name__}: {str(e)[:200]}")
                continue
            if not isinstance(r, plait.Array):
                record(f"eager cos during a trace returned {type(r).__name__}")
            elif _key([r]) != want:
                record("eager cos during a trace: wrong values")

    background = [threading.Thread(target=tracer, daemon=True), threading.Thread(target=eager_probe, daemon=True)]
    workers = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(threads)]
    for t in background + workers:
        t.start()
    deadline = t0 + minutes * 60 if minutes else None
    for t in workers:
        t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    stop.set()
    for t in workers + background:     # every thread ends before the report is returned
        t.join()
    rep.programs = len(progs) * rounds * threads
    rep.nodes = sum(len(p.nodes) for p in progs) * rounds * threads
    rep.mismatches = sum(1 for f in failures if "returned" in f or "differ" in f or "wrong" in f)
    rep.crashes = len(failures) - rep.mismatches
    rep.notes = failures
    rep.seconds = time.monotonic() - t0
    if log:
        log(f"threads: {rep.programs} runs, {len(failures)} failures, {rep.seconds:.0f} s")
    return rep
