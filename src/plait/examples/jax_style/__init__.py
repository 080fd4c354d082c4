"""JAX example programs written the way JAX's own examples are, importing plait.

Each module here is a complete JAX-style program (``stax`` + ``optimizers`` + ``jit``
/ ``grad`` / ``vmap`` / ``random``) whose only plait-specific lines are its imports:
swapping ``plait`` for ``jax`` in them gives the JAX program. :func:`load` does that
swap, so the same text runs under either library (the tests and the benchmarks compare
the two runs from the same seed).

- ``mnist_classifier``: an MLP classifier, stax + momentum SGD;
- ``mnist_vae``: a variational autoencoder, stax (FanOut/parallel), reparameterized
  sampling with ``random``, Adam, the epoch as a ``lax.fori_loop`` inside ``jit``;
- ``dpsgd``: differentially-private SGD: a convnet's per-example gradients by
  ``vmap(grad)``, clipped and noised.

Every program exposes ``build(**sizes) -> Program(init, step, get_params)``: ``init(rng)``
gives the optimizer state, ``step(i, opt_state, rng, images, labels) -> (opt_state,
loss)`` is one jitted training step. Run one with ``python -m
plait.examples.jax_style.mnist_classifier``.
"""

import importlib as _importlib
import os as _os
import re as _re
import types as _types

import numpy as _np

__all__ = ["PROGRAMS", "load", "source", "synthetic_mnist"]

PROGRAMS = ("mnist_classifier", "mnist_vae", "dpsgd")

_IMPORT = _re.compile(r"^(\s*(?:from|import)\s+)plait(?=[.\s])", _re.MULTILINE)


def source(name: str, lib: str = "plait") -> str:
    """The text of program ``name`` importing ``lib`` (``"plait"`` or ``"jax"``): for
    ``"jax"``, ``plait`` replaced by ``jax`` in the import lines and nowhere else."""
    if name not in PROGRAMS:
        raise ValueError(f"no JAX-style program {name!r}; the programs are {PROGRAMS}")
    if lib not in ("plait", "jax"):
        raise ValueError(f"lib must be 'plait' or 'jax', got {lib!r}")
    with open(_os.path.join(_os.path.dirname(__file__), name + ".py")) as f:
        text = f.read()
    return text if lib == "plait" else _IMPORT.sub(r"\1jax", text)


def load(name: str, lib: str = "plait") -> _types.ModuleType:
    """The program ``name`` as a module importing ``lib``: the package's module for
    ``"plait"``, :func:`source` ``(name, "jax")`` executed as a fresh module for ``"jax"``."""
    text = source(name, lib)
    if lib == "plait":
        return _importlib.import_module(f"{__name__}.{name}")
    path = _os.path.join(_os.path.dirname(__file__), name + ".py")
    mod = _types.ModuleType(f"jax_style_{name}")
    mod.__file__ = path
    exec(compile(text, path, "exec"), mod.__dict__)
    return mod


def synthetic_mnist(n: int, seed: int = 0, flat: bool = True) -> tuple[_np.ndarray, _np.ndarray]:
    """MNIST-shaped data: ``n`` float32 images in [0, 1) (``(n, 784)``, or ``(n, 28, 28,
    1)`` when not ``flat``) with one-hot float32 labels ``(n, 10)``."""
    rng = _np.random.default_rng(seed)
    images = rng.random((n, 28 * 28), dtype=_np.float32)
    labels = _np.eye(10, dtype=_np.float32)[rng.integers(0, 10, n)]
    return (images if flat else images.reshape(n, 28, 28, 1)), labels
