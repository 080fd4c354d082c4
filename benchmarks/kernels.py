"""Kernel-level benchmarks (docs/workloads.md "K"): native plait kernels against NumPy.

* fused elementwise chain ``tanh(x*a + b) * sigmoid(x) + x**2`` over 16M float32 (8M
  with ``--quick``): effective GB/s (x read once, result written once: 8 bytes per
  element) against the STREAM triad ``out[i] = x[i] + s*y[i]`` (12 bytes per element,
  STREAM's count), one pass in C compiled with the native backend's flags on as many
  OpenMP threads as plait's kernels, in the same rounds. Both sizes are out of a 32 MB
  L3, but a large L3 holds the 8M triad's 96 MiB: on a 260 MB one it ran at 48 GB/s,
  against 26 from memory at 16M, while the chain, bound by its vector arithmetic, ran
  at 8M within 10% of its speed in L2 (2.7-3.0 ms against 2.6). Its extra column gives
  NumPy's chain and NumPy's triad (two passes on one thread, 20 bytes moved per element);
* float32 matmul 256/512/1024/2048: GFLOP/s against NumPy's BLAS;
* 3x3 stride-1 SAME convolutions NHWC (64ch 56x56, 256ch 14x14; batch 1 and 8):
  GFLOP/s against PyTorch CPU when installed (``channels_last``, i.e. NHWC in memory;
  its output checked against im2col; as many threads as plait), else NumPy im2col + BLAS;
  with torch, the extra column still gives im2col + BLAS and plait's ratio to it;
* row softmax 4096x4096 float32: GB/s against NumPy.

Every plait result is checked against the peer before timing.  Candidates are timed
in interleaved rounds (:func:`benchmarks.harness.compare`).  ``--threads 1`` runs the
whole benchmark in a child process with OpenMP and BLAS pinned to one thread, so one
invocation reports single-thread and all-core ratios side by side.

Run: ``python -m benchmarks.kernels [--threads 1|all|both] [--quick]``.  On machines
where ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` are set, unset them for the run
(``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.kernels``).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

import plait
import plait.lax as lax
import plait.numpy as pnp
from benchmarks.harness import compare, fmt_time, optional_import, table
from benchmarks.torch_peer import images, torch_module
from plait.backends.native.openmp import omp_threads
from plait.backends.native.tiered import wait_all
from plait.codegen import toolchain


def blas_info() -> str:
    """Which BLAS NumPy uses (threadpoolctl when installed, else NumPy's build config)."""
    tpc = optional_import("threadpoolctl")
    if tpc is not None:
        infos = tpc.threadpool_info()
        return "; ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')}, "
                         f"{i.get('num_threads')} threads)" for i in infos) or "unknown"
    try:
        cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{cfg.get('name')} {cfg.get('version')} (threadpoolctl not installed)"
    except Exception:  # pragma: no cover
        return "unknown"


def _chain(x, a, b):
    return pnp.tanh(x * a + b) * (1 / (1 + pnp.exp(-x))) + x ** 2


_TRIAD = r"""
void triad(float *restrict out, const float *restrict x, const float *restrict y, float s,
           long n, int threads) {
  #pragma omp parallel for schedule(static) num_threads(threads)
  for (long i = 0; i < n; i++) out[i] = x[i] + s * y[i];
}
"""


def _c_triad(directory: str):
    """The STREAM triad, compiled as the native backend compiles kernels."""
    so = os.path.join(directory, "triad.so")
    toolchain.build_shared_object(_TRIAD, so, toolchain.require_toolchain())
    fn = ctypes.CDLL(so).triad
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_float, ctypes.c_long, ctypes.c_int]
    fn.restype = None
    return fn


def bench_elementwise(n: int) -> list:
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    a, b = np.float32(0.7), np.float32(0.1)
    f = plait.jit(_chain, backend="native")
    want = np.tanh(x * a + b) * (1 / (1 + np.exp(-x))) + x ** 2
    np.testing.assert_allclose(f(x, a, b), want, rtol=2e-5, atol=1e-6)
    wait_all()              # time native code, not the interpreter tier's first calls
    out = np.empty_like(x)
    s = np.float32(3.0)
    with tempfile.TemporaryDirectory() as d:
        c_triad = _c_triad(d)
    args = (out.ctypes.data, x.ctypes.data, y.ctypes.data, s, n, omp_threads())
    c_triad(*args)
    np.testing.assert_allclose(out, x + s * y, rtol=1e-6, atol=1e-6)   # one FMA rounding

    def numpy_triad():
        np.multiply(y, s, out=out)
        np.add(x, out, out=out)

    def numpy_chain():
        return np.tanh(x * a + b) * (1 / (1 + np.exp(-x))) + x ** 2

    t = compare({"plait": lambda: f(x, a, b), "triad": lambda: c_triad(*args),
                 "numpy triad": numpy_triad, "numpy": numpy_chain}, rounds=7)
    gbs = 8 * n / t["plait"] / 1e9
    triad_gbs = 12 * n / t["triad"] / 1e9
    return [[f"eltwise chain f32[{n}]", fmt_time(t["plait"]), f"{gbs:.1f} GB/s",
             f"triad {triad_gbs:.1f} GB/s", f"{gbs / triad_gbs:.2f}",
             f"numpy {8 * n / t['numpy'] / 1e9:.1f} GB/s, "
             f"numpy triad {20 * n / t['numpy triad'] / 1e9:.1f} GB/s"]]


