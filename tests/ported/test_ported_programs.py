"""JAX example programs ported by changing only their imports (issue 19).

plait/examples/jax_style holds three programs written as JAX's examples are (stax +
optimizers, a VAE, DP-SGD with vmap(grad)); run in float32 mode from seed 0 on synthetic
MNIST-shaped data, their losses, initial and final parameters equal JAX's recorded run
(jax_recorded.py, written by record_jax.py) to float32 tolerance: threefry bits are
identical, so is every initialization and sample.
"""
import ast
import os
import re
import sys

import numpy as np
import pytest

import plait
from plait.examples import jax_style

sys.path.insert(0, os.path.dirname(__file__))
from jax_recorded import REF  # noqa: E402
from ported_run import run  # noqa: E402


@pytest.fixture
def float32_mode():
    """JAX's defaults (Python floats float32) for the test; restored afterwards."""
    plait.config.update("x64", False)
    yield
    plait.config.update("x64", True)


def _check_summaries(got, want, what, rtol, atol):
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        where = f"{what} leaf {i}"
        assert g["shape"] == w["shape"] and g["dtype"] == w["dtype"], where
        np.testing.assert_allclose(g["samples"], w["samples"], rtol=rtol, atol=atol,
                                   err_msg=where)
        scale = np.sqrt(w["sumsq"])
        np.testing.assert_allclose(g["sum"], w["sum"], atol=atol * 10 * scale + atol,
                                   err_msg=where)
        np.testing.assert_allclose(g["sumsq"], w["sumsq"], rtol=rtol * 10, err_msg=where)


@pytest.mark.parametrize("name", jax_style.PROGRAMS)
def test_ported_program_matches_jax(name, float32_mode):
    got, want = run(name, "plait"), REF[name]
    # the same seed gives JAX's initial parameters (threefry + the same initializers)
    _check_summaries(got["init"], want["init"], f"{name} init", rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=2e-6, err_msg=name)
    _check_summaries(got["params"], want["params"], f"{name} params", rtol=2e-5, atol=2e-6)


def test_jax_version_differs_only_in_imports():
    for name in jax_style.PROGRAMS:
        plait_src, jax_src = jax_style.source(name), jax_style.source(name, "jax")
        changed = [(a, b) for a, b in zip(plait_src.splitlines(), jax_src.splitlines())
                   if a != b]
        assert changed and all(re.match(r"\s*(from|import) plait", a) for a, _ in changed)
        # the name plait occurs only in imports, and the JAX text imports only jax
        tree = ast.parse(jax_src)
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "plait"]
        mods = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        mods += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert "jax.numpy" in mods and not [m for m in mods if m.startswith("plait")], name


def test_load_rejects_unknown_names():
    with pytest.raises(ValueError, match="no JAX-style program"):
        jax_style.load("resnet")
    with pytest.raises(ValueError, match="lib must be"):
        jax_style.source("dpsgd", "torch")
