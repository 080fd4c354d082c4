"""The timeline recorder the profiler's hooks write to (a leaf: imports nothing of plait).

Instrumented code checks :data:`ACTIVE` (one attribute read) before doing anything, or
uses :func:`span`, which returns a shared do-nothing context while no trace is active.
Events are Chrome trace-event dictionaries (``ph`` ``X``: complete events with ``ts``
and ``dur`` in microseconds; ``M``: thread names), with the recording thread as ``tid``.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time

ACTIVE = False                 # read by every hook; set only by start()/stop()
_LOCK = threading.Lock()
_EVENTS: list[dict] = []
_THREADS: set[int] = set()
_T0 = 0.0


def start() -> None:
    """Begin recording (clears earlier events)."""
    global ACTIVE, _T0
    with _LOCK:
        _EVENTS.clear()
        _THREADS.clear()
        _T0 = time.perf_counter()
        ACTIVE = True


def stop() -> list[dict]:
    """Stop recording; the events recorded since :func:`start`."""
    global ACTIVE
    with _LOCK:
        ACTIVE = False
        return list(_EVENTS)


def now() -> float:
    """The clock events are measured with (seconds, ``time.perf_counter``)."""
    return time.perf_counter()


def complete(name: str, cat: str, t_start: float, t_end: float, args: dict | None = None,
             tid: int | None = None) -> None:
    """Record an event ``name`` of category ``cat`` from ``t_start`` to ``t_end`` (seconds
    of :func:`now`) on thread ``tid`` (default: the calling thread)."""
    if not ACTIVE:
        return
    th = threading.current_thread()
    tid = th.ident if tid is None else tid
    ev = {"name": name, "cat": cat, "ph": "X", "pid": os.getpid(), "tid": tid,
          "ts": round((t_start - _T0) * 1e6, 3),
          "dur": round(max(t_end - t_start, 0.0) * 1e6, 3)}
    if args:
        ev["args"] = args
    with _LOCK:
        if tid not in _THREADS:
            _THREADS.add(tid)
            _EVENTS.append({"name": "thread_name", "ph": "M", "pid": os.getpid(), "tid": tid,
                            "args": {"name": th.name if tid == th.ident else f"thread {tid}"}})
        _EVENTS.append(ev)


class _Span:
    __slots__ = ("name", "cat", "args", "t0")

    def __init__(self, name: str, cat: str, args: dict | None):
        self.name, self.cat, self.args = name, cat, args

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        complete(self.name, self.cat, self.t0, time.perf_counter(), self.args)


_OFF = contextlib.nullcontext()


def span(name: str, cat: str, args: dict | None = None):
    """``with span("C compiler", "compile"):`` records the block while a trace is active."""
    return _Span(name, cat, args) if ACTIVE else _OFF
