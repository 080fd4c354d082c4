"""Record ``jax.jit(jax.pmap)``, ``jax.vmap(jax.pmap)`` and their grad on 2 host devices
for ``test_pmap_under_transforms.test_against_jax_pmap`` (jax is not a dependency of the
suite). Run: ``XLA_FLAGS=--xla_force_host_platform_device_count=2 JAX_PLATFORMS=cpu
python tests/distributed/record_jax_pmap.py``; it rewrites ``jax_pmap_recorded.json``."""
import json
import os
import sys

import numpy as np
import jax

sys.path.insert(0, os.path.dirname(__file__))
from test_pmap_under_transforms import _data  # noqa: E402

jax.config.update("jax_enable_x64", True)


def replica(w, x):
    r = jax.numpy.tanh(x @ w)
    size = jax.lax.psum(1.0, "i")
    return (r * jax.lax.psum((r * r).sum(), "i") / size
            + jax.lax.ppermute(r, "i", [(0, 1), (1, 0)]) * (1.0 + jax.lax.axis_index("i")))


P = jax.pmap(replica, "i", in_axes=(None, 0))
W, X = _data(7)
WB = np.stack([W, 3 * W])


def loss(w, x):
    return (jax.jit(P)(w, x) ** 2).sum()


out = [np.asarray(jax.jit(P)(W, X)).tolist(),
       np.asarray(jax.vmap(P, in_axes=(0, None))(WB, X)).tolist(),
       np.asarray(jax.grad(loss)(W, X)).tolist()]
with open(os.path.join(os.path.dirname(__file__), "jax_pmap_recorded.json"), "w") as f:
    json.dump({"jax": jax.__version__, "inputs": [W.tolist(), X.tolist()], "outputs": out}, f)
