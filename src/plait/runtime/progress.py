"""Progress on long work, on stderr, only when stderr is a terminal.

:func:`compiling` wraps one compile: once it has run :data:`DELAY` seconds a background
thread redraws one status line (kernels built / total, the phase: Stripe passes or the C
compiler) until it ends, then leaves a final line. Code inside reports with
:func:`phase` and :func:`kernel_done`, which cost one attribute read when no compile
is being watched. :func:`bar` draws a loop's progress bar (the digits example, the
benchmark runner).
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time

DELAY = 1.0                  # seconds a compile runs before its progress shows
_LOCAL = threading.local()


def _tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _Watch:
    def __init__(self, what: str):
        self.what, self.phase, self.done, self.total = what, "starting", 0, 0
        self.t0 = time.perf_counter()
        self.shown = False
        self.stop = threading.Event()      # the compile ended
        self.wake = threading.Event()      # a change to show, or the end

    def line(self) -> str:
        k = f"kernels {self.done}/{self.total}, " if self.total else ""
        return (f"plait: compiling {self.what}: {k}{self.phase} "
                f"({time.perf_counter() - self.t0:.1f} s)")

    def run(self) -> None:
        if self.stop.wait(DELAY):
            return
        while not self.stop.is_set():
            self.shown = True
            sys.stderr.write("\r\033[K" + self.line())
            sys.stderr.flush()
            self.wake.wait(0.2)            # redraw on each change, else every 0.2 s
            self.wake.clear()

    def changed(self) -> None:
        """Redraw soon (the line shows each phase even when the compile is quick)."""
        self.wake.set()

    def end(self) -> None:
        """The compile ended: stop drawing."""
        self.stop.set()
        self.wake.set()


@contextlib.contextmanager
def compiling(what: str):
    """Watch one compile of ``what`` (nested compiles report into the outer one)."""
    if getattr(_LOCAL, "watch", None) is not None or not _tty():
        yield
        return
    w = _LOCAL.watch = _Watch(what)
    th = threading.Thread(target=w.run, name="plait-progress", daemon=True)
    th.start()
    try:
        yield
    finally:
        w.end()
        th.join()
        _LOCAL.watch = None
        if w.shown:
            sys.stderr.write(f"\r\033[Kplait: compiled {what}: "
                             f"{w.total} kernels in {time.perf_counter() - w.t0:.1f} s\n")
            sys.stderr.flush()


def phase(text: str, total: int | None = None) -> None:
    """The watched compile's current phase (and its number of kernels, when known)."""
    w = getattr(_LOCAL, "watch", None)
    if w is not None:
        w.phase = text
        if total is not None:
            w.total = total
        w.changed()


def kernel_done() -> None:
    """One more kernel of the watched compile is lowered and optimized."""
    w = getattr(_LOCAL, "watch", None)
    if w is not None:
        w.done += 1
        w.changed()


def bar(i: int, total: int, text: str = "", width: int = 30, force: bool = False) -> None:
    """Draw ``[####....] i/total text`` on stderr (a terminal, or ``force``); the last
    step ends the line."""
    if not (force or _tty()):
        return
    done = int(width * i / max(total, 1))
    sys.stderr.write(f"\r\033[K  [{'#' * done}{'.' * (width - done)}] {i}/{total} {text}")
    if i >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()
