"""Per-op eager overhead and jit dispatch latency (issue 2's benchmark; WORKLOADS W7).

``run_w7`` gives the W7 row of ``python -m benchmarks``; ``run`` the detailed report.

``plait.numpy.add`` and ``tanh`` on 4-element and 1M-element float32 arrays, op by
op, against NumPy and (when installed) JAX without jit; and a jitted ``x + 1``
on 4 elements against ``jax.jit`` and NumPy. Overhead = plait time - NumPy time.
"""
from __future__ import annotations

import numpy as np

import plait
import plait.numpy as pnp
from benchmarks.harness import compare, fmt_time, table, optional_import


def run() -> str:
    jax = optional_import("jax")
    rows = []
    for n in (4, 1 << 20):
        xn = np.linspace(-1, 1, n, dtype=np.float32)
        xp = pnp.asarray(xn)
        for op in ("add", "tanh"):
            c = {}
            if op == "add":
                c["numpy"] = lambda: np.add(xn, xn)
                c["plait"] = lambda: pnp.add(xp, xp)
            else:
                c["numpy"] = lambda: np.tanh(xn)
                c["plait"] = lambda: pnp.tanh(xp)
            if jax is not None:
                import jax.numpy as jnp
                xj = jnp.asarray(xn)
                c["jax"] = ((lambda: jnp.add(xj, xj).block_until_ready()) if op == "add"
                            else (lambda: jnp.tanh(xj).block_until_ready()))
            t = compare(c)
            over = t["plait"] - t["numpy"]
            rows.append([f"{op} f32[{n}]", fmt_time(t["numpy"]), fmt_time(t["plait"]),
                         fmt_time(over), fmt_time(t["jax"]) if "jax" in t else "-",
                         f"{t['jax'] / t['plait']:.2f}x" if "jax" in t else "-"])
    out = table("Eager op-by-op (per call; overhead = plait - numpy)", rows,
                ["op", "numpy", "plait", "plait overhead", "jax (no jit)", "jax/plait"])

    x4 = np.ones(4, np.float32)
    xp4 = pnp.asarray(x4)
    f = plait.jit(lambda x: x + 1)
    f(xp4)
    c = {"numpy": lambda: x4 + 1, "plait.jit": lambda: f(xp4)}
    if jax is not None:
        jf = jax.jit(lambda x: x + 1)
        xj4 = jax.numpy.asarray(x4)
        jf(xj4).block_until_ready()
        c["jax.jit"] = lambda: jf(xj4).block_until_ready()
    t = compare(c)
    rows2 = [[k, fmt_time(v), f"{v / t['plait.jit']:.2f}x"] for k, v in t.items()]
    out += "\n\n" + table(f"W7 dispatch: jitted x + 1 on f32[4] (backend {plait.config.backend})",
                          rows2, ["system", "per call", "time / plait.jit"])
    return out


if __name__ == "__main__":
    print(run())


def run_w7(cfg) -> list:
    """W7 as a row of the suite's table: a jitted ``x + 1`` on ``f32[4]``."""
    from benchmarks.common import Row, check_row, first_outputs, jax_modules, measure, xla_jit
    x4 = np.ones(4, np.float32)
    f = plait.jit(lambda x: x + 1)
    cands = {"plait.jit": lambda: f(x4), "plait eager": lambda: pnp.add(x4, 1),
             "numpy": lambda: x4 + 1}
    fx = xla_jit(lambda x: x + 1)
    if fx is not None:
        cands["plait xla"] = lambda: fx(x4)
    jax, _ = jax_modules()
    if jax is not None:
        jf = jax.jit(lambda x: x + 1)
        cands["jax.jit"] = lambda: jf(x4)
    outs, first = first_outputs(cands)
    row = Row("W7 dispatch: jit(x + 1) on f32[4]", first_call=first)
    if check_row(row, x4 + 1, outs, 0.0):
        measure(row, cands, cfg)
    return [row]
