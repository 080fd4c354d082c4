"""The run a ported-program test compares: a JAX-style program (plait/examples/jax_style)
trained a few steps from seed 0 on synthetic MNIST-shaped data, summarized.

Shared by the recorder (``python tests/ported/record_jax.py``, run with JAX installed,
writes jax_recorded.py) and by test_ported_programs.py (runs the plait version).
"""
from __future__ import annotations

import numpy as np

from plait.examples.jax_style import load, synthetic_mnist

# small sizes so that the test compiles fast; the programs' defaults are JAX's sizes
SIZES = {"mnist_classifier": dict(hidden=32),
         "mnist_vae": dict(hidden=32, latent=4, batch_size=16),
         "dpsgd": dict(channels=4, hidden=16)}
STEPS, BATCH, N = 3, 16, 64
SAMPLES = 8      # strided elements recorded per parameter array


def summarize(leaf) -> dict:
    """Shape, sum, sum of squares and a few strided elements of one parameter array."""
    a = np.asarray(leaf)
    flat = a.ravel().astype(np.float64)
    idx = np.linspace(0, flat.size - 1, min(SAMPLES, flat.size)).astype(int)
    return {"shape": list(a.shape), "dtype": a.dtype.name, "sum": float(flat.sum()),
            "sumsq": float((flat * flat).sum()), "samples": [float(flat[i]) for i in idx]}


def run(name: str, lib: str) -> dict:
    """Losses of STEPS jitted steps (and, for the VAE, of one fori_loop epoch) and a
    summary of every final parameter array, for program ``name`` under ``lib``."""
    m = load(name, lib)
    if lib == "jax":
        from jax.tree_util import tree_leaves
    else:
        from plait.tree_util import tree_leaves
    prog = m.build(**SIZES[name])
    images, labels = synthetic_mnist(N, seed=0, flat=name != "dpsgd")
    key = m.random.PRNGKey(0)
    state = prog.init(key)
    out = {"init": [summarize(x) for x in tree_leaves(prog.get_params(state))]}
    losses = []
    for i in range(STEPS):
        sl = slice(i * BATCH, (i + 1) * BATCH)
        state, value = prog.step(i, state, m.random.fold_in(key, i), images[sl], labels[sl])
        losses.append(float(value))
    if name == "mnist_vae":
        state = prog.run_epoch(m.random.PRNGKey(1), state, images)
        _, value = prog.step(0, state, key, images[:BATCH], labels[:BATCH])
        losses.append(float(value))
    out["losses"] = losses
    out["params"] = [summarize(x) for x in tree_leaves(prog.get_params(state))]
    return out
