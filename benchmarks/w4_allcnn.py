"""W4 — All-convolutional CIFAR-10 SGD step (JAX paper, Table 2; docs/workloads.md).

Springenberg et al.'s All-CNN-C (``plait.example_libraries.models.AllCNNC``), NHWC,
batch 32 of 32x32x3 inputs, He-normal weights (seed 0), softmax cross-entropy, one
SGD step ``params - 0.01 * grad``. plait runs the stax model (jit and eager);
NumPy runs im2col convolutions with a hand-written backward pass; JAX runs
``jax.jit`` of the same network in ``jax.lax``; PyTorch runs it with
``torch.nn.functional`` (NCHW in ``channels_last`` memory format, i.e. NHWC in memory;
``torch.autograd.grad``), eager and with the loss ``torch.compile``-d. ``--quick``
leaves out the eager run. ``python -m benchmarks.w4_allcnn``.
"""
from __future__ import annotations

import numpy as np

import plait
import plait.numpy as pnp
from plait import nn
from plait.example_libraries import models
from benchmarks import np_convnet as npc
from benchmarks.common import (xla_jit, Config, Row, check_row, first_outputs, jax_modules, measure,
                               standalone)
from benchmarks import torch_peer

LR = 0.01
RTOL = 1e-2   # bias gradients are sums of many cancelling float32 terms


def spec():
    """The layer spec of All-CNN-C (mirrors ``models.AllCNNC``)."""
    out = []
    for i, (c, k, s, pad) in enumerate(models.ALL_CNN_C):
        out.append(("conv", s, pad, k))
        out.append(("relu",) if i < len(models.ALL_CNN_C) - 1 else ("gap",))
    return out


def widths(num_classes: int = 10):
    return [c or num_classes for c, _, _, _ in models.ALL_CNN_C]


def numpy_step(sp, params, x, y1h):
    logits, caches = npc.forward(sp, params, x)
    _, g = npc.softmax_xent(logits, y1h)
    grads = npc.backward(sp, caches, g)
    return [None if p is None else (p[0] - LR * gp[0], p[1] - LR * gp[1])
            for p, gp in zip(params, grads)]


def torch_step(torch, sp, params, x, y1h) -> dict:
    """The SGD step in PyTorch: eager and with ``torch.compile`` of the loss."""
    def loss(flat, x, y):
        logits = torch_peer.convnet_forward(torch, sp, flat, x)
        return -torch.mean(torch.sum(torch.log_softmax(logits, -1) * y, -1))

    def build(wrap):
        grad = torch_peer.grad_fn(torch, loss, wrap)

        def step(flat, x, y):
            g = grad(flat, x, y)
            with torch.no_grad():
                return [p - LR * d for p, d in zip(flat, g)]
        return step
    flat = torch_peer.convnet_params(torch, sp, params, requires_grad=True)
    return torch_peer.pair(torch, build, flat, torch_peer.images(torch, x),
                           torch.from_numpy(y1h))


def _spec_layout(sp, system: str, out):
    """A system's updated parameters in the NumPy reference's layout."""
    if system.startswith("plait"):
        return npc.from_stax(sp, out)
    if system.startswith("torch"):
        return torch_peer.convnet_to_spec(sp, out)
    return out


def run(cfg: Config) -> list[Row]:
    batch = 2 if cfg.smoke else 32
    sp = spec()
    params = npc.init_params(sp, (batch, 32, 32, 3), seed=0, out_channels=widths())
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, 32, 32, 3)).astype(np.float32)
    y1h = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]

    _, apply_fun = models.AllCNNC()

    def loss(p, x, y):
        return -pnp.mean(pnp.sum(nn.log_softmax(apply_fun(p, x)) * y, axis=-1))

    def update(p, x, y):
        g = plait.grad(loss)(p, x, y)
        return plait.tree_util.tree_map(lambda a, b: a - LR * b, p, g)

    sparams = npc.to_stax(sp, params)
    jstep = plait.jit(update)
    cands = {"plait.jit": lambda: jstep(sparams, x, y1h),
             "numpy": lambda: numpy_step(sp, params, x, y1h)}
    xstep = xla_jit(update)
    if xstep is not None:
        cands["plait xla"] = lambda: xstep(sparams, x, y1h)
    if not cfg.quick or cfg.smoke:                  # op by op: seconds per step
        cands["plait eager"] = lambda: update(sparams, x, y1h)
    jax, jnp = jax_modules()
    if jax is not None:
        def jloss(p, x, y):
            logits = npc.jax_forward(jax, sp, p, x)
            return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

        @jax.jit
        def jupdate(p, x, y):
            g = jax.grad(jloss)(p, x, y)
            return jax.tree_util.tree_map(lambda a, b: a - LR * b, p, g)
        cands["jax.jit"] = lambda: jupdate(params, x, y1h)
    torch = torch_peer.torch_module()
    if torch is not None:
        cands.update(torch_step(torch, sp, params, x, y1h))
    ref = numpy_step(sp, params, x, y1h)
    outs, first = first_outputs(cands)
    row = Row(f"W4 All-CNN-C SGD step b{batch}", first_call=first)
    if check_row(row, ref, outs, RTOL,
                 convert=lambda k, o: _spec_layout(sp, k, o)):
        measure(row, cands, cfg)
    return [row]


if __name__ == "__main__":
    standalone(run)
