"""Lazy arrays on the native backend: the same traces, compiled to C (skipped without a
C compiler)."""
import numpy as np
import pytest

import plait
from plait import lazy

import lazy_mlp as M


@pytest.fixture
def native():
    from plait.codegen.toolchain import find_toolchain
    if find_toolchain() is None:
        pytest.skip("no C compiler: the native backend is unavailable")
    plait.config.backend = "native"


def test_mlp_steps_on_native_match_eager(native):
    steps = 4
    xs, ys = M.synthetic_data(steps)
    eager = [plait.device_put(p) for p in M.init_params()]
    lz = [lazy.asarray(p) for p in M.init_params()]
    for i in range(steps):
        le, eager = M.grad_train_step(eager, plait.device_put(xs[i]), plait.device_put(ys[i]))
        ll, lz = M.grad_train_step(lz, lazy.asarray(xs[i]), lazy.asarray(ys[i]))
        lazy.step()
        np.testing.assert_allclose(float(ll), float(le), rtol=1e-5)
    for a, b in zip(lz, eager):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
    m = lazy.metrics()
    assert m["compiles"] == 1 and m["cache_hits"] == steps - 1
