"""Two functions with user-defined derivatives, so fuzz programs reach the custom-call
primitives (``custom_jvp_call``, ``custom_vjp_call``) in every engine and in grad mode.

``log1pexp`` is ``log(1 + exp(x))`` (softplus) with a hand-written JVP
``sigmoid(x)``; ``cube`` is ``x**3`` with a hand-written VJP ``3 x**2 ct``. The NumPy
oracles in ``oracles.py`` (``softplus``, ``x**3``) and finite differences check them.
"""
from __future__ import annotations

import plait
import plait.numpy as pnp


@plait.custom_jvp
def log1pexp(x):
    return pnp.logaddexp(x, 0.0)


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t / (1 + pnp.exp(-x))


@plait.custom_vjp
def cube(x):
    return x * x * x


def _cube_fwd(x):
    return x * x * x, x


def _cube_bwd(x, ct):
    return (3 * x * x * ct,)


cube.defvjp(_cube_fwd, _cube_bwd)
