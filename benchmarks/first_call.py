"""Time to first result and to steady state of one workload, in this (fresh) process.

``python -m benchmarks.first_call WORKLOAD SYSTEM [--seconds S]`` builds the workload
(``w1``, ``w4``, ``w5bwd``, ``cs100``/``cs300``/``cs1000`` (the unrolled loop of
``compile_scaling``), ``digits``) for ``SYSTEM`` (``plait`` or ``jax``), then calls it
repeatedly for about ``S`` seconds (default 20; at least until 3 calls after steady
state) and prints one JSON line: ``first_s`` (the first call, trace and compile
included, its result read back), ``steady_at_s`` (seconds from the first call's start
until the first call that runs within 1.5x of the best call, i.e. the optimized code
answers), ``best_s`` (the best call) and ``calls``. Run it in a fresh process with a
fresh ``PLAIT_CACHE_DIR`` for a cold cache (the GEMM library is then absent too).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _w1(system):
    from benchmarks import w1_mlp
    params, x, t = w1_mlp.make_data()
    if system == "jax":
        import jax
        import jax.numpy as jnp
        f = jax.jit(jax.grad(w1_mlp.make_loss(jnp)))
    else:
        import plait
        import plait.numpy as pnp
        f = plait.jit(plait.grad(w1_mlp.make_loss(pnp)))
    return lambda: f(params, x, t)


def _convnet(system, which):
    from benchmarks import np_convnet as npc
    from plait.example_libraries import models
    if which == "w4":
        from benchmarks import w4_allcnn as w
        sp, shape = w.spec(), (32, 32, 32, 3)
        params = npc.init_params(sp, shape, seed=0, out_channels=w.widths())
        _, apply_fun = models.AllCNNC()
    else:
        from benchmarks import w5_vgg19 as w
        sp, shape = w.spec(), (1, 224, 224, 3)
        params = npc.init_params(sp, shape, seed=0, out_channels=w.widths(4096, 1000))
        _, apply_fun = models.VGG19(1000, 4096)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    y1h = np.eye(10, dtype=np.float32)[np.arange(shape[0]) % 10]
    if system == "jax":
        import jax
        import jax.numpy as jnp

        def jloss(p, x, y):
            logits = npc.jax_forward(jax, sp, p, x)
            if which == "w4":
                return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))
            return jnp.sum(logits)

        @jax.jit
        def step(p, x, y):
            g = jax.grad(jloss)(p, x, y)
            if which == "w4":
                return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)
            return g
        return lambda: step(params, x, y1h)
    import plait
    import plait.numpy as pnp
    from plait import nn
    sparams = npc.to_stax(sp, params)

    def loss(p, x, y):
        if which == "w4":
            return -pnp.mean(pnp.sum(nn.log_softmax(apply_fun(p, x)) * y, axis=-1))
        return pnp.sum(apply_fun(p, x))

    def step(p, x, y):
        g = plait.grad(loss)(p, x, y)
        if which == "w4":
            return plait.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)
        return g
    f = plait.jit(step)
    return lambda: f(sparams, x, y1h)


def _unrolled(system, n):
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    if system == "jax":
        import jax
        import jax.numpy as jnp

        def g(x):
            for _ in range(n):
                x = jnp.tanh(x * 1.01 + 0.1) + x.mean()
            return x
        f = jax.jit(g)
    else:
        import plait
        from benchmarks.compile_scaling import unrolled
        f = plait.jit(unrolled(n))
    return lambda: f(x)


def _digits(system):
    if system == "jax":
        raise SystemExit("the digits example is plait's")
    import plait
    from plait import random
    from plait.example_libraries import optimizers
    from plait.examples import digits
    x_tr, y_tr, _, _ = digits.load_data(0)
    init_fun, apply_fun = digits.make_model()
    _, params = init_fun(random.key(0), (64,) + x_tr.shape[1:])
    opt = optimizers.adam(3e-3)
    update, _ = digits.make_updates(apply_fun, opt)
    step = plait.jit(update)
    box = [opt.init_fun(params), 0]

    def call():
        loss, box[0] = step(box[1], box[0], x_tr[:64], y_tr[:64])
        box[1] += 1
        return loss
    return call


def _block(out) -> None:
    import plait.tree_util as tu
    for leaf in tu.tree_leaves(out):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        np.asarray(leaf)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("system", choices=("plait", "jax"))
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    w = a.workload
    if w == "w1":
        call = _w1(a.system)
    elif w in ("w4", "w5bwd"):
        call = _convnet(a.system, w)
    elif w.startswith("cs"):
        call = _unrolled(a.system, int(w[2:]))
    elif w == "digits":
        call = _digits(a.system)
    else:
        raise SystemExit(f"unknown workload {w}")
    stamps = []
    t_start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        _block(call())
        t1 = time.perf_counter()
        stamps.append((t0 - t_start, t1 - t0))
        best = min(d for _, d in stamps)
        steady = next(i for i, (_, d) in enumerate(stamps) if d <= 1.5 * best)
        if t1 - t_start > a.seconds and len(stamps) - steady > 3:
            break
    print(json.dumps({"workload": w, "system": a.system, "first_s": round(stamps[0][1], 3),
                      "steady_at_s": round(stamps[steady][0] + stamps[steady][1], 3),
                      "best_s": round(best, 5), "calls": len(stamps)}))


if __name__ == "__main__":
    main()
