"""W2 — SeLU dense layer (JAX paper, Figure 1; docs/workloads.md).

``selu(x @ W + b)`` with ``x``, ``W`` 1024x1024 and ``b`` 1024 (float32, seed 0);
timed forward (PyTorch: ``F.selu(addmm(b, x, W))``, eager and ``torch.compile``).
Also reports whether plait's native backend put the SeLU epilogue into the matmul's
kernel. A second row times ``plait.jit`` right after each peer's call and alone (issue 20).
``python -m benchmarks.w2_selu``.
"""
from __future__ import annotations

import numpy as np

import plait
import plait.numpy as pnp
from benchmarks.common import (xla_jit, Config, Row, after_peers_row, check_row, first_outputs,
                               jax_modules, measure, standalone, add_note)
from benchmarks import torch_peer

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805
RTOL = 1e-5


def make_layer(np_mod):
    def layer(x, W, b):
        y = np_mod.dot(x, W) + b
        return SCALE * np_mod.where(y > 0, y, ALPHA * (np_mod.exp(y) - 1))
    return layer


def fusion_note(jitted, *args) -> str:
    """Whether the matmul and its epilogue share one native kernel."""
    try:
        exe = jitted.lower(*args).compile().executable
        kernels = exe.as_text("kernels").splitlines()
    except Exception as e:  # the interp backend has no kernels
        return f"no kernel listing ({type(e).__name__})"
    dot = [k for k in kernels if "dot_general" in k]
    fused = bool(dot) and any(p in dot[0] for p in ("exp", "select", "select_n", "mul"))
    return (f"epilogue {'fused into' if fused else 'NOT fused into'} the matmul kernel "
            f"({len(kernels)} kernel(s))")


def run(cfg: Config) -> list[Row]:
    n = 64 if cfg.smoke else 1024
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n)).astype(np.float32)
    W = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    b = rng.standard_normal((n,)).astype(np.float32)
    ref = make_layer(np)(x, W, b)
    f = plait.jit(make_layer(pnp))
    cands = {"plait.jit": lambda: f(x, W, b), "plait eager": lambda: make_layer(pnp)(x, W, b),
             "numpy": lambda: make_layer(np)(x, W, b)}
    fx = xla_jit(make_layer(pnp))
    if fx is not None:
        cands["plait xla"] = lambda: fx(x, W, b)
    jax, jnp = jax_modules()
    if jax is not None:
        jf = jax.jit(make_layer(jnp))
        cands["jax.jit"] = lambda: jf(x, W, b)
    torch = torch_peer.torch_module()
    if torch is not None:
        def torch_layer(x, W, b):
            return torch.nn.functional.selu(torch.addmm(b, x, W))
        cands.update(torch_peer.pair(torch, lambda wrap: wrap(torch_layer),
                                     *torch_peer.tensors(torch, [x, W, b])))
    outs, first = first_outputs(cands)
    row = Row(f"W2 SeLU dense {n}x{n}", first_call=first)
    if not check_row(row, ref, outs, RTOL):
        return [row]
    measure(row, cands, cfg)
    if plait.config.resolved_backend() == "native":
        add_note(row, fusion_note(f, x, W, b))
    return [row] if cfg.first_calls_only else [row, after_peers_row("W2", cands, cfg, row.check)]


if __name__ == "__main__":
    standalone(run)
