"""Timeline profiler: ``with plait.profiler.trace("dir"):`` records tracing, each
compile and its phases (graph passes, Tile/Stripe lowering, every Stripe pass, the C
compiler), each executable call with its kernels and host steps, transfers
(``device_put``), and lazy arrays' trace cuts, launches and waits, with their threads, into a Chrome trace-event JSON file that
``chrome://tracing`` and https://ui.perfetto.dev open. :func:`summary` prints the top
kernels by time with their GFLOP/s and GB/s against the machine's peak.

While no trace is active the instrumented code pays one flag check
(:data:`plait.profiler.events.ACTIVE`). Native executables are timed step by step;
interp and xla executables appear as their compile events only.
"""

import contextlib as _contextlib
import json as _json
import os as _os
import time as _time

from plait.profiler import events

__all__ = ["events", "last_events", "start_trace", "stop_trace", "summary", "trace"]


class _State:
    """The running trace's folder and the last finished trace's events."""

    def __init__(self):
        self.log_dir: str | None = None
        self.last: list[dict] = []


_STATE = _State()


def start_trace(log_dir: str) -> None:
    """Start recording; :func:`stop_trace` writes the file into ``log_dir``."""
    if events.ACTIVE:
        from plait.errors import PlaitValueError
        raise PlaitValueError("a plait.profiler trace is already running; stop it first "
                              "(plait.profiler.stop_trace())")
    _os.makedirs(log_dir, exist_ok=True)
    _STATE.log_dir = log_dir
    events.start()


def stop_trace() -> str:
    """Stop recording and write the trace; returns the file's path."""
    if _STATE.log_dir is None:
        from plait.errors import PlaitValueError
        raise PlaitValueError("no plait.profiler trace is running (start one with "
                              "plait.profiler.start_trace(dir) or `with trace(dir):`)")
    evs = events.stop()
    _STATE.last = evs
    log_dir, _STATE.log_dir = _STATE.log_dir, None
    path = _os.path.join(log_dir, f"plait-{_time.strftime('%Y%m%d-%H%M%S')}-{_os.getpid()}"
                                  f".trace.json")
    doc = {"traceEvents": evs, "displayTimeUnit": "ms",
           "otherData": {"producer": "plait.profiler", "pid": _os.getpid()}}
    with open(path, "w") as f:
        _json.dump(doc, f)
    return path


class _Trace:
    path: str | None = None


@_contextlib.contextmanager
def trace(log_dir: str):
    """``with plait.profiler.trace("dir") as t:`` ... ``t.path`` is the written file."""
    start_trace(log_dir)
    t = _Trace()
    try:
        yield t
    finally:
        t.path = stop_trace()


def last_events() -> list[dict]:
    """The events of the last finished trace."""
    return list(_STATE.last)


def summary(trace_events: list[dict] | str | None = None, top: int = 10,
            print_: bool = True) -> str:
    """The top ``top`` kernels and host steps by total time in a trace (default: the last
    one; or a list of events, or a trace file's path), with calls, time, GFLOP/s and GB/s
    and their share of the machine's peak (:mod:`plait.profiler.peak`). Printed and
    returned."""
    from plait.profiler.peak import peak_bytes_per_s, peak_flops
    evs = trace_events if trace_events is not None else _STATE.last
    if isinstance(evs, str):
        with open(evs) as f:
            evs = _json.load(f)["traceEvents"]
    rows: dict = {}
    for e in evs:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "host"):
            continue
        a = e.get("args", {})
        key = (a.get("function", ""), e["name"])
        r = rows.setdefault(key, [0, 0.0, 0.0, 0.0, a.get("computes", "")])
        r[0] += 1
        r[1] += e["dur"] * 1e-6
        r[2] += a.get("flops", 0.0)
        r[3] += a.get("bytes", 0.0)
    pf, pb = peak_flops(4), peak_bytes_per_s()
    lines = [f"peak: {pf / 1e9:.0f} GFLOP/s (f32, estimated), {pb / 1e9:.1f} GB/s (measured "
             f"copy)",
             f"{'function/step':<28} {'calls':>6} {'total ms':>9} {'mean us':>9} "
             f"{'GFLOP/s':>8} {'%peak':>6} {'GB/s':>7} {'%peak':>6}  computes"]
    total = sum(r[1] for r in rows.values()) or 1.0
    for (fn, name), (n, t, fl, nb, what) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:top]:
        gf, gb = (fl / t if t else 0.0), (nb / t if t else 0.0)
        lines.append(f"{(fn + '/' + name)[:28]:<28} {n:>6} {t * 1e3:>9.3f} {t / n * 1e6:>9.1f} "
                     f"{gf / 1e9:>8.2f} {100 * gf / pf:>5.1f}% {gb / 1e9:>7.2f} "
                     f"{100 * gb / pb:>5.1f}%  {what[:60]}")
    lines.append(f"({len(rows)} steps, {total * 1e3:.3f} ms in all)")
    text = "\n".join(lines)
    if print_:
        print(text)
    return text
