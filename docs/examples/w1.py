"""W1 of the benchmarks (the JAX paper's Listing 1): a 784-512-512-10 tanh MLP's squared
loss, with its weights as separate arguments so the command line can describe them:

    plait explore docs/examples/w1.py:loss --grad -o docs/explorer/w1_grad.html --args \
      "f32[784,512], f32[512], f32[512,512], f32[512], f32[512,10], f32[10], f32[128,784], f32[128,10]"
"""
import plait.numpy as pnp


def loss(W1, b1, W2, b2, W3, b3, x, t):
    h = pnp.tanh(x @ W1 + b1)
    h = pnp.tanh(h @ W2 + b2)
    return pnp.sum((h @ W3 + b3 - t) ** 2)
