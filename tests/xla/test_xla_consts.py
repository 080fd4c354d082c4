"""Constants captured by a jitted function on the xla backend: small ones are literals
of the StableHLO module (XLA sees their values, as in the modules jax.jit builds), ones
above ``MAX_EMBED_BYTES`` stay parameters on the device; both compute the same values
as the reference backend."""
from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait.backends.xla import compile as xla_compile  # noqa: E402


def _main_params(text: str) -> list[str]:
    """The parameter types of the module's ``main``."""
    sig = re.search(r"func\.func public @main\((.*?)\) ->", text).group(1)
    return re.findall(r"%v\d+: (tensor<[^>]*>)", sig)


def _program():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)

    def f(x):       # a and b captured: constants of the traced graph
        return pnp.tanh(pnp.dot(a, x) + b) * 2.0
    return f, rng.standard_normal(8).astype(np.float32)


def _reference(f, x):
    return np.asarray(plait.jit(f, backend="interp")(x))


def test_small_constants_are_module_literals():
    f, x = _program()
    jf = plait.jit(f, backend="xla")
    text = jf.lower(x).as_text(stage="stablehlo")
    assert _main_params(text) == ["tensor<8xf32>"]      # only the argument
    assert text.count('"stablehlo.constant"() {value = dense<"0x') >= 2
    np.testing.assert_allclose(np.asarray(jf(x)), _reference(f, x), rtol=1e-5, atol=1e-6)
    exe = next(iter(jf._fast.values())).executable
    assert exe.const_bufs == [] and _main_params(exe.text) == ["tensor<8xf32>"]


def test_large_constants_stay_parameters(monkeypatch):
    monkeypatch.setattr(xla_compile, "MAX_EMBED_BYTES", 40)     # b (32 bytes) embedded, a not
    f, x = _program()
    jf = plait.jit(f, backend="xla")
    np.testing.assert_allclose(np.asarray(jf(x)), _reference(f, x), rtol=1e-5, atol=1e-6)
    exe = next(iter(jf._fast.values())).executable
    assert _main_params(exe.text) == ["tensor<8x8xf32>", "tensor<8xf32>"]
    assert len(exe.const_bufs) == 1
    assert jf.lower(x).as_text(stage="stablehlo") == exe.text
