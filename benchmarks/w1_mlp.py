"""W1 — MLP gradient step (JAX paper, Listing 1; docs/workloads.md).

``loss = sum((predict(params, x) - targets)**2)`` with ``tanh`` layers
784-512-512-10, batch 128, weights ``normal * 0.01`` (seed 0). Timed: one
``grad(loss)(params, x, targets)``: plait jit and eager, NumPy with a
hand-written backward pass, JAX ``jit(grad)``. ``python -m benchmarks.w1_mlp``.
"""
from __future__ import annotations

import numpy as np

import plait
import plait.numpy as pnp
from benchmarks.common import (xla_jit, Config, Row, check_row, first_outputs, jax_modules, measure,
                               standalone)

RTOL = 1e-4


def make_data(sizes=(784, 512, 512, 10), batch: int = 128, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = [((rng.standard_normal((m, n)) * 0.01).astype(np.float32),
               (rng.standard_normal((n,)) * 0.01).astype(np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    t = rng.standard_normal((batch, sizes[-1])).astype(np.float32)
    return params, x, t


def make_loss(np_mod):
    """Listing 1's loss, written against a NumPy-like module."""
    def predict(params, inputs):
        outputs = inputs
        for W, b in params:
            outputs = np_mod.dot(inputs, W) + b
            inputs = np_mod.tanh(outputs)
        return outputs

    def loss(params, inputs, targets):
        preds = predict(params, inputs)
        return np_mod.sum((preds - targets) ** 2)
    return loss


def numpy_grad(params, x, t):
    """The gradient of the loss by a hand-written backward pass."""
    acts, outs = [x], []
    for W, b in params:
        o = acts[-1] @ W + b
        outs.append(o)
        acts.append(np.tanh(o))
    g = 2.0 * (outs[-1] - t)
    grads = []
    for i in range(len(params) - 1, -1, -1):
        W, _ = params[i]
        grads.append((acts[i].T @ g, g.sum(axis=0)))
        if i:
            g = (g @ W.T) * (1.0 - acts[i] ** 2)
    return grads[::-1]


def run(cfg: Config) -> list[Row]:
    sizes, batch = ((784, 64, 64, 10), 16) if cfg.smoke else ((784, 512, 512, 10), 128)
    params, x, t = make_data(sizes, batch)
    ref = numpy_grad(params, x, t)
    loss = make_loss(pnp)
    gj = plait.jit(plait.grad(loss))
    ge = plait.grad(loss)
    cands = {"plait.jit": lambda: gj(params, x, t), "plait eager": lambda: ge(params, x, t),
             "numpy": lambda: numpy_grad(params, x, t)}
    gx = xla_jit(plait.grad(loss))
    if gx is not None:
        cands["plait xla"] = lambda: gx(params, x, t)
    jax, jnp = jax_modules()
    if jax is not None:
        jg = jax.jit(jax.grad(make_loss(jnp)))
        cands["jax.jit"] = lambda: jg(params, x, t)
    row = Row(f"W1 MLP grad {'-'.join(map(str, sizes))} b{batch}")
    outs, row.first_call = first_outputs(cands)
    if check_row(row, ref, outs, RTOL):
        measure(row, cands, cfg)
    return [row]


if __name__ == "__main__":
    standalone(run)
