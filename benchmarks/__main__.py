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

``--only w1,w5`` picks workloads; ``--smoke`` shrinks every size (for tests).
Exit status 1 when any workload failed its check or raised.
"""
from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time

import numpy as np

import plait
from benchmarks.common import Config, Row, markdown
from benchmarks.torch_peer import torch_module
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


def header(cfg: Config) -> str:
    jax = optional_import("jax")
    torch = torch_module()
    peers = ["numpy " + np.__version__]
    peers.append(f"jax {jax.__version__}" if jax else "jax not installed")
    peers.append(f"torch {torch.__version__} (eager and torch.compile; "
                 f"{torch.get_num_threads()} threads, as plait)" if torch else "torch not installed")
    mode = "smoke" if cfg.smoke else "quick" if cfg.quick else "full"
    return (f"# plait benchmarks ({mode}; backend {cfg.backend}; {os.cpu_count()} CPUs; "
            f"python {platform.python_version()})\n\npeers: {', '.join(peers)}\n\n"
            f"Times are medians of interleaved runs; (Nx) = system time / plait.jit time, "
            f"so > 1 means plait.jit is faster. First call = trace + compile + one run.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small repetitions (< 3 min)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, for tests")
    ap.add_argument("--backend", choices=["native", "interp", "xla"], default=None,
                    help="plait.jit backend (default: plait.config)")
    ap.add_argument("--only", default="", help="comma-separated workloads, e.g. w1,w5")
    args = ap.parse_args(argv)
    if args.backend:
        plait.config.backend = args.backend
    cfg = Config(quick=args.quick or args.smoke, smoke=args.smoke,
                 backend=plait.config.resolved_backend())
    only = {s.strip().lower() for s in args.only.split(",") if s.strip()}
    unknown = only - {k for k, _, _ in WORKLOADS}
    if unknown:
        ap.error(f"unknown workload(s) {sorted(unknown)}; choose from "
                 f"{[k for k, _, _ in WORKLOADS]}")
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
    bar(len(chosen), len(chosen), "workloads done")
    print("\n" + markdown(rows))
    for text in extras:
        print("\n```\n" + text + "\n```")
    print(f"\ntotal {time.perf_counter() - t_all:.1f} s"
          + (f"; FAILED: {', '.join(failures)}" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
