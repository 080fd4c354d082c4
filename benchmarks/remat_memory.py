"""Rematerialization: peak temporary bytes and time of a gradient with and without
``checkpoint`` per block (native backend): a deep MLP, or (``--vgg19``) the W5 VGG19
backward pass ``grad(lambda p: sum(model(p, x)))`` with each of its five conv blocks
(convs + ReLUs + max-pool) checkpointed.

    python -m benchmarks.remat_memory [--depth 16] [--width 512] [--batch 256]
    python -m benchmarks.remat_memory --vgg19 [--size 224] [--batch 1]

Measured 2026-11-23 (2 shared cores, load ~12): VGG19 224px b1 backward, peak temporary
bytes 419.9 MiB plain, 214.8 MiB with checkpoint per block (-49%); time 6.26 s and
7.00 s (+12%); gradients identical.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import plait
import plait.numpy as pnp
from plait import random
from plait.example_libraries import models, stax


def main(depth: int = 16, width: int = 512, batch: int = 256, reps: int = 5) -> None:
    rng = np.random.RandomState(0)
    ws = [rng.randn(width, width).astype(np.float32) / np.sqrt(width) for _ in range(depth)]
    x = rng.randn(batch, width).astype(np.float32)

    def block(h, w):
        return pnp.tanh(pnp.dot(h, w)) + h

    def loss(ws, x, wrap):
        h = x
        for w in ws:
            h = wrap(block)(h, w)
        return pnp.sum(h * h)

    for label, wrap in [("plain", lambda f: f), ("checkpoint", plait.checkpoint),
                        ("checkpoint(dots_saveable)",
                         lambda f: plait.checkpoint(f, policy=plait.checkpoint_policies.dots_saveable))]:
        g = plait.jit(plait.grad(lambda ws, x: loss(ws, x, wrap)))
        comp = g.lower(ws, x).compile()
        ma = comp.memory_analysis()
        g(ws, x)
        t0 = time.perf_counter()
        for _ in range(reps):
            out = g(ws, x)
        dt = (time.perf_counter() - t0) / reps
        print(f"{label:28s} peak_temp={ma['peak_temp_bytes'] / 2**20:8.2f} MiB  "
              f"time={dt * 1e3:8.2f} ms  |g0|={float(np.abs(np.asarray(out[0])).sum()):.6g}")


def vgg19(checkpoint_blocks: bool, classes: int = 1000, dense: int = 4096) -> stax.Layer:
    """``models.VGG19`` with each conv block optionally wrapped in ``plait.checkpoint``."""
    layers = []
    for block in models.VGG19_BLOCKS:
        convs = []
        for c in block:
            convs += [stax.Conv(c, (3, 3), (1, 1), "SAME"), stax.Relu]
        init, apply = stax.serial(*convs, stax.MaxPool((2, 2), (2, 2)))
        layers.append((init, plait.checkpoint(apply)) if checkpoint_blocks else (init, apply))
    layers += [stax.Flatten, stax.Dense(dense), stax.Relu, stax.Dense(dense), stax.Relu,
               stax.Dense(classes)]
    return stax.serial(*layers)


def main_vgg19(size: int = 224, batch: int = 1, reps: int = 3) -> None:
    x = np.random.default_rng(1).standard_normal((batch, size, size, 3)).astype(np.float32)
    ref = None
    for label, ckpt in [("plain", False), ("checkpoint per block", True)]:
        init, apply = vgg19(ckpt)
        _, params = init(random.PRNGKey(0), x.shape)
        g = plait.jit(plait.grad(lambda p, x: pnp.sum(apply(p, x))))
        t0 = time.perf_counter()
        comp = g.lower(params, x).compile()
        t_compile = time.perf_counter() - t0
        ma = comp.memory_analysis()
        out = g(params, x)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            out = g(params, x)
            np.asarray(out[0][0][0])
            times.append(time.perf_counter() - t0)
        w0 = np.asarray(out[0][0][0])
        ref = w0 if ref is None else ref
        err = float(np.max(np.abs(w0 - ref)) / np.max(np.abs(ref)))
        print(f"VGG19 {size}px b{batch} backward, {label:22s} peak_temp="
              f"{ma['peak_temp_bytes'] / 2**20:9.2f} MiB  time={np.median(times) * 1e3:9.1f} ms"
              f"  compile={t_compile:6.1f} s  rel.err. vs plain={err:.1e}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--vgg19", action="store_true")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()
    if a.vgg19:
        main_vgg19(a.size, 1 if a.batch == 256 else a.batch)
    else:
        main(a.depth, a.width, a.batch)
