"""Optimizers over pytrees of parameters, in the style of ``jax.example_libraries.optimizers``.

Each builder returns ``(init_fun, update_fun, get_params)``:

- ``init_fun(params) -> state``;
- ``update_fun(step, grads, state) -> state`` (pure; jit it with the gradient);
- ``get_params(state) -> params``.

``step_size`` is a number or a schedule ``step -> number``. A state is a tuple of
pytrees shaped like the parameters: ``(params,)``, ``(params, velocity)`` or
``(params, m, v)``.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import plait.numpy as pnp
from plait.core.pytree import tree_map

Schedule = Callable[[int], float]


class Optimizer(NamedTuple):
    init_fun: Callable
    update_fun: Callable
    get_params: Callable


def make_schedule(step_size) -> Schedule:
    """A schedule from a constant or a callable."""
    if callable(step_size):
        return step_size
    return lambda step: step_size


def _get_params(state):
    return state[0]


def sgd(step_size) -> Optimizer:
    """Stochastic gradient descent: ``x <- x - step_size * g``."""
    lr = make_schedule(step_size)

    def init_fun(params):
        return (params,)

    def update_fun(step, grads, state):
        rate = lr(step)
        return (tree_map(lambda x, g: x - rate * g, state[0], grads),)
    return Optimizer(init_fun, update_fun, _get_params)


def momentum(step_size, mass: float = 0.9) -> Optimizer:
    """Heavy-ball momentum: ``v <- mass * v + g``, ``x <- x - step_size * v``."""
    lr = make_schedule(step_size)

    def init_fun(params):
        return (params, tree_map(pnp.zeros_like, params))

    def update_fun(step, grads, state):
        params, vel = state
        rate = lr(step)
        vel = tree_map(lambda v, g: mass * v + g, vel, grads)
        return (tree_map(lambda x, v: x - rate * v, params, vel), vel)
    return Optimizer(init_fun, update_fun, _get_params)


def adam(step_size, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Optimizer:
    """Adam (Kingma & Ba, 2015) with bias correction; ``step`` counts from 0."""
    lr = make_schedule(step_size)

    def init_fun(params):
        return (params, tree_map(pnp.zeros_like, params), tree_map(pnp.zeros_like, params))

    def update_fun(step, grads, state):
        params, m, v = state
        rate = lr(step)
        t = pnp.asarray(step) + 1
        m = tree_map(lambda m_, g: (1 - b1) * g + b1 * m_, m, grads)
        v = tree_map(lambda v_, g: (1 - b2) * pnp.square(g) + b2 * v_, v, grads)

        def upd(x, m_, v_):
            tx = t.astype(x.dtype)
            mhat = m_ / (1 - pnp.asarray(b1, x.dtype) ** tx)
            vhat = v_ / (1 - pnp.asarray(b2, x.dtype) ** tx)
            return x - rate * mhat / (pnp.sqrt(vhat) + eps)
        return (tree_map(upd, params, m, v), m, v)
    return Optimizer(init_fun, update_fun, _get_params)
