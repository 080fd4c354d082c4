"""The benchmark suite: ``python -m benchmarks [--quick] [--backend native|interp]``.

Runs the workloads of docs/workloads.md (W1-W7, plus the FFT rows of
issue 18 and the ONNX rows of issue 25) in one process, each
system interleaved with the others, checks that all systems compute the same
numbers (each row states its tolerance) and prints a markdown table of median
times with ratios to ``plait.jit``, the first-call (trace + compile) times, the
VGG19 equation counts (Julia paper, Figure 9), the lazy-training report (W6), compile
time against program size (CS, ``benchmarks/compile_scaling.py``) and, in the full
run, the kernel-level report (K, ``benchmarks/kernels.py``); the model rows (JM,
``benchmarks/jax_models.py``: JAX-style programs, one epoch each, float32).
Peers: NumPy always; JAX (``jax.jit``) and PyTorch (eager and ``torch.compile``, in
W1, W2, W4, W5 and K's convolutions; ``benchmarks/torch_peer.py``) when installed.

``--only w1,w5`` picks workloads; ``--smoke`` shrinks every size (for tests);
``--without torch`` leaves an installed peer out.
Exit status 1 when any workload failed its check or raised.

First calls are reported with cold and warm kernel caches: the run compiles into a
fresh, empty plait kernel cache and TorchInductor cache (temporary directories), then
runs every row's first calls again in a new process over the caches it filled
(``--first-calls``: first calls and checks only, printed as JSON). Each row's plait.jit
is timed both interleaved with its peers and alone, and so is jax.jit
(``benchmarks.common.measure``).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

import plait
from benchmarks.common import Config, Row, markdown
from benchmarks.torch_peer import torch_module
from benchmarks import harness
from benchmarks.harness import optional_import
from plait.runtime.progress import bar

WORKLOADS = [
    ("w1", "benchmarks.w1_mlp", "run"),
    ("w2", "benchmarks.w2_selu", "run"),
    ("w3", "benchmarks.w3_newton_cg", "run"),
    ("w4", "benchmarks.w4_allcnn", "run"),
    ("w5", "benchmarks.w5_vgg19", "run"),
    ("w6", "benchmarks.lazy_training", "run"),
    ("w7", "benchmarks.eager_overhead", "run_w7"),
    ("fft", "benchmarks.fft", "run"),
    ("cs", "benchmarks.compile_scaling", "run"),
    ("k", "benchmarks.kernels", "run"),
    ("la", "benchmarks.linalg", "run"),
    ("onnx", "benchmarks.onnx", "run"),
    ("jm", "benchmarks.jax_models", "run"),
]
FULL_ONLY = {"k"}            # kernel-level report: in the full run or with --only k
# Workloads without first calls of their own to repeat warm: W6 and K report text,
# CS measures compile time with its own cold cache.
NO_WARM_PASS = {"w6", "k", "cs"}
WARM_MARK = "warm first calls: "


def _run_one(key: str, module: str, fn: str, cfg: Config):
    """``(rows, extra_text)`` of one workload."""
    mod = importlib.import_module(module)
    if key == "w6":
        steps = 5 if cfg.smoke else 30 if cfg.quick else 200
        return [], mod.run(steps)
    if key == "k":
        return [], mod.run(quick=cfg.quick)
    out = getattr(mod, fn)(cfg)
    if isinstance(out, tuple):
        return out
    return out, ""


def _note(text: str) -> None:
    """A line on stderr (over the progress bar's line on a terminal)."""
    sys.stderr.write(("\r\033[K" if sys.stderr.isatty() else "") + text + "\n")
    sys.stderr.flush()


def _missing(peer: str) -> str:
    return f"{peer} left out (--without)" if peer in harness.WITHOUT else f"{peer} not installed"


def header(cfg: Config) -> str:
    jax = optional_import("jax")
    torch = torch_module()
    peers = ["numpy " + np.__version__]
    peers.append(f"jax {jax.__version__}" if jax else _missing("jax"))
    peers.append(f"torch {torch.__version__} (eager and torch.compile; "
                 f"{torch.get_num_threads()} threads, as plait)" if torch else _missing("torch"))
    mode = "smoke" if cfg.smoke else "quick" if cfg.quick else "full"
    return (f"# plait benchmarks ({mode}; backend {cfg.backend}; {os.cpu_count()} CPUs; "
            f"python {platform.python_version()})\n\npeers: {', '.join(peers)}\n\n"
            f"Times are medians of interleaved runs; (Nx) = system time / plait.jit time, "
            f"so > 1 means plait.jit is faster; plait.jit alone = its calls back to back, "
            f"(Nx) against its interleaved time; jax.jit alone = its calls back to back, "
            f"(Nx) against plait.jit alone. First call = trace + compile + one run, "
            f"cold: kernel caches empty; warm: a new process over the caches this run filled.")


def _fresh_caches(d: str) -> None:
    """Point plait's kernel cache and TorchInductor's cache at (empty) ``d``."""
    os.environ["PLAIT_CACHE_DIR"] = os.path.join(d, "plait")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(d, "inductor")


def warm_first_calls(keys: list[str], cfg: Config) -> dict[str, dict[str, float]]:
    """Row name -> system -> first-call seconds in a new process that reuses this
    process's kernel caches (``--first-calls``)."""
    size = ["--smoke"] if cfg.smoke else ["--quick"] if cfg.quick else []
    cmd = [sys.executable, "-m", "benchmarks", "--first-calls", "--backend", cfg.backend,
           "--only", ",".join(keys), "--without", ",".join(sorted(harness.WITHOUT))] + size
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(WARM_MARK)]
    if not lines:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the warm-cache pass failed (exit {r.returncode}): {tail}")
    return json.loads(lines[-1][len(WARM_MARK):])


