"""The benchmark harness waits for every timed result: a lazy or asynchronous result
(plait's lazy arrays, JAX's arrays) counts its work in the call that made it."""
import time

import numpy as np

import plait.lazy as lazy
import plait.numpy as pnp
from benchmarks.harness import after_each, block, compare, round_orders


class _Pending:
    """A result whose work happens when it is waited for (as a lazy array's does)."""

    def __init__(self, log: list):
        self.log = log

    def block_until_ready(self):
        time.sleep(0.002)
        self.log.append("waited")
        return self


def test_compare_and_after_each_wait_for_every_result():
    log: list = []
    t = compare({"pending": lambda: _Pending(log), "numpy": lambda: np.ones(3)},
                rounds=3, target_s=0.004)
    calls = len(log)
    assert calls >= 3 and t["pending"] >= 0.002      # the wait is inside the timing
    after_each(lambda: [_Pending(log)], {"peer": lambda: {"a": (_Pending(log),)}}, rounds=2)
    assert len(log) == calls + 8     # 2 rounds x 2 orders (alone, peer) x (before, fn)


def test_block_materializes_lazy_arrays():
    x = np.arange(6.0).reshape(2, 3)
    y = pnp.sin(lazy.asarray(x)) * 2
    lazy.reset_metrics()
    out = block({"y": [y]})
    assert out["y"][0] is y and lazy.metrics()["materializations"] == 1
    np.testing.assert_allclose(np.asarray(y), np.sin(x) * 2)


def test_rounds_vary_which_peer_a_candidate_follows():
    keys = ["plait.jit", "plait xla", "numpy", "jax.jit"]
    orders = round_orders(keys, 15)
    assert len(orders) == 15 and all(sorted(o) == sorted(keys) for o in orders)
    for k in keys:      # each runs right after at least two different peers (or first)
        before = {o[o.index(k) - 1] if o.index(k) else None for o in orders}
        assert len(before) >= 3
    assert round_orders(keys, 15) == orders       # the same orders in every run
    log: list = []
    compare({k: (lambda k=k: log.append(k)) for k in keys}, rounds=4, target_s=0.0)
    assert len(set(log)) == 4
