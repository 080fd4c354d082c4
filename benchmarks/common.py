"""Shared pieces of the workload benchmarks: the run configuration, result rows,
first-call (compile) timing, budgeted interleaved timing and the equality check.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from benchmarks.harness import after_each, block, compare, fmt_time, optional_import

# Systems in table order; each benchmark fills the ones it has. "plait.jit alone" and
# "jax.jit alone" are their calls timed back to back, after the interleaved rounds (see
# ``measure``).
SYSTEMS = ("plait.jit", "plait.jit alone", "plait xla", "plait eager", "numpy", "jax.jit",
           "jax.jit alone", "torch", "torch.compile", "onnxruntime")
#: the systems timed alone too, and the column each one's alone time is under
ALONE = {"plait.jit": "plait.jit alone", "jax.jit": "jax.jit alone"}


@dataclass
class Config:
    """How big and how long: ``quick`` (< 3 min in all), ``smoke`` (tiny sizes, for tests);
    ``first_calls_only``: each row's first calls and check, no timing (the suite's
    warm-cache pass, see ``benchmarks.__main__``)."""

    quick: bool = False
    smoke: bool = False
    backend: str = "native"
    first_calls_only: bool = False

    @property
    def rounds(self) -> int:
        return 2 if self.smoke else 5 if self.quick else 11

    @property
    def budget_s(self) -> float:
        """Rough time allowed for timing one row's candidates."""
        return 0.5 if self.smoke else 6.0 if self.quick else 40.0


@dataclass
class Row:
    """One line of the report: per-system median seconds and first-call seconds, with
    the kernel caches cold (``first_call``) and warm (``warm_first_call``, in a fresh
    process after this run filled them)."""

    workload: str
    times: dict = field(default_factory=dict)
    first_call: dict = field(default_factory=dict)
    warm_first_call: dict = field(default_factory=dict)
    check: str = ""
    note: str = ""
    failed: bool = False


def xla_jit(fn: Callable, **kw):
    """``plait.jit(fn, backend="xla")`` when jaxlib is installed, else None (no column)."""
    from plait.backends.xla import pjrt
    if not pjrt.available():
        return None
    import plait
    return plait.jit(fn, backend="xla", **kw)


def jax_modules():
    """``(jax, jax.numpy)`` when JAX is installed, else ``(None, None)``."""
    jax = optional_import("jax")
    if jax is None:
        return None, None
    import jax.numpy as jnp
    return jax, jnp


def leaves(x) -> list[np.ndarray]:
    """Flatten nested lists/tuples/dicts of arrays into float64 NumPy arrays (None and
    empty tuples, the parameters of parameterless layers, have no leaves)."""
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in leaves(v)]
    if isinstance(x, dict):
        return [a for k in sorted(x) for a in leaves(x[k])]
    return [np.asarray(x, dtype=np.float64)]


def assert_close(what: str, ref, got, rtol: float) -> float:
    """Check ``got`` against ``ref`` leaf by leaf: ``|got - ref| <= rtol * max|ref|``
    (a scaled tolerance: float32 accumulation orders differ between systems).
    Returns the worst scaled error; raises AssertionError naming ``what``."""
    worst = 0.0
    for i, (r, g) in enumerate(zip(leaves(ref), leaves(got), strict=True)):
        if r.shape != g.shape:
            raise AssertionError(f"{what}: leaf {i} shape {g.shape} != reference {r.shape}")
        scale = max(float(np.max(np.abs(r))) if r.size else 0.0, 1e-30)
        err = float(np.max(np.abs(g - r))) / scale if r.size else 0.0
        if not np.isfinite(err) or err > rtol:
            raise AssertionError(f"{what}: leaf {i} differs from the reference by "
                                 f"{err:.3g} (scaled), tolerance {rtol:g}")
        worst = max(worst, err)
    return worst


def check_row(row: Row, ref, outs: dict, rtol: float, against: str = "",
              convert: Callable | None = None) -> bool:
    """Check every output in ``outs`` (except the reference's own) against ``ref``.

    Fills ``row.check`` with the tolerance and the worst error, or marks the row
    failed with the message; returns whether all systems agree. ``convert(name,
    out)`` maps an output to the reference's layout. A :class:`PeerFailure` output
    is left out of the check and named in ``row.note``."""
    failed = {k: o for k, o in outs.items() if isinstance(o, PeerFailure)}
    if failed:
        add_note(row, "; ".join(o.message for o in failed.values()))
        outs = {k: o for k, o in outs.items() if k not in failed}
    try:
        errs = [assert_close(f"{row.workload}: {k}", ref,
                             convert(k, o) if convert else o, rtol)
                for k, o in outs.items() if k != against]
    except AssertionError as e:
        row.failed = True
        row.check = f"FAILED {e}"
        return False
    if not errs:        # one system only (e.g. a JAX-style program without jax installed)
        row.check = "not checked: no second system ran"
        return True
    row.check = (f"{'vs ' + against + ': ' if against else ''}"
                 f"{'exact' if rtol == 0 else f'rtol {rtol:g}'} (worst {max(errs):.1e})")
    return True


