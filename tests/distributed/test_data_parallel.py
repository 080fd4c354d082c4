"""Data-parallel training of the digits CNN: pmap over 2 CPU devices with pmean of the
gradients reaches the parameters of the single-device run on the global batch."""
from __future__ import annotations

import numpy as np
import pytest

import plait
from plait import random
from plait.distributed import pmap
from plait.example_libraries import optimizers

pytest.importorskip("sklearn")
from plait.examples import digits  # noqa: E402


def test_replicas_follow_the_single_device_run(monkeypatch):
    monkeypatch.setattr(plait.config, "cpu_devices", 2)
    x_tr, y_tr, _, _ = digits.load_data(0)
    batch, steps = 32, 3
    init_fun, apply_fun = digits.make_model()
    _, params = init_fun(random.key(0), (batch,) + x_tr.shape[1:])
    # momentum SGD: the update is linear in the gradient, so the float32 rounding of two
    # summation orders (GEMM library vs interp) stays at rounding size; Adam's first
    # steps are sign-like, g / |g|, and turn a near-zero gradient's rounding into a full step
    opt = optimizers.momentum(0.05, 0.9)
    update, replica_update = digits.make_updates(apply_fun, opt)
    single = plait.jit(update, backend="interp")     # the reference backend: the oracle
    multi = pmap(replica_update, "batch", in_axes=(None, None, 0, 0), out_axes=None)
    s1 = s2 = opt.init_fun(params)
    for i in range(steps):
        x, y = x_tr[i * batch:(i + 1) * batch], y_tr[i * batch:(i + 1) * batch]
        l1, s1 = single(i, s1, x, y)
        l2, s2 = multi(i, s2, x.reshape(2, batch // 2, 8, 8, 1), y.reshape(2, batch // 2))
        np.testing.assert_allclose(float(l2), float(l1), rtol=1e-5)
    for a, b in zip(plait.tree_util.tree_leaves(opt.get_params(s2)),
                    plait.tree_util.tree_leaves(opt.get_params(s1))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)

