"""Crash isolation: each chunk of a campaign runs in a child process.

A child killed by a signal (a segfault in generated code, an abort) or hanging past
its time limit is itself a finding: values-mode chunks are bisected by re-running
halves in fresh children until one program is left, and that program is printed as
a reproducer. Reports travel back as pickles.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import time

import plait
from plait.fuzz.engines import Failure
from plait.fuzz.values import Finding, Report, merge, nth_program


def run_child(mode: str, seed: int, programs: int, minutes: float, skip: int = 0,
              extra: tuple = (), timeout: float | None = None):
    """``(report or None, returncode, stderr tail)`` of one child run (of this same plait)."""
    fd, out = tempfile.mkstemp(prefix="plait-fuzz-", suffix=".pkl")
    os.close(fd)
    cmd = [sys.executable, "-m", "plait.fuzz", "--worker-out", out, "--mode", mode, "--seed", str(seed),
           "--programs", str(programs), "--minutes", str(minutes), "--skip", str(skip), "--quiet", *extra]
    limit = timeout if timeout is not None else (minutes * 60 if minutes else 3600) + 600
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(plait.__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=env)
        code, err = proc.returncode, proc.stderr[-2000:]
    except subprocess.TimeoutExpired as e:
        code, err = "timeout", str(e.stderr or "")[-2000:]
    rep = None
    try:
        if os.path.getsize(out):
            with open(out, "rb") as f:
                rep = pickle.load(f)
    finally:
        os.unlink(out)
    return rep, code, err


def _died(code) -> bool:
    return code == "timeout" or (isinstance(code, int) and code < 0)


def bisect_crash(seed: int, count: int, extra: tuple, log=None) -> tuple:
    """``(first, last)`` program numbers of the smallest range that still kills a child."""
    lo, hi = 0, count
    while hi - lo > 1:
        mid = (lo + hi) // 2
        _, code, _ = run_child("values", seed, mid - lo, 0, skip=lo, extra=extra + ("--no-shrink",))
        if _died(code):
            hi = mid
            continue
        _, code, _ = run_child("values", seed, hi - mid, 0, skip=mid, extra=extra + ("--no-shrink",))
        if _died(code):
            lo = mid
            continue
        break                     # only the two halves together crash
    if log:
        log(f"crash isolated to programs {lo}..{hi - 1} of seed {seed}")
    return lo, hi - 1


def supervised_values(seed: int, programs: int, minutes: float, chunk: int, extra: tuple,
                      log=None) -> Report:
    total = Report("values")
    t0 = time.monotonic()
    deadline = t0 + minutes * 60 if minutes else float("inf")
    k = 0
    while total.programs < programs and time.monotonic() < deadline:
        n = min(chunk, programs - total.programs)
        left = (deadline - time.monotonic()) / 60 if minutes else 0
        s = seed * 100_003 + k
        k += 1
        rep, code, err = run_child("values", s, n, left, extra=extra)
        if rep is not None:
            merge(total, rep)
        if _died(code):
            total.crashes += 1
            first, last = bisect_crash(s, n, extra, log)
            prog = nth_program(s, first)
            msg = f"child process died ({code}) on programs {first}..{last} of seed {s}: {err[-300:]}"
            total.findings[("process", str(code), s)] = Finding(
                Failure("native", -1, "process", f"crash:{code}", msg), prog, len(prog.nodes))
            total.programs += n if rep is None else 0
        elif code != 0 and rep is None:
            total.notes.append(f"child exited {code}: {err[-300:]}")
        total.seconds = time.monotonic() - t0
        if log:
            log(f"values: {total.programs} programs, {total.mismatches} mismatches, {total.crashes} crashes, "
                f"{len(total.findings)} distinct, {total.seconds:.0f} s")
    return total


def supervised(mode: str, seed: int, programs: int, minutes: float, extra: tuple, log=None) -> Report:
    """One child for a grad or threads run; a dead child is reported as a crash."""
    rep, code, err = run_child(mode, seed, programs, minutes, extra=extra)
    if rep is None:
        rep = Report(mode)
    if _died(code) or (code not in (0, 1)):
        rep.crashes += 1
        rep.notes.append(f"{mode} child died ({code}): {err[-500:]}")
    return rep