def guarded(workload: str, make_row: Callable[[], Row]) -> Row:
    """``make_row()``, or a failed row naming the exception (one broken row of a
    workload must not hide the others)."""
    try:
        return make_row()
    except Exception as e:
        msg = (str(e).strip().splitlines() or [""])[0]
        return Row(workload, check=f"FAILED {type(e).__name__}: {msg}"[:240], failed=True)


def first_call(fn: Callable[[], object]) -> float:
    """Seconds taken by one call (for a jitted function: trace + compile + run)."""
    t0 = time.perf_counter()
    block(fn())
    return time.perf_counter() - t0


@dataclass
class MayFail:
    """A candidate whose failure is reported in the row's note, not as the row's failure
    (a peer's optional mode, e.g. ``torch.compile`` where it does not work)."""

    fn: Callable[[], object]

    def __call__(self):
        return self.fn()


@dataclass
class PeerFailure:
    """The first output of a :class:`MayFail` candidate that failed:
    :func:`check_row` reports it in the row's note."""

    message: str


def first_outputs(candidates: dict[str, Callable[[], object]]) -> tuple[dict, dict]:
    """Each candidate's first output and first-call seconds (compile included), so the
    equality check and the compile-time measurement are the same call.

    A candidate marked :class:`MayFail` that raises is removed from ``candidates`` (so it is
    not timed) and its output is a :class:`PeerFailure` naming the error."""
    outs, times = {}, {}
    for k, f in list(candidates.items()):
        t0 = time.perf_counter()
        try:
            outs[k] = block(f())
        except Exception as e:
            if not isinstance(f, MayFail):
                raise
            msg = (str(e).strip().splitlines() or [""])[0]
            outs[k] = PeerFailure(f"{k} failed ({type(e).__name__}: {msg[:120]})")
            del candidates[k]
            continue
        times[k] = time.perf_counter() - t0
    return outs, times


def timed(candidates: dict[str, Callable[[], object]], cfg: Config,
          per_call_hint: dict[str, float] | None = None) -> dict[str, float]:
    """Median seconds per call, interleaved; the rounds shrink so that the whole
    measurement fits ``cfg.budget_s`` given the per-call hints (e.g. second calls)."""
    wrapped = {k: (lambda f=f: block(f())) for k, f in candidates.items()}
    hint = sum((per_call_hint or {}).values())
    rounds = cfg.rounds
    if hint > 0:
        rounds = int(max(1, min(rounds, cfg.budget_s / (2 * hint))))
    target = 0.005 if cfg.smoke else 0.02
    return compare(wrapped, rounds=rounds, target_s=target)


def measure(row: Row, candidates: dict[str, Callable[[], object]], cfg: Config) -> Row:
    """Fill ``row`` with each candidate's first-call time (unless already recorded by
    ``first_outputs``) and its median time.

    A candidate whose call takes more than a third of the budget is not repeated
    (noted in the row): its time is one steady call, which for candidates that do
    not compile or warm up (names not ending in ``jit`` or ``compile``, except
    ``plait xla`` and ``torch``, whose first calls initialize its kernels) is the first call
    itself.

    plait.jit and jax.jit are timed twice: interleaved with the other candidates
    (plait.jit's column is the base of every interleaved ratio) and alone, their calls
    back to back after the interleaved rounds ("plait.jit alone", the base of
    "jax.jit alone"; a single run there is a call right after another one of its own).
    Alone is how a training loop runs; interleaved, each call starts right after a
    peer's, and on the 2-core VMs these numbers come from, work that follows a pause in
    its own stream runs slower for tens of milliseconds whatever filled the pause (a
    single-threaded NumPy loop of 4.7 ms steps: its first step after a 70 ms sleep took
    6.8 ms, the next ones 5.6, 5.3, 5.2; the stax epoch, 66.7 ms right after its own
    epoch, took 73.5-75.8 after jax.jit's epoch, a sleep, a Python busy loop or a 40 MB
    sweep alike). With ``cfg.first_calls_only`` only the first calls are recorded."""
    hint, single = {}, []
    for k, f in candidates.items():
        if k not in row.first_call:
            row.first_call[k] = first_call(f)
    if cfg.first_calls_only:
        return row
    from plait.backends.native.tiered import wait_all
    wait_all()              # steady state is native code's, not the interp tier's
    for k, f in candidates.items():
        compiles = k.endswith(("jit", "compile")) or k in ("plait xla", "torch")
        if not compiles and row.first_call[k] > cfg.budget_s / 3:
            hint[k] = row.first_call[k]
        else:
            hint[k] = first_call(f)              # a later call: steady state
        if hint[k] > cfg.budget_s / 3:
            single.append(k)
            row.times[k] = hint[k]
    rest = {k: f for k, f in candidates.items() if k not in single}
    if rest:
        row.times.update(timed(rest, cfg, {k: hint[k] for k in rest}))
    if "plait.jit" in candidates and len(candidates) > 1:
        for k, col in ALONE.items():
            if k in candidates:
                row.times[col] = _alone(candidates[k], cfg, hint[k], k in single)
    if single:
        add_note(row, "single run: " + ", ".join(single))
    return row


