"""Timing harness: candidates measured interleaved in one run, reported as ratios.

Machines are shared and noisy, so absolute times mean little: every benchmark
times all its candidates in alternating rounds and reports each one's median
per-call time and its ratio to a baseline measured in the same rounds.
"""
from __future__ import annotations

import random
import statistics
import time
from typing import Callable


def block(x):
    """Wait for a result tree to be computed and return it: JAX arrays and plait's lazy,
    device and native arrays by ``block_until_ready`` (an asynchronous or lazy result
    would otherwise be timed before its work ran); NumPy arrays and CPU tensors are
    complete when returned."""
    if isinstance(x, (list, tuple)):
        for v in x:
            block(v)
    elif isinstance(x, dict):
        for v in x.values():
            block(v)
    elif hasattr(x, "block_until_ready"):
        x.block_until_ready()
    return x


def per_call_seconds(fn: Callable[[], object], number: int) -> float:
    """Seconds per call of ``fn`` over ``number`` back-to-back calls, each call's result
    waited for (:func:`block`)."""
    t0 = time.perf_counter()
    for _ in range(number):
        block(fn())
    return (time.perf_counter() - t0) / number


def calibrate(fn: Callable[[], object], target_s: float = 0.02) -> int:
    """A call count whose batch takes about ``target_s``."""
    fn()
    n = 1
    while True:
        t = per_call_seconds(fn, n) * n
        if t >= target_s or n >= 1 << 20:
            return max(1, int(n * target_s / max(t, 1e-9)))
        n *= 4


def round_orders(keys: list[str], rounds: int) -> list[list[str]]:
    """The order of the candidates in each round: a fixed-seed shuffle per round, so a
    candidate follows different peers from round to round. In one fixed order each
    candidate always runs right after the same peer, and pays for that peer's threads
    still spinning or the caches it left cold in every round (the xla column followed
    the native one in all of them)."""
    rng = random.Random(len(keys) * 1000 + rounds)
    orders = []
    for _ in range(rounds):
        order = list(keys)
        rng.shuffle(order)
        orders.append(order)
    return orders


def compare(candidates: dict[str, Callable[[], object]], rounds: int = 15,
            target_s: float = 0.02) -> dict[str, float]:
    """Median seconds per call of each candidate, measured in interleaved rounds
    (:func:`round_orders`)."""
    numbers = {k: calibrate(f, target_s) for k, f in candidates.items()}
    samples: dict[str, list[float]] = {k: [] for k in candidates}
    for order in round_orders(list(candidates), rounds):
        for k in order:
            samples[k].append(per_call_seconds(candidates[k], numbers[k]))
    return {k: statistics.median(v) for k, v in samples.items()}


def after_each(fn: Callable[[], object], peers: dict[str, Callable[[], object]],
               rounds: int = 15) -> dict[str, tuple[float, float]]:
    """``(wall, cpu)``: median wall seconds and median CPU seconds of the whole process
    (user + system, every thread) of one call of ``fn`` made right after one call of
    each peer (the peer's call untimed), and after ``fn``'s own call (key ``"alone"``),
    in interleaved rounds. A peer's threads still spinning after its call slow the
    next call of ``fn`` and add their CPU time to it; the CPU time shows that even on
    a loaded machine, where the wall time mostly measures the other processes."""
    order = {"alone": fn, **peers}
    wall: dict[str, list[float]] = {k: [] for k in order}
    cpu: dict[str, list[float]] = {k: [] for k in order}
    for _ in range(rounds):
        for k, before in order.items():
            block(before())
            c0, t0 = time.process_time(), time.perf_counter()
            block(fn())
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    return {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in order}


def fmt_time(s: float) -> str:
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def table(title: str, rows: list[list[str]], header: list[str]) -> str:
    """A plain-text table."""
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    out = [title, line, "-" * len(line)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


# Peer libraries the user left out (``python -m benchmarks --without torch``).
WITHOUT: set[str] = set()


def optional_import(name: str):
    """Import a peer library if it is installed and not left out, else None."""
    if name in WITHOUT:
        return None
    try:
        return __import__(name)
    except Exception:
        return None
