"""``plait.jit(f)(x)`` written inline: time of the first and of later calls, each with a
new wrapper (an MLP's gradient step).

    python -m benchmarks.inline_jit
"""
from __future__ import annotations

import time

import numpy as np

import plait
import plait.numpy as pnp


def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = pnp.tanh(pnp.dot(h, w) + b)
    w, b = params[-1]
    return pnp.mean((pnp.dot(h, w) + b - y) ** 2)


def step(params, x, y):
    g = plait.grad(loss)(params, x, y)
    return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, g)]


def main() -> None:
    rng = np.random.RandomState(0)
    sizes = [64, 128, 128, 128, 10]
    params = [(rng.randn(a, b) / np.sqrt(a), np.zeros(b)) for a, b in zip(sizes, sizes[1:])]
    x, y = rng.randn(32, 64), rng.randn(32, 10)
    for i in range(3):
        t0 = time.perf_counter()
        plait.jit(step)(params, x, y)          # a new wrapper every call
        print(f"call {i + 1}: {(time.perf_counter() - t0) * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()
