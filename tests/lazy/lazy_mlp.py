"""A small MLP training step written imperatively with ``plait.lax`` (manual backward pass).

Shared by the lazy-array tests and ``benchmarks/lazy_training.py``: the same code runs
on plain ``plait.Array`` values (op by op), on lazy arrays, and under ``jit``.
"""
from __future__ import annotations

import numpy as np

from plait import lax

DN = (((1,), (0,)), ((), ()))        # (B,K) @ (K,N)
DN_TA = (((0,), (0,)), ((), ()))     # A^T @ B  over the batch
DN_TB = (((1,), (1,)), ((), ()))     # A @ B^T


def _bias(b, shape):
    return lax.broadcast_in_dim(b, shape, (1,))


def init_params(sizes=(784, 256, 10), seed: int = 0) -> list[np.ndarray]:
    """Weights and biases (float32) for an MLP with the given layer sizes."""
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32))
        params.append(np.zeros((n_out,), np.float32))
    return params


def synthetic_data(steps: int, batch: int = 64, n_in: int = 784, n_cls: int = 10,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """MNIST-shaped inputs in [0, 1) and one-hot labels, one batch per step."""
    rng = np.random.default_rng(seed)
    x = rng.random((steps, batch, n_in), dtype=np.float32)
    y = rng.integers(0, n_cls, (steps, batch))
    return x, np.eye(n_cls, dtype=np.float32)[y]


def loss_and_grads(params, x, y):
    """Softmax cross-entropy of a tanh MLP and its gradients (backward pass by hand)."""
    w1, b1, w2, b2 = params
    bsz = x.shape[0]
    h = lax.tanh(lax.add(lax.dot_general(x, w1, DN), _bias(b1, (bsz, w1.shape[1]))))
    logits = lax.add(lax.dot_general(h, w2, DN), _bias(b2, (bsz, w2.shape[1])))
    m = lax.reduce_max(logits, (1,))
    z = lax.sub(logits, lax.broadcast_in_dim(m, logits.shape, (0,)))
    e = lax.exp(z)
    s = lax.reduce_sum(e, (1,))
    logp = lax.sub(z, lax.broadcast_in_dim(lax.log(s), logits.shape, (0,)))
    loss = lax.div(lax.neg(lax.reduce_sum(lax.mul(y, logp), (0, 1))), float(bsz))
    p = lax.div(e, lax.broadcast_in_dim(s, logits.shape, (0,)))
    g_logits = lax.div(lax.sub(p, y), float(bsz))
    g_w2 = lax.dot_general(h, g_logits, DN_TA)
    g_b2 = lax.reduce_sum(g_logits, (0,))
    g_h = lax.dot_general(g_logits, w2, DN_TB)
    g_pre = lax.mul(g_h, lax.sub(1.0, lax.mul(h, h)))
    g_w1 = lax.dot_general(x, g_pre, DN_TA)
    g_b1 = lax.reduce_sum(g_pre, (0,))
    return loss, [g_w1, g_b1, g_w2, g_b2]


def sgd(params, grads, lr):
    """``p - lr * g`` for each parameter."""
    return [lax.sub(p, lax.mul(g, lr)) for p, g in zip(params, grads)]


def train_step(params, x, y, lr=0.1):
    """One SGD step; returns (loss, new params)."""
    loss, grads = loss_and_grads(params, x, y)
    return loss, sgd(params, grads, lr)


def loss_fn(params, x, y):
    """Softmax cross-entropy of a tanh MLP, written with ``plait.numpy`` (for ``grad``)."""
    import plait.numpy as pnp
    w1, b1, w2, b2 = params
    h = pnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    z = logits - lax.stop_gradient(pnp.max(logits, axis=1, keepdims=True))
    logp = z - pnp.log(pnp.sum(pnp.exp(z), axis=1, keepdims=True))
    return -pnp.mean(pnp.sum(y * logp, axis=1))


def grad_train_step(params, x, y, lr=0.1):
    """One SGD step with ``plait.value_and_grad``; returns (loss, new params)."""
    import plait
    loss, grads = plait.value_and_grad(loss_fn)(params, x, y)
    return loss, [p - lr * g for p, g in zip(params, grads)]