def bench_matmul(sizes) -> list:
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        A = rng.standard_normal((n, n)).astype(np.float32)
        B = rng.standard_normal((n, n)).astype(np.float32)
        f = plait.jit(lambda p, q: p @ q, backend="native")
        np.testing.assert_allclose(f(A, B), A @ B, rtol=1e-3, atol=1e-3 * np.sqrt(n))
        wait_all()          # native code, not the interpreter tier (NumPy's BLAS) answering
        t = compare({"plait": lambda: f(A, B), "numpy": lambda: A @ B},
                    rounds=7 if n <= 1024 else 3)
        gf = {k: 2 * n ** 3 / v / 1e9 for k, v in t.items()}
        rows.append([f"matmul f32 {n}", fmt_time(t["plait"]), f"{gf['plait']:.1f} GFLOP/s",
                     f"numpy {gf['numpy']:.1f} GFLOP/s", f"{gf['plait'] / gf['numpy']:.2f}", ""])
    return rows


def _im2col_conv(x, w):
    n, h, wd, c = x.shape
    kh, kw, _, co = w.shape
    p = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    cols = np.empty((n, h, wd, kh, kw, c), x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, i, j, :] = p[:, i:i + h, j:j + wd, :]
    return (cols.reshape(n * h * wd, kh * kw * c) @ w.reshape(kh * kw * c, co)).reshape(n, h, wd, co)


def bench_conv(cases) -> list:
    torch = torch_module()
    rows = []
    f = plait.jit(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")), backend="native")
    for bsz, c, hw in cases:
        rng = np.random.default_rng(c + hw)
        x = rng.standard_normal((bsz, hw, hw, c)).astype(np.float32)
        w = (rng.standard_normal((3, 3, c, c)) / np.sqrt(9 * c)).astype(np.float32)
        want = _im2col_conv(x, w)
        np.testing.assert_allclose(f(x, w), want, rtol=1e-3, atol=1e-3)
        wait_all()          # native code, not the interpreter tier's BLAS convolution
        # im2col + BLAS, the baseline any convolution kernel must beat, always runs;
        # torch's direct convolution (oneDNN), when installed, is the row's main peer
        cands = {"plait": lambda: f(x, w), "im2col": lambda: _im2col_conv(x, w)}
        peer = "im2col"
        if torch is not None:       # NHWC in memory too (channels_last), as plait's
            tx = images(torch, x)
            tw = torch.from_numpy(w).permute(3, 2, 0, 1).contiguous(
                memory_format=torch.channels_last)
            peer = "torch"
            cands[peer] = lambda: torch.nn.functional.conv2d(tx, tw, padding=1)
            np.testing.assert_allclose(cands[peer]().permute(0, 2, 3, 1), want,
                                       rtol=1e-3, atol=1e-3)
        t = compare(cands, rounds=5)
        fl = 2 * bsz * hw * hw * c * c * 9
        gf = {k: fl / v / 1e9 for k, v in t.items()}
        extra = "" if peer == "im2col" else \
            f"im2col+BLAS {gf['im2col']:.1f} GFLOP/s ({gf['plait'] / gf['im2col']:.2f})"
        rows.append([f"conv3x3 NHWC b{bsz} {c}ch {hw}x{hw}", fmt_time(t["plait"]),
                     f"{gf['plait']:.1f} GFLOP/s", f"{peer} {gf[peer]:.1f} GFLOP/s",
                     f"{gf['plait'] / gf[peer]:.2f}", extra])
    return rows


def _softmax(x):
    m = pnp.max(x, axis=1, keepdims=True)
    e = pnp.exp(x - m)
    return e / pnp.sum(e, axis=1, keepdims=True)


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def bench_softmax(n: int) -> list:
    x = np.random.default_rng(3).standard_normal((n, n)).astype(np.float32)
    f = plait.jit(_softmax, backend="native")
    np.testing.assert_allclose(f(x), _np_softmax(x), rtol=1e-5, atol=1e-7)
    wait_all()
    t = compare({"plait": lambda: f(x), "numpy": lambda: _np_softmax(x)}, rounds=7)
    gb = {k: 2 * x.nbytes / v / 1e9 for k, v in t.items()}
    return [[f"softmax rows f32[{n},{n}]", fmt_time(t["plait"]), f"{gb['plait']:.1f} GB/s",
             f"numpy {gb['numpy']:.1f} GB/s", f"{gb['plait'] / gb['numpy']:.2f}", ""]]


def run(quick: bool = False) -> str:
    """All kernel benchmarks as one table (threads as configured by the environment)."""
    rows = []
    rows += bench_elementwise(1 << 23 if quick else 1 << 24)
    rows += bench_matmul((256, 512) if quick else (256, 512, 1024, 2048))
    rows += bench_conv(((1, 64, 56), (1, 256, 14)) if quick else
                       ((1, 64, 56), (8, 64, 56), (1, 256, 14), (8, 256, 14)))
    rows += bench_softmax(1024 if quick else 4096)
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    return table(f"Kernels, {threads} thread(s); NumPy BLAS: {blas_info()}", rows,
                 ["workload", "plait time", "plait", "peer", "ratio", "extra"])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", choices=("1", "all", "both"), default="both")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    modes = ["1", "all"] if args.threads == "both" else [args.threads]
    for mode in modes:
        if mode == "all" and "OMP_NUM_THREADS" not in os.environ:
            print(run(args.quick), flush=True)
        else:
            env = dict(os.environ)
            if mode == "1":
                env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
            else:
                for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                    env.pop(k, None)
            cmd = [sys.executable, "-c",
                   f"from benchmarks.kernels import run; print(run({args.quick}))"]
            subprocess.run(cmd, env=env, check=True)
        print()


if __name__ == "__main__":
    main()
