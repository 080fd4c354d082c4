"""Model rows (issue 20): the three JAX-style programs of plait/examples/jax_style, in
float32, one epoch each on synthetic MNIST-shaped data, plait.jit beside jax.jit.

- ``stax MNIST``: the MLP classifier (784-1024-1024-10, momentum), batch 128, a Python
  loop over jitted steps;
- ``VAE``: the variational autoencoder (512 hidden, 10 latent, Adam), batch 32, the
  epoch one jitted ``lax.fori_loop``;
- ``DP-SGD``: the convnet with per-example gradients by ``vmap(grad)``, batch 64, a
  Python loop over jitted steps.

Both systems run the same program text (plait's, and JAX's by swapping the imports),
from the same seed and the same initial state; the check compares the parameters after
one epoch. PyTorch has no port of these programs (no column). ``python -m
benchmarks.jax_models [--quick|--smoke]``.
"""
from __future__ import annotations

import numpy as np

import plait
from benchmarks.common import Config, Row, check_row, first_outputs, measure, standalone
from benchmarks.harness import optional_import
from plait.examples.jax_style import load, synthetic_mnist

# name, program, sizes (full; smoke shrinks them), batch, rtol of the epoch's parameters
MODELS = [
    ("stax MNIST", "mnist_classifier", dict(hidden=1024), 128, 1e-3),
    # Adam divides by sqrt(v): float32 rounding in near-zero gradients becomes a full
    # step-size difference, so 32 Adam steps drift ~2e-3 (scaled) between the systems
    ("VAE", "mnist_vae", dict(hidden=512, latent=10, batch_size=32), 32, 5e-3),
    ("DP-SGD", "dpsgd", dict(channels=16, hidden=32), 64, 1e-3),
]
SMOKE_SIZES = {"mnist_classifier": dict(hidden=32),
               "mnist_vae": dict(hidden=32, latent=4, batch_size=16),
               "dpsgd": dict(channels=4, hidden=16)}


def _leaves(lib: str, tree) -> list[np.ndarray]:
    if lib == "jax":
        from jax.tree_util import tree_leaves
    else:
        from plait.tree_util import tree_leaves
    return [np.asarray(x) for x in tree_leaves(tree)]


def make_epoch(program: str, lib: str, sizes: dict, batch: int, images, labels):
    """A function running one epoch of ``program`` under ``lib`` from its seed-0 initial
    state, returning the final parameters as a list of arrays."""
    m = load(program, lib)
    prog = m.build(**sizes)
    key = m.random.PRNGKey(0)
    state0 = prog.init(key)
    n = images.shape[0] // batch
    if program == "mnist_vae":
        def epoch():
            return _leaves(lib, prog.get_params(prog.run_epoch(key, state0, images)))
    else:
        def epoch():
            state = state0
            for i in range(n):
                sl = slice(i * batch, (i + 1) * batch)
                state, _ = prog.step(i, state, m.random.fold_in(key, i), images[sl], labels[sl])
            return _leaves(lib, prog.get_params(state))
    return epoch


def run(cfg: Config) -> list[Row]:
    n = 256 if cfg.smoke else 1024 if cfg.quick else 4096
    jax = optional_import("jax")
    rows = []
    x64 = plait.config.x64
    plait.config.update("x64", False)       # JAX's float32 defaults, as a ported program
    try:
        for title, program, sizes, batch, rtol in MODELS:
            if cfg.smoke:
                sizes, batch = SMOKE_SIZES[program], 16
            images, labels = synthetic_mnist(n, seed=0, flat=program != "dpsgd")
            images, labels = images.astype(np.float32), labels.astype(np.float32)
            cands = {"plait.jit": make_epoch(program, "plait", sizes, batch, images, labels)}
            if jax is not None:
                cands["jax.jit"] = make_epoch(program, "jax", sizes, batch, images, labels)
            row = Row(f"{title} epoch ({n} images, batch {batch}, float32)")
            outs, row.first_call = first_outputs(cands)
            ref = outs.get("jax.jit", outs["plait.jit"])
            if check_row(row, ref, outs, rtol, against="jax.jit" if jax else "plait.jit"):
                measure(row, cands, cfg)
            rows.append(row)
    finally:
        plait.config.update("x64", x64)
    return rows


if __name__ == "__main__":
    standalone(run)