def _alone(f: Callable[[], object], cfg: Config, hint: float, single: bool) -> float:
    """Seconds per call of ``f`` timed on its own (no other candidate between its calls)."""
    if single:
        block(f())                  # the call before was another candidate's
        return first_call(f)
    return timed({"alone": f}, cfg, {"alone": hint})["alone"]


def after_peers_row(workload: str, candidates: dict[str, Callable[[], object]],
                    cfg: Config, check: str) -> Row:
    """plait.jit's call right after a call of each other candidate (NumPy's OpenBLAS,
    XLA's and PyTorch's thread pools left running or asleep by it) and right after its
    own call ("alone", the row's time); issue 20: plait's speed should not depend on
    the libraries alive beside it. The note gives each peer's wall and process CPU
    time of plait's call and their ratios to alone (1.00: unaffected); ``check`` is the
    workload's row's (the same calls)."""
    fn = candidates["plait.jit"]
    wrapped = {k: (lambda f=f: block(f())) for k, f in candidates.items() if k != "plait.jit"}
    per_round = sum(first_call(f) for f in candidates.values())
    rounds = int(max(3, min(41, cfg.budget_s / max(2 * per_round, 1e-9))))
    t = after_each(lambda: block(fn()), wrapped, rounds)
    wall, cpu = t.pop("alone")
    note = "; ".join(f"after {k} {fmt_time(w)} ({w / wall:.2f}x), cpu {fmt_time(c)} "
                     f"({c / cpu:.2f}x)" for k, (w, c) in t.items())
    return Row(f"{workload}: plait.jit after each peer", times={"plait.jit": wall},
               check=check,
               note=f"alone: right after its own call, cpu {fmt_time(cpu)}; {note}; "
                    f"{rounds} rounds")


def add_note(row: Row, text: str) -> None:
    """Append ``text`` to the row's note."""
    row.note = (row.note + "; " if row.note else "") + text


def markdown(rows: list[Row]) -> str:
    """The results table: time of plait.jit, then each peer's time and ratio to it."""
    systems = [s for s in SYSTEMS if any(s in r.times for r in rows)]
    firsts = [s for s in ("plait.jit", "plait xla", "jax.jit", "torch.compile")
              if any(s in r.first_call for r in rows)]
    head = (["workload"] + systems
            + [f"{s} first call" + (" cold / warm" if any(s in r.warm_first_call for r in rows)
                                    else "") for s in firsts] + ["check", "note"])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r.workload]
        for s in systems:
            t = r.times.get(s)
            # a peer's alone time against plait.jit's alone time, the rest against plait.jit
            base = r.times.get(ALONE["plait.jit"] if s in ALONE.values() and s != ALONE["plait.jit"]
                               else "plait.jit")
            if t is None:
                cells.append("-")
            elif s == "plait.jit" or base is None:
                cells.append(fmt_time(t))
            else:
                cells.append(f"{fmt_time(t)} ({t / base:.2f}x)")
        cells += [_first_calls(r, s) for s in firsts]
        cells += [r.check or "-", r.note or ""]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _first_calls(row: Row, system: str) -> str:
    """A first-call cell: cold-cache seconds, and warm-cache seconds when measured."""
    if system not in row.first_call:
        return "-"
    cold = fmt_time(row.first_call[system])
    warm = row.warm_first_call.get(system)
    return cold if warm is None else f"{cold} / {fmt_time(warm)}"


def standalone(run: Callable, argv=None) -> None:
    """``python -m benchmarks.<workload> [--quick] [--smoke] [--backend B]``."""
    import argparse
    import plait
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--backend", choices=["native", "interp"], default=None)
    args = ap.parse_args(argv)
    if args.backend:
        plait.config.backend = args.backend
    out = run(Config(quick=args.quick or args.smoke, smoke=args.smoke,
                     backend=plait.config.resolved_backend()))
    rows, text = out if isinstance(out, tuple) else (out, "")
    print(markdown(rows))
    if text:
        print("\n" + text)
