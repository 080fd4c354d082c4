"""The ``plait`` command line: ``doctor``, ``config``, ``show``, ``cache``, ``bench``,
``explore``.

Exit status: 0 success; 1 the work failed (a plait error, the user's function raised,
a benchmark failed its check); 2 bad usage (unknown command or option, a file or
function that does not exist, a malformed argument spec).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

from plait.cli.target import example_arrays, load_function, parse_specs
from plait.errors import UsageError

STAGES = ["graph", "kernels", "tile", "stripe", "stripe-opt", "c", "stablehlo"]

_EPILOG = """\
examples:
  plait doctor
  plait show model.py:loss --args "f32[128,784], f32[784,10]" --stage kernels
  plait cache info
  plait cache prune --max-size 500M
  plait bench --quick --only w1
  plait explore model.py:loss --args "f32[128,784], f32[784,10]" -o loss.html

exit status: 0 success, 1 the work failed, 2 bad usage.
"""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="plait", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="plait: compile NumPy-style array programs into fused native code. "
                    "Look inside the compiler, manage its kernel cache, run the benchmarks.",
        epilog=_EPILOG)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("doctor", help="what plait found on this machine (compiler, OpenMP, "
                                  "SIMD, caches)")
    sub.add_parser("config", help="every PLAIT_* setting with its current value")

    def add_target(p):
        p.add_argument("target", metavar="FILE.py:FUNC",
                       help="the function (FILE.py:FUNC, FUNC may be dotted; or module:FUNC)")
        p.add_argument("--args", default="", metavar="SPECS",
                       help='its arguments as dtype[dims], comma separated: '
                            '"f32[128,784], i32[], f64" (dtypes: bool, i8-i64, u8-u64, '
                            'f16, f32, f64, c64, c128)')
        p.add_argument("--grad", action="store_true",
                       help="work on plait.grad(FUNC) (gradient in the first argument)")

    show = sub.add_parser("show", help="print a compilation stage of a function",
                          description="Print one stage of FUNC's compilation for the given "
                                      "argument shapes, without writing code.")
    add_target(show)
    show.add_argument("--stage", default="graph", choices=STAGES + ["all"],
                      help="graph (optimized), kernels (partition), tile, stripe, "
                           "stripe-opt (after the passes), c, stablehlo (xla), or all "
                           "(every native stage; default: graph)")

    cache = sub.add_parser("cache", help="the compiled-kernel disk cache: info, prune, clear",
                           description="The disk cache of compiled kernels "
                                       "(PLAIT_CACHE_DIR; size cap PLAIT_CACHE_MAX_SIZE).")
    csub = cache.add_subparsers(dest="action", metavar="ACTION")
    info = csub.add_parser("info", help="directory, entries, size, hit counts")
    info.add_argument("--entries", action="store_true", help="also list every entry")
    prune = csub.add_parser("prune", help="remove least recently used entries down to a size")
    prune.add_argument("--max-size", required=True, metavar="SIZE",
                       help="bytes to keep at most, e.g. 500M, 2G, 0")
    csub.add_parser("clear", help="remove every entry")

    bench = sub.add_parser("bench", help="run the benchmark suite (benchmarks/, in a "
                                         "plait checkout)",
                           description="Run the benchmark suite (python -m benchmarks) and "
                                       "print its markdown table; status 1 when a workload "
                                       "failed its check.")
    bench.add_argument("--quick", action="store_true", help="small repetitions (< 3 min)")
    bench.add_argument("--smoke", action="store_true", help="tiny sizes (a smoke test)")
    bench.add_argument("--only", default="", metavar="W1,W5",
                       help="comma-separated workloads (w1-w7, fft, cs, k, la)")
    bench.add_argument("--backend", choices=["native", "interp", "xla"], default=None,
                       help="plait.jit backend (default: plait.config)")
    bench.add_argument("--without", default="", metavar="torch",
                       help="comma-separated peers to leave out even when installed (jax, torch)")

    ex = sub.add_parser("explore", help="write one self-contained HTML page of every stage",
                        description="Write one HTML page (no network needed) with the graph "
                                    "as a picture, the kernel partition, Tile, every Stripe "
                                    "pass, the generated C and a profile of one run.")
    add_target(ex)
    ex.add_argument("-o", "--output", default=None, metavar="PATH",
                    help="where to write the page (default: FUNC.html)")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    ap = _parser()
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:            # argparse: 0 for --help, 2 for bad usage
        return int(e.code or 0)
    if args.command is None:
        ap.print_help()
        return 2
    try:
        return _COMMANDS[args.command](args, ap)
    except UsageError as e:
        print(f"plait {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:             # the work failed: one line, not a traceback
        from plait.errors import PlaitError
        kind = "" if isinstance(e, PlaitError) else f"{type(e).__name__}: "
        print(f"plait {args.command}: {kind}{e}", file=sys.stderr)
        return 1


def _doctor(args, ap) -> int:
    from plait.cli.doctor import doctor
    print(doctor())
    return 0


def _config(args, ap) -> int:
    from plait.cli.reference import settings
    for s in settings():
        where = f"plait.config.{s['attribute']}" if s["attribute"] else "environment only"
        print(f"{s['name']:<26} {where:<34} = {s['value']!r}")
    return 0


def _function_and_args(args):
    import plait
    fn = load_function(args.target)
    arrays = example_arrays(parse_specs(args.args))
    if args.grad:
        fn = plait.grad(fn)
    return fn, arrays


def _show(args, ap) -> int:
    import plait
    fn, arrays = _function_and_args(args)
    lowered = plait.jit(fn).lower(*arrays)
    stages = STAGES[:-1] if args.stage == "all" else [args.stage]
    for s in stages:
        if len(stages) > 1:
            print(f"==== {s} ====")
        print(lowered.as_text(s))
    return 0


def _cache(args, ap) -> int:
    from plait.config import parse_size
    from plait.runtime import cache_admin
    if args.action is None or args.action == "info":
        i = cache_admin.info()
        print(f"directory : {i.directory}")
        print(f"entries   : {i.entries}")
        print(f"size      : {_human(i.size)} (cap {_human(i.max_size)}, PLAIT_CACHE_MAX_SIZE)")
        print(f"hits      : {i.hits} loads from disk")
        if getattr(args, "entries", False):
            import time
            for e in reversed(cache_admin.entries(i.directory)):
                used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.last_use))
                print(f"  {e.key}  {_human(e.size):>10}  {e.hits:6d} hits  last used {used}")
        return 0
    if args.action == "prune":
        try:
            cap = parse_size(args.max_size)
        except ValueError:
            raise UsageError(f"--max-size {args.max_size!r} is not a size such as 500M, "
                             f"2G or 0") from None
        from plait.runtime.kernel_cache import configured_dir
        n, freed = cache_admin.prune(configured_dir(), cap)
        print(f"removed {n} entries, {_human(freed)} freed; "
              f"{_human(cache_admin.info().size)} left")
        return 0
    n, freed = cache_admin.clear()
    print(f"removed {n} entries, {_human(freed)} freed")
    return 0


def _bench(args, ap) -> int:
    # a checkout holds src/plait/cli/ and benchmarks/ side by side
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    if not os.path.isfile(os.path.join(root, "benchmarks", "__main__.py")):
        raise UsageError(f"the benchmark suite is not installed with the package: run "
                         f"`plait bench` from a plait checkout (looked in {root})")
    cmd = [sys.executable, "-m", "benchmarks"] + (["--quick"] if args.quick else [])
    cmd += (["--smoke"] if args.smoke else []) + (["--only", args.only] if args.only else [])
    cmd += ["--backend", args.backend] if args.backend else []
    cmd += ["--without", args.without] if args.without else []
    return subprocess.call(cmd, cwd=root)


def _explore(args, ap) -> int:
    from plait.explorer import explore
    fn, arrays = _function_and_args(args)
    name = args.target.rpartition(":")[2].replace(".", "_")
    path = args.output or f"{name}{'_grad' if args.grad else ''}.html"
    explore(fn, *arrays, path=path)
    print(path)
    return 0


def _human(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


_COMMANDS = {"doctor": _doctor, "config": _config, "show": _show, "cache": _cache, "bench": _bench,
             "explore": _explore}
