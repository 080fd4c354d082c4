"""W5 — VGG19 forward and backward (Julia-to-TPU paper, Figures 7-9; docs/workloads.md).

VGG19 configuration E (``plait.example_libraries.models.VGG19``), NHWC, 224x224x3
inputs, He-normal random weights (seed 0). Timed: forward at batch 1 and 8, and
the backward pass ``grad(lambda p: sum(model(p, x)))`` at batch 1 (``--quick``:
forward at batch 1 only, no eager run). Also prints the graphs' equation counts by primitive,
forward and backward, before (``plait.make_graph``) and after graph simplification
(``plait.jit(f).trace_graph``) — the paper's Figure 9 table. PyTorch runs the same
network with ``torch.nn.functional`` (NCHW in ``channels_last`` memory format, i.e.
NHWC in memory; the backward pass by ``torch.autograd.grad``), eager and with
``torch.compile``.
``python -m benchmarks.w5_vgg19``.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

import plait
import plait.numpy as pnp
from plait.core.graph import subgraphs_of
from plait.example_libraries import models
from benchmarks import np_convnet as npc
from benchmarks.common import (xla_jit, Config, Row, check_row, first_outputs, guarded, jax_modules,
                               measure, standalone)
from benchmarks.harness import table
from benchmarks import torch_peer

RTOL_FWD = 1e-3
# Backward: the first layers' weight gradients sum ~50k terms that cancel; float32
# NumPy and JAX are both ~1e-2 away from the float64 result there, so every system
# is checked against float64 NumPy with this tolerance.
RTOL_BWD = 3e-2


def float64_grads(sp, params, x):
    """The backward pass in float64 NumPy: the oracle for the float32 systems."""
    p64 = [None if p is None else (p[0].astype(np.float64), p[1].astype(np.float64))
           for p in params]
    out, caches = npc.forward(sp, p64, x.astype(np.float64))
    return npc.backward(sp, caches, np.ones_like(out))


def spec():
    """The layer spec of VGG19 (mirrors ``models.VGG19``)."""
    out = []
    for block in models.VGG19_BLOCKS:
        for _ in block:
            out += [("conv", 1, "SAME", 3), ("relu",)]
        out.append(("pool",))
    return out + [("flatten",), ("dense",), ("relu",), ("dense",), ("relu",), ("dense",)]


def widths(dense: int, classes: int):
    return [c for block in models.VGG19_BLOCKS for c in block] + [dense, dense, classes]


def _spec_layout(sp, system: str, grads):
    """A system's gradients in the NumPy reference's layout."""
    if system in ("plait.jit", "plait xla"):
        return npc.from_stax(sp, grads)
    if system.startswith("torch"):
        return torch_peer.convnet_to_spec(sp, grads)
    return grads


def count_eqns(graph) -> Counter:
    """Equations by primitive name, counting inside nested sub-graphs too."""
    c = Counter()
    for e in graph.eqns:
        c[e.prim.name] += 1
        for sub in subgraphs_of(e.params):
            c.update(count_eqns(sub))
    return c


def eqn_table(fwd, bwd, x, p) -> str:
    """Figure 9: counts before and after simplification, forward and backward."""
    cols = []
    for f in (fwd, bwd):
        before = count_eqns(plait.make_graph(f)(p, x).graph)
        after = count_eqns(plait.jit(f).trace_graph(p, x).graph)
        cols += [before, after]
    prims = sorted(set().union(*cols), key=lambda k: (-cols[2][k], k))
    rows = [[k] + [str(c.get(k, 0)) for c in cols] for k in prims]
    rows.append(["total"] + [str(sum(c.values())) for c in cols])
    return table("VGG19 graph equations by primitive (Julia paper, Figure 9)", rows,
                 ["primitive", "fwd before", "fwd after", "bwd before", "bwd after"])


def run(cfg: Config) -> tuple[list[Row], str]:
    if cfg.smoke:
        size, dense, classes, batches, backward = 32, 64, 10, (1,), True
    else:
        size, dense, classes = 224, 4096, 1000
        batches, backward = ((1,), False) if cfg.quick else ((1, 8), True)
    sp = spec()
    params = npc.init_params(sp, (1, size, size, 3), seed=0,
                             out_channels=widths(dense, classes))
    sparams = npc.to_stax(sp, params)
    _, apply_fun = models.VGG19(classes, dense)
    jax, jnp = jax_modules()
    jfwd = jax.jit(lambda p, x: npc.jax_forward(jax, sp, p, x)) if jax else None
    fwd = plait.jit(apply_fun)
    torch = torch_peer.torch_module()
    tparams = torch_peer.convnet_params(torch, sp, params) if torch else None
    xfwd = xla_jit(apply_fun)
    rows = []
    rng = np.random.default_rng(1)
    xs = {b: rng.standard_normal((b, size, size, 3)).astype(np.float32) for b in batches}
    x1 = rng.standard_normal((1, size, size, 3)).astype(np.float32)

    def forward_row(b: int) -> Row:
        x = xs[b]
        cands = {"plait.jit": lambda: fwd(sparams, x),
                 "numpy": lambda: npc.forward(sp, params, x)[0]}
        if xfwd is not None:
            cands["plait xla"] = lambda: xfwd(sparams, x)
        if b == 1 and (not cfg.quick or cfg.smoke):
            cands["plait eager"] = lambda: apply_fun(sparams, x)
        if jax is not None:
            cands["jax.jit"] = lambda: jfwd(params, x)
        if torch is not None:
            cands.update(torch_peer.pair(
                torch, lambda wrap: wrap(lambda p, x: torch_peer.convnet_forward(torch, sp, p, x)),
                tparams, torch_peer.images(torch, x)))
        outs, first = first_outputs(cands)
        row = Row(f"W5 VGG19 forward {size}px b{b}", first_call=first)
        if check_row(row, outs["numpy"], outs, RTOL_FWD, against="numpy"):
            measure(row, cands, cfg)
        return row

    def sum_out(p, x):
        return pnp.sum(apply_fun(p, x))
    bwd = plait.grad(sum_out)

    def backward_row() -> Row:
        jbwd = plait.jit(bwd)

        def numpy_bwd():
            out, caches = npc.forward(sp, params, x1)
            return npc.backward(sp, caches, np.ones_like(out))
        cands = {"plait.jit": lambda: jbwd(sparams, x1), "numpy": numpy_bwd}
        xbwd = xla_jit(bwd)
        if xbwd is not None:
            cands["plait xla"] = lambda: xbwd(sparams, x1)
        if jax is not None:
            jg = jax.jit(jax.grad(lambda p, x: jnp.sum(npc.jax_forward(jax, sp, p, x))))
            cands["jax.jit"] = lambda: jg(params, x1)
        if torch is not None:
            tgrad = [p.detach().requires_grad_(True) for p in tparams]
            cands.update(torch_peer.pair(
                torch, lambda wrap: torch_peer.grad_fn(
                    torch, lambda p, x: torch.sum(torch_peer.convnet_forward(torch, sp, p, x)),
                    wrap),
                tgrad, torch_peer.images(torch, x1)))
        outs, first = first_outputs(cands)
        row = Row(f"W5 VGG19 backward {size}px b1", first_call=first)
        if check_row(row, float64_grads(sp, params, x1), outs, RTOL_BWD, against="float64",
                     convert=lambda k, o: _spec_layout(sp, k, o)):
            measure(row, cands, cfg)
        return row

    for b in batches:
        rows.append(guarded(f"W5 VGG19 forward {size}px b{b}", lambda b=b: forward_row(b)))
    if backward:
        rows.append(guarded(f"W5 VGG19 backward {size}px b1", backward_row))
    return rows, eqn_table(apply_fun, bwd, x1, sparams)


if __name__ == "__main__":
    standalone(run)
