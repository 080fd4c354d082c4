"""The example of docs/how-plait-compiles.md: a contraction, an elementwise function
and a reduction, which plait fuses into one kernel."""
import plait.numpy as pnp


def f(x, w):
    return pnp.sum(pnp.tanh(x @ w), axis=1)
