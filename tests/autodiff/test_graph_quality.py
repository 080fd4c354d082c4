"""Graph quality of reverse mode: jit(grad(loss)) of the W1 MLP (784-512-512-10,
batch 128) is one graph whose forward matmuls appear once (no recomputation)."""
import collections

import numpy as np

import plait
from plait import lax


def _predict(params, x):
    for i, (w, b) in enumerate(params):
        out = lax.add(lax.dot(x, w), lax.broadcast_in_dim(b, (x.shape[0], b.shape[0]), (1,)))
        x = lax.tanh(out) if i < len(params) - 1 else out
    return out


def _loss(params, x, y):
    d = lax.sub(_predict(params, x), y)
    return lax.reduce_sum(lax.mul(d, d), (0, 1))


def _w1_args():
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = [((rng.standard_normal((m, n)) * 0.01).astype(np.float32),
               (rng.standard_normal(n) * 0.01).astype(np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.standard_normal((128, 10)).astype(np.float32)
    return params, x, y


def count_by_primitive(closed) -> collections.Counter:
    return collections.Counter(e.prim.name for e in closed.graph.eqns)


def equation_table():
    """Counts of (forward graph, jit(grad) before passes, jit(grad) after DCE/CSE)."""
    args = _w1_args()
    fwd = plait.make_graph(_loss)(*args)
    before = plait.make_graph(plait.grad(_loss))(*args)
    after = plait.jit(plait.grad(_loss)).lower(*args).closed
    return count_by_primitive(fwd), count_by_primitive(before), count_by_primitive(after)


def test_w1_grad_is_one_graph_without_recomputation():
    fwd, before, after = equation_table()
    assert fwd["dot_general"] == 3
    # 3 forward matmuls + 3 weight cotangents + 2 input cotangents (x needs none)
    assert after["dot_general"] == 8
    assert after["tanh"] == fwd["tanh"] == 2
    assert sum(after.values()) <= sum(before.values())
    assert "jit_call" not in after


def test_w1_grad_values_match_numpy():
    params, x, y = _w1_args()
    g = plait.jit(plait.grad(_loss))(params, x, y)
    p64 = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
    acts = [x.astype(np.float64)]
    h = acts[0]
    for i, (w, b) in enumerate(p64):
        z = h @ w + b
        h = np.tanh(z) if i < 2 else z
        acts.append(h)
    ct = 2 * (h - y)
    for i in reversed(range(3)):
        w, _ = p64[i]
        np.testing.assert_allclose(np.asarray(g[i][0]), acts[i].T @ ct, rtol=2e-3, atol=1e-4)
        np.testing.assert_allclose(np.asarray(g[i][1]), ct.sum(0), rtol=2e-3, atol=1e-4)
        ct = ct @ w.T
        if i:
            ct = ct * (1 - acts[i] ** 2)


if __name__ == "__main__":
    fwd, before, after = equation_table()
    names = sorted(set(fwd) | set(before) | set(after))
    print(f"{'primitive':24s} {'forward':>8s} {'fwd+bwd':>8s} {'after DCE/CSE':>14s}")
    for n in names:
        print(f"{n:24s} {fwd[n]:8d} {before[n]:8d} {after[n]:14d}")
    print(f"{'total':24s} {sum(fwd.values()):8d} {sum(before.values()):8d} "
          f"{sum(after.values()):14d}")
