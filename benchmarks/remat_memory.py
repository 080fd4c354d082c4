"""Rematerialization: peak temporary bytes and time of a deep MLP's gradient with and
without ``checkpoint`` per block (native backend).

    python -m benchmarks.remat_memory [--depth 16] [--width 512] [--batch 256]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import plait
import plait.numpy as pnp


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


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()
    main(a.depth, a.width, a.batch)
