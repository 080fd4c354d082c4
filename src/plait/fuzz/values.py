"""Values mode: random programs in eager, interp and native against NumPy, batched.

One batch = ``batch`` programs; eager runs each, ``interp`` and ``native`` each run
the whole batch as one jitted function (one native compile). Every failure is
counted; the first of each signature (engine, op, kind) is shrunk and kept with its
reproducer.
"""
from __future__ import annotations

import dataclasses
import re
import time
from typing import Optional

import numpy as np

from plait.fuzz.engines import ENGINES, Failure, check_values, confirm, run_eager, run_engine, run_jit
from plait.fuzz.generate import random_program
from plait.fuzz.program import Program
from plait.fuzz.shrink import shrink


@dataclasses.dataclass
class Finding:
    failure: Failure
    program: Program         # minimal reproducer
    original_nodes: int
    count: int = 1

    def report(self) -> str:
        f = self.failure
        return (f"[{f.engine}] {f.op} ({f.kind}): {f.message}\n"
                f"  shrunk from {self.original_nodes} to {len(self.program.nodes)} nodes; seen {self.count}x\n"
                + "\n".join("    " + line for line in self.program.to_python(f.engine).splitlines()))


@dataclasses.dataclass
class Report:
    mode: str
    programs: int = 0
    nodes: int = 0
    mismatches: int = 0      # failing (program, engine) pairs with a wrong value/dtype/shape
    crashes: int = 0         # failing pairs where plait raised
    known: int = 0           # failures explained by a known open defect (``known.py``)
    unconfirmed: int = 0     # native fusion recomputing an upstream node within its tolerance
    seconds: float = 0.0
    findings: dict = dataclasses.field(default_factory=dict)
    known_labels: dict = dataclasses.field(default_factory=dict)
    notes: list = dataclasses.field(default_factory=list)    # threads mode: failure lines

    def add(self, failure: Failure, program: Program, do_shrink: bool, predicate) -> None:
        if failure.known:
            self.known += 1
            self.known_labels[failure.known] = self.known_labels.get(failure.known, 0) + 1
            return
        if not confirm(program, failure):
            self.unconfirmed += 1
            return
        if failure.kind.startswith("error"):
            self.crashes += 1
        else:
            self.mismatches += 1
        sig = failure.signature
        if sig in self.findings:
            self.findings[sig].count += 1
            return
        small = shrink(program, predicate, max_calls=60, max_seconds=60) if do_shrink else program
        final = predicate_failure(small, failure.engine) or failure
        self.findings[sig] = Finding(final, small, len(program.nodes))

    def distinct_notes(self) -> dict:
        """Threads-mode failure lines grouped with program and thread numbers erased."""
        distinct: dict = {}
        for note in self.notes:
            distinct.setdefault(re.sub(r"(program|thread) \d+", r"\1 N", note), []).append(note)
        return distinct

    def summary(self) -> str:
        lines = [f"mode {self.mode}: {self.programs} programs ({self.nodes} nodes) in {self.seconds:.0f} s; "
                 f"{self.mismatches} mismatches, {self.crashes} crashes, {len(self.findings)} distinct; "
                 f"{self.known} known, {self.unconfirmed} unconfirmed (fused recomputation)"]
        for label, n in self.known_labels.items():
            lines.append(f"  known x{n}: {label}")
        for f in self.findings.values():
            lines.append(f.report())
        for k, v in self.distinct_notes().items():
            lines.append(f"  x{len(v)}: {v[0]}")
        return "\n".join(lines)


def predicate_failure(program: Program, engine: str) -> Optional[Failure]:
    return check_values(program, engine, run_engine(program, engine))


def same_failure(failure: Failure):
    """A shrink predicate: the program fails in the same engine, op and kind."""
    def still_fails(p: Program) -> bool:
        if not p.nodes:
            return False
        f = predicate_failure(p, failure.engine)
        return f is not None and f.signature == failure.signature and not f.known
    return still_fails


def run_values(seed: int, programs: int, minutes: float, batch: int = 40,
               engines=ENGINES, do_shrink: bool = True, log=None,
               skip: int = 0) -> Report:
    """Run ``programs`` programs (or until ``minutes`` pass) from ``seed``, after skipping
    the first ``skip`` programs of that seed's sequence (so a crash can be bisected)."""
    rep = Report("values")
    rng = np.random.default_rng(seed)
    for _ in range(skip):
        random_program(rng)
    t0 = time.monotonic()
    deadline = t0 + minutes * 60 if minutes else float("inf")
    while rep.programs < programs and time.monotonic() < deadline:
        generated = [random_program(rng) for _ in range(min(batch, programs - rep.programs))]
        progs = [p for p in generated if p.nodes]
        rep.programs += len(generated)
        if not progs:
            continue
        results = {}
        for eng in engines:
            results[eng] = [run_eager(p) for p in progs] if eng == "eager" else run_jit(progs, eng)
        for eng in engines:
            for p, r in zip(progs, results[eng]):
                f = check_values(p, eng, r)
                if f is not None:
                    rep.add(f, p, do_shrink, same_failure(f))
        rep.nodes += sum(len(p.nodes) for p in progs)
        rep.seconds = time.monotonic() - t0
        if log:
            log(f"values: {rep.programs} programs, {rep.mismatches} mismatches, {rep.crashes} crashes, "
                f"{len(rep.findings)} distinct, {rep.seconds:.0f} s")
    rep.seconds = time.monotonic() - t0
    return rep


def nth_program(seed: int, n: int) -> Program:
    """The ``n``-th program (from 0) of ``seed``'s sequence, as ``run_values`` generates it."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        random_program(rng)
    return random_program(rng)


def merge(into: Report, rep: Report) -> None:
    """Add ``rep``'s counts and findings to ``into``."""
    for f in ("programs", "nodes", "mismatches", "crashes", "known", "unconfirmed"):
        setattr(into, f, getattr(into, f) + getattr(rep, f))
    for sig, finding in rep.findings.items():
        if sig in into.findings:
            into.findings[sig].count += finding.count
        else:
            into.findings[sig] = finding
    for label, n in rep.known_labels.items():
        into.known_labels[label] = into.known_labels.get(label, 0) + n
    into.notes.extend(rep.notes)
