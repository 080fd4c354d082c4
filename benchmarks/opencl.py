"""The opencl backend next to the native one (issue 16's report): W1, W2, matmul 1024
and a 3x3 convolution, each computed by ``plait.jit(backend="opencl")`` on the process's
OpenCL device (PoCL on a CPU when no GPU driver is installed) and by
``plait.jit(backend="native")``, checked against each other, then timed in interleaved
rounds. Each row gives the median wall time per call and the median CPU time per call
(user + system of the whole process, so the OpenCL driver's and OpenMP's threads
count), and the opencl/native ratio of each. The opencl inputs are put on the device
once (``device_put``), as a training loop keeps its weights there; outputs stay on the
device and each call waits for them (``block_until_ready``).

Performance on PoCL is not the goal (its kernels are compiled for a CPU from code
shaped for a GPU); the rows say where the OpenCL path stands.
``python -m benchmarks.opencl [--quick] [--smoke]``.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import plait
import plait.lax as lax
import plait.numpy as pnp
from benchmarks.common import assert_close, block
from benchmarks.harness import fmt_time, table
from benchmarks.w1_mlp import make_data, make_loss
from benchmarks.w2_selu import make_layer


def _workloads(smoke: bool) -> list:
    """``(name, function, host arguments, scaled tolerance)`` of each row."""
    rng = np.random.default_rng(0)
    w1 = make_data(*(((784, 64, 64, 10), 16) if smoke else ((784, 512, 512, 10), 128)))
    n = 64 if smoke else 1024
    x, W = ((rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32) for _ in range(2))
    b = rng.standard_normal((n,)).astype(np.float32)
    c, hw = (8, 8) if smoke else (64, 56)
    img = rng.standard_normal((1, hw, hw, c)).astype(np.float32)
    k = (rng.standard_normal((3, 3, c, c)) / np.sqrt(9 * c)).astype(np.float32)

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return [
        (f"W1 MLP grad {'-'.join(map(str, (784, 64, 64, 10) if smoke else (784, 512, 512, 10)))}",
         plait.grad(make_loss(pnp)), w1, 1e-4),
        (f"W2 SeLU dense {n}x{n}", make_layer(pnp), (x, W, b), 1e-5),
        (f"matmul f32 {n}", lambda p, q: p @ q, (x, W), 1e-5),
        (f"conv3x3 NHWC b1 {c}ch {hw}x{hw}", conv, (img, k), 1e-5),
    ]


def _time(calls: dict, rounds: int, target_s: float) -> dict:
    """``{name: (median wall s, median CPU s)}`` per call, in interleaved rounds."""
    numbers = {}
    for name, f in calls.items():
        t0 = time.perf_counter()
        f()
        numbers[name] = max(1, int(target_s / max(time.perf_counter() - t0, 1e-9)))
    samples = {name: ([], []) for name in calls}
    for _ in range(rounds):
        for name, f in calls.items():
            n = numbers[name]
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(n):
                f()
            samples[name][0].append((time.perf_counter() - w0) / n)
            samples[name][1].append((time.process_time() - c0) / n)
    return {k: (statistics.median(w), statistics.median(c)) for k, (w, c) in samples.items()}


def run(quick: bool = False, smoke: bool = False) -> str:
    """The report: one table row per workload."""
    from plait.backends.native.tiered import wait_all
    dev = plait.devices("opencl")[0]
    rows = []
    for name, fn, args, rtol in _workloads(smoke):
        native, opencl = plait.jit(fn, backend="native"), plait.jit(fn, backend="opencl")
        on_dev = plait.device_put(args, dev)
        want = block(native(*args))
        wait_all()
        t0 = time.perf_counter()
        got = block(opencl(*on_dev))
        first = time.perf_counter() - t0
        err = assert_close(name, want, got, rtol)
        t = _time({"native": lambda: block(native(*args)),
                   "opencl": lambda: block(opencl(*on_dev))},
                  rounds=2 if smoke else 3 if quick else 7,
                  target_s=0.01 if smoke else 0.2)
        (nw, nc), (ow, oc) = t["native"], t["opencl"]
        rows.append([name, fmt_time(nw), fmt_time(nc), fmt_time(ow), fmt_time(oc),
                     f"{ow / nw:.1f}x", f"{oc / nc:.1f}x", fmt_time(first), f"{err:.1e}"])
    d = plait.backends.opencl.device.opencl_device().device
    title = (f"opencl ({d.name.strip()} on {d.platform.name.strip()}, "
             f"{d.max_compute_units} compute units) vs native; per call, medians")
    return table(title, rows, ["workload", "native wall", "native CPU", "opencl wall",
                               "opencl CPU", "wall ratio", "CPU ratio",
                               "opencl first call", "max scaled diff"])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.opencl",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, for tests")
    args = ap.parse_args(argv)
    print(run(quick=args.quick, smoke=args.smoke))


if __name__ == "__main__":
    main()
