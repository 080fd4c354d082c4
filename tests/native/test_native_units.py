"""A large program's C is compiled as several translation units at once (one per core)
and linked into one shared object: the kernels moved out keep their results."""
import dataclasses

import numpy as np

import plait
import plait.numpy as pnp
from plait.backends.native import compile as native_compile
from plait.backends.native.cprogram import UNIT_MIN_BYTES


def _program(x):
    # many distinct kernels (different constants) between matrix products, which end
    # each fused kernel
    for k in range(24):
        x = pnp.tanh(pnp.log1p(pnp.abs(x @ x.T)) * (1.0 + k / 100.0) - 0.5) @ x
    return x


def test_large_program_builds_as_units_and_matches_interp(monkeypatch, tmp_path):
    monkeypatch.setattr(plait.config, "cache_dir", str(tmp_path))
    x = (np.random.default_rng(0).standard_normal((128, 128)) / 12).astype(np.float32)
    prep = native_compile.Prepared(plait.jit(_program).lower(x).closed)
    assert len(prep.source) > 2 * UNIT_MIN_BYTES
    target = prep._cprog.target
    two = dataclasses.replace(target, cores=2) if target.cores < 2 else target
    monkeypatch.setattr(prep._cprog, "target", two)
    units = prep.units(prep.source)
    assert len(units) >= 2
    # every unit starts with the prelude; the first declares what moved out
    assert all(u.startswith(prep._head) for u in units)
    assert "PLAIT_KERNEL int64_t k" in units[0][len(prep._head):].split("{")[0]
    got = plait.jit(_program, backend="native")(x)
    want = plait.jit(_program, backend="interp")(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5)


def test_small_program_stays_one_unit():
    x = np.ones((4,), np.float32)
    prep = native_compile.Prepared(plait.jit(lambda x: x * 2).lower(x).closed)
    assert prep.units(prep.source) == [prep.source]
