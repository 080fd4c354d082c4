"""``python -m plait.fuzz``: run a fuzzing campaign and print what it found.

Examples::

    python -m plait.fuzz --minutes 20                       # values, grad and threads
    python -m plait.fuzz --mode values --programs 500 --seed 3
    python -m plait.fuzz --mode grad --minutes 5

Modes run in child processes (``supervise.py``), so a crash of generated code is a
finding with a reproducer rather than the end of the campaign (``--in-process`` turns
this off). The exit status is 1 when anything new (not in ``known.py``) was found.
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m plait.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--mode", action="append", choices=("values", "grad", "threads"),
                    help="repeat to run several (default: all three)")
    ap.add_argument("--minutes", type=float, default=0.0,
                    help="time budget, shared by the modes (values 70%%, grad 25%%, threads 5%%)")
    ap.add_argument("--programs", type=int, default=None, help="programs per mode (default: unbounded "
                    "with --minutes, else 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", action="append", choices=("eager", "interp", "native", "xla"),
                    help="engines for values mode (repeatable; default all three); grad mode "
                    "runs jit(grad) natively unless native is left out")
    ap.add_argument("--batch", type=int, default=40, help="programs per jitted batch")
    ap.add_argument("--chunk", type=int, default=400, help="values programs per child process")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--in-process", action="store_true", help="no child processes")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    ap.add_argument("--skip", type=int, default=0, help=argparse.SUPPRESS)
    return ap


def _run_mode(m: str, args, n: int, minutes: float, log):
    from plait.fuzz.engines import ENGINES
    from plait.fuzz.grad import run_grad
    from plait.fuzz.threads import run_threads
    from plait.fuzz.values import run_values
    if m == "values":
        return run_values(args.seed, n, minutes, batch=args.batch,
                          engines=tuple(args.backend or ENGINES),
                          do_shrink=not args.no_shrink, log=log, skip=args.skip)
    if m == "grad":
        backend = "native" if not args.backend or "native" in args.backend else "interp"
        return run_grad(args.seed, n, minutes, do_shrink=not args.no_shrink, log=log, backend=backend)
    return run_threads(args.seed, min(n, 40), max(minutes, 0.5), log=log)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if "PLAIT_CACHE_DIR" not in os.environ:   # keep the user's kernel cache clean
        os.environ["PLAIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="plait-fuzz-cache-")
    modes = args.mode or ["values", "grad", "threads"]
    n = args.programs if args.programs is not None else (10**9 if args.minutes else 200)
    log = None if args.quiet else (lambda s: print(time.strftime("%H:%M:%S"), s, flush=True))
    if args.worker_out:                      # a child of supervise.run_child
        rep = _run_mode(modes[0], args, n, args.minutes, log)
        with open(args.worker_out, "wb") as f:
            pickle.dump(rep, f)
        return 0
    share = {"values": 0.7, "grad": 0.25, "threads": 0.05}
    total = sum(share[m] for m in modes)
    extra = tuple(sum((["--backend", b] for b in (args.backend or [])), [])) + \
        (("--no-shrink",) if args.no_shrink else ()) + ("--batch", str(args.batch))
    reports = []
    for m in modes:
        minutes = args.minutes * share[m] / total if args.minutes else 0
        if args.in_process:
            rep = _run_mode(m, args, n, minutes, log)
        else:
            from plait.fuzz import supervise
            if m == "values":
                rep = supervise.supervised_values(args.seed, n, minutes, args.chunk, extra, log)
            else:
                rep = supervise.supervised(m, args.seed, n if m == "grad" else min(n, 40),
                                           minutes if m == "grad" else max(minutes, 0.5), extra, log)
        reports.append(rep)
        print(rep.summary(), flush=True)
    print("\nSUMMARY")
    for rep in reports:
        print(f"  {rep.mode}: {rep.programs} programs, {rep.mismatches} mismatches, {rep.crashes} crashes, "
              f"{len(rep.findings) + len(rep.distinct_notes())} distinct, {rep.known} known, "
              f"{rep.seconds:.0f} s")
    return 1 if any(r.mismatches or r.crashes for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
