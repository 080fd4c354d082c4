"""W1 — MLP gradient step (JAX paper, Listing 1; docs/workloads.md).

``loss = sum((predict(params, x) - targets)**2)`` with ``tanh`` layers
784-512-512-10, batch 128, weights ``normal * 0.01`` (seed 0). Timed: one
``grad(loss)(params, x, targets)``: plait jit and eager, NumPy with a
hand-written backward pass, JAX ``jit(grad)``, PyTorch ``torch.autograd.grad`` of the
same loss, eager and ``torch.compile``-d. ``python -m benchmarks.w1_mlp``.

Two more rows are issue 20's check that plait's speed does not depend on its neighbours:
``plait.jit``'s call right after each peer's call against right after its own
(``benchmarks.common.after_peers_row``), and ``plait.jit`` alone in a fresh process where
no peer was ever loaded against this process after the peers ran.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

import plait
import plait.numpy as pnp
from benchmarks.common import (xla_jit, Config, Row, after_peers_row, check_row, first_outputs,
                               jax_modules, measure, standalone, timed, assert_close)
from benchmarks.harness import fmt_time
from benchmarks import torch_peer

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


def torch_loss(torch):
    """Listing 1's loss in PyTorch, on a flat list ``[W1, b1, W2, b2, ...]``."""
    def loss(flat, inputs, targets):
        for W, b in zip(flat[::2], flat[1::2]):
            outputs = torch.addmm(b, inputs, W)
            inputs = torch.tanh(outputs)
        return torch.sum((outputs - targets) ** 2)
    return loss


def _sizes(cfg: Config):
    return ((784, 64, 64, 10), 16) if cfg.smoke else ((784, 512, 512, 10), 128)


def plait_step_seconds(cfg: Config) -> tuple[float, float]:
    """Median seconds of one ``plait.jit`` step, timed on its own in this process, and
    the worst scaled error of its gradient against :func:`numpy_grad` (raises
    AssertionError beyond ``RTOL``)."""
    params, x, t = make_data(*_sizes(cfg))
    gj = plait.jit(plait.grad(make_loss(pnp)))
    worst = assert_close("W1 plait.jit", numpy_grad(params, x, t), gj(params, x, t), RTOL)
    return timed({"plait.jit": lambda: gj(params, x, t)}, cfg)["plait.jit"], worst


def _alone_in_fresh_process(cfg: Config) -> tuple[float, float]:
    """:func:`plait_step_seconds` in a new process that never loads a peer."""
    code = ("import sys; from benchmarks.common import Config; "
            "from benchmarks.w1_mlp import plait_step_seconds; "
            f"print(*plait_step_seconds(Config(quick={cfg.quick}, smoke={cfg.smoke})))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
               PLAIT_BACKEND=plait.config.resolved_backend())
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"the fresh-process W1 step failed: {r.stderr.strip()[-300:]}")
    seconds, worst = r.stdout.split()[-2:]
    return float(seconds), float(worst)


def peers_row(cfg: Config) -> Row:
    """plait.jit alone in a fresh process vs in this one right after the peers ran."""
    after, worst_after = plait_step_seconds(cfg)
    alone, worst_alone = _alone_in_fresh_process(cfg)
    return Row("W1 plait.jit after the peers (alone: see note)", times={"plait.jit": after},
               check=f"rtol {RTOL:g} vs numpy (worst {max(worst_after, worst_alone):.1e})",
               note=f"alone in a fresh process {fmt_time(alone)}; after/alone "
                    f"{after / alone:.2f} (1.00: unaffected by the peers)")


def _pairs(system: str, out):
    """PyTorch's flat gradient list as the reference's ``[(dW, db), ...]``."""
    return list(zip(out[::2], out[1::2])) if system.startswith("torch") else out


def run(cfg: Config) -> list[Row]:
    sizes, batch = _sizes(cfg)
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
    torch = torch_peer.torch_module()
    if torch is not None:
        flat = torch_peer.tensors(torch, [a for p in params for a in p], requires_grad=True)
        tx, tt = torch_peer.tensors(torch, [x, t])
        cands.update(torch_peer.pair(
            torch, lambda wrap: torch_peer.grad_fn(torch, torch_loss(torch), wrap), flat, tx, tt))
    row = Row(f"W1 MLP grad {'-'.join(map(str, sizes))} b{batch}")
    outs, row.first_call = first_outputs(cands)
    if not check_row(row, ref, outs, RTOL, convert=_pairs):
        return [row]
    measure(row, cands, cfg)
    if cfg.first_calls_only:
        return [row]
    return [row, after_peers_row("W1", cands, cfg, row.check), peers_row(cfg)]


if __name__ == "__main__":
    standalone(run)