def _compile_bytecode() -> None:
    """plait's modules compiled to bytecode once, as pip does when it installs a wheel
    and as the peers' installed modules are. Where PYTHONDONTWRITEBYTECODE is set (this
    project's machines set it) an editable install never caches its bytecode, so every
    process compiled plait's sources when it imported them, and the first jitted call,
    which imports the native backend, counted ~90 ms of it against jax's precompiled
    modules (W1 cold first call: 274 ms with, 90-105 ms without)."""
    if sys.dont_write_bytecode:
        import compileall
        compileall.compile_dir(os.path.dirname(plait.__file__), quiet=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small repetitions (< 3 min)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, for tests")
    ap.add_argument("--backend", choices=["native", "interp", "xla"], default=None,
                    help="plait.jit backend (default: plait.config)")
    ap.add_argument("--only", default="", help="comma-separated workloads, e.g. w1,w5")
    ap.add_argument("--first-calls", action="store_true",
                    help="only the rows' first calls and checks, as JSON (the warm-cache pass)")
    ap.add_argument("--without", default="",
                    help="comma-separated peers to leave out even when installed: jax, torch")
    args = ap.parse_args(argv)
    harness.WITHOUT = {s.strip().lower() for s in args.without.split(",") if s.strip()}
    if harness.WITHOUT - {"jax", "torch"}:
        ap.error(f"--without takes jax and torch, not {sorted(harness.WITHOUT - {'jax', 'torch'})}")
    if args.backend:
        plait.config.backend = args.backend
    cfg = Config(quick=args.quick or args.smoke, smoke=args.smoke,
                 backend=plait.config.resolved_backend(), first_calls_only=args.first_calls)
    only = {s.strip().lower() for s in args.only.split(",") if s.strip()}
    unknown = only - {k for k, _, _ in WORKLOADS}
    if unknown:
        ap.error(f"unknown workload(s) {sorted(unknown)}; choose from "
                 f"{[k for k, _, _ in WORKLOADS]}")
    _compile_bytecode()
    if args.first_calls:
        return _first_calls_pass(only, cfg)
    with tempfile.TemporaryDirectory(prefix="plait_bench_") as d:
        _fresh_caches(d)
        return _run(only, cfg)


def _first_calls_pass(only: set, cfg: Config) -> int:
    """Each row's first-call seconds as one JSON line (the caches are the caller's)."""
    firsts = {}
    for key, module, fn in WORKLOADS:
        if key in only and key not in NO_WARM_PASS:
            try:
                rows, _ = _run_one(key, module, fn, cfg)
            except Exception as e:  # the main run reports the failure; its rows stay cold only
                _note(f"{key}: warm-cache pass failed ({type(e).__name__}: {e})")
                continue
            firsts.update({r.workload: r.first_call for r in rows if r.first_call})
    print(WARM_MARK + json.dumps(firsts), flush=True)
    return 0


def _run(only: set, cfg: Config) -> int:
    """Run the chosen workloads and print the report; 1 when any failed."""
    print(header(cfg), flush=True)
    rows, extras, failures = [], [], []
    t_all = time.perf_counter()
    chosen = [w for w in WORKLOADS if not ((only and w[0] not in only)
                                           or (not only and cfg.quick and w[0] in FULL_ONLY))]
    for n, (key, module, fn) in enumerate(chosen):
        bar(n, len(chosen), f"running {key}")        # on a terminal only
        t0 = time.perf_counter()
        try:
            r, text = _run_one(key, module, fn, cfg)
        except Exception as e:  # report and go on: one broken workload must not hide the rest
            msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
            failures.append(key)
            rows.append(Row(f"{key.upper()} FAILED", check=f"{type(e).__name__}: {msg}"[:200]))
            _note(f"{key}: FAILED ({type(e).__name__}: {msg})")
            continue
        rows += r
        if any(row.failed for row in r):
            failures.append(key)
        if text:
            extras.append(text)
        _note(f"{key}: done in {time.perf_counter() - t0:.1f} s")
    warm_keys = [k for k, _, _ in chosen if k not in NO_WARM_PASS and k not in failures]
    if warm_keys:
        bar(len(chosen), len(chosen) + 1, "first calls, warm caches")
        t0 = time.perf_counter()
        try:
            warm = warm_first_calls(warm_keys, cfg)
            _note(f"warm-cache first calls: done in {time.perf_counter() - t0:.1f} s")
        except Exception as e:      # the cold-cache table still stands
            warm = {}
            extras.append(f"warm-cache first calls not measured: {e}")
        for row in rows:
            row.warm_first_call = {s: t for s, t in warm.get(row.workload, {}).items()
                                   if s in row.first_call}
    bar(len(chosen), len(chosen), "workloads done")
    print("\n" + markdown(rows))
    for text in extras:
        print("\n```\n" + text + "\n```")
    print(f"\ntotal {time.perf_counter() - t_all:.1f} s"
          + (f"; FAILED: {', '.join(failures)}" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
