"""Optimizers over pytrees of parameters, as ``jax.example_libraries.optimizers``.

Each builder returns an :class:`Optimizer` ``(init_fun, update_fun, get_params)``:

- ``init_fun(params) -> OptimizerState``;
- ``update_fun(step, grads, state) -> OptimizerState`` (pure; jit it with the gradient);
- ``get_params(state) -> params``.

Optimizers are written per parameter array (``init(x0) -> state``, ``update(i, g,
state) -> state``, ``get_params(state) -> x``) and lifted to pytrees by the
:func:`optimizer` decorator. ``OptimizerState`` is a pytree (it passes through ``jit``);
``unpack_optimizer_state``/``pack_optimizer_state`` convert it to and from a pytree of
``JoinPoint`` s (for saving). ``step_size`` is a number or a schedule ``step -> number``
(``constant``, ``exponential_decay``, ``inverse_time_decay``, ``polynomial_decay``,
``piecewise_constant``).
"""
import functools as _functools
from typing import Any as _Any, Callable as _Callable, NamedTuple as _NamedTuple

import numpy as _np

import plait.numpy as _pnp
from plait.core.pytree import (register_pytree_node as _register_pytree_node,
                               tree_flatten as _tree_flatten, tree_leaves as _tree_leaves,
                               tree_map as _tree_map, tree_unflatten as _tree_unflatten)
from plait.errors import PlaitTypeError as _PlaitTypeError, PlaitValueError as _PlaitValueError

__all__ = ["InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params", "ParamsFn", "Schedule",
           "State", "Step", "UpdateFn", "Updates", "adagrad", "adam", "adamax",
           "clip_grads", "constant", "exponential_decay", "inverse_time_decay",
           "l2_norm", "make_schedule", "momentum", "nesterov", "optimizer",
           "pack_optimizer_state", "piecewise_constant", "polynomial_decay", "rmsprop",
           "rmsprop_momentum", "sgd", "sm3", "unpack_optimizer_state"]

Schedule = _Callable[[int], _Any]
Step = int
Params = _Any
Updates = _Any
State = _Any
InitFn = _Callable[[Params], "OptimizerState"]
UpdateFn = _Callable[[Step, Updates, "OptimizerState"], "OptimizerState"]
ParamsFn = _Callable[["OptimizerState"], Params]


class OptimizerState(_NamedTuple):
    """Flat per-parameter states, the parameters' treedef and each state's treedef."""
    packed_state: list
    tree_def: _Any
    subtree_defs: tuple


_register_pytree_node(OptimizerState,
                     lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
                     lambda aux, kids: OptimizerState(kids[0], *aux))


class Optimizer(_NamedTuple):
    init_fun: InitFn
    update_fun: UpdateFn
    get_params: ParamsFn


class _Static:
    """A hashable value kept in a state's treedef (not a leaf), e.g. a shape."""

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        return isinstance(other, _Static) and self.value == other.value


_register_pytree_node(_Static, lambda s: ((), s.value), lambda aux, _: _Static(aux))


def optimizer(opt_maker: _Callable) -> _Callable[..., Optimizer]:
    """Lift an optimizer written for one array to pytrees of parameters."""
    @_functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        def tree_init(x0_tree):
            x0_flat, tree = _tree_flatten(x0_tree)
            flat = [_tree_flatten(init(_pnp.asarray(x0))) for x0 in x0_flat]
            return OptimizerState([f[0] for f in flat], tree, tuple(f[1] for f in flat))

        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, tree2 = _tree_flatten(grad_tree)
            if tree2 != tree:
                raise _PlaitTypeError(f"optimizer update: the gradient's structure {tree2} is "
                                     f"not the parameters' {tree}")
            states = [_tree_unflatten(s, f) for s, f in zip(subtrees, states_flat)]
            new = [_tree_flatten(update(i, g, st)) for g, st in zip(grad_flat, states)]
            new_subtrees = tuple(n[1] for n in new)
            if new_subtrees != tuple(subtrees):
                raise _PlaitTypeError("optimizer update changed the structure of its state")
            return OptimizerState([n[0] for n in new], tree, tuple(subtrees))

        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            states = [_tree_unflatten(s, f) for s, f in zip(subtrees, states_flat)]
            return _tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


# --- schedules -----------------------------------------------------------------------------

def constant(step_size) -> Schedule:
    """The schedule ``i -> step_size``."""
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase: bool = False) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)`` (``floor`` of the ratio with
    ``staircase``)."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * _pnp.floor(_pnp.asarray(i) / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power: float = 1.0) -> Schedule:
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` as ``(1 - t) ** power``."""
    def schedule(i):
        i = _pnp.minimum(i, decay_steps)
        return (1 - i / decay_steps) ** power * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values) -> Schedule:
    """``values[k]`` for the ``k`` boundaries that ``i`` exceeds."""
    boundaries = _pnp.asarray(boundaries)
    values = _pnp.asarray(values)
    if not boundaries.ndim == values.ndim == 1:
        raise _PlaitValueError("piecewise_constant: boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise _PlaitValueError("piecewise_constant: boundaries must be one shorter than values")
    return lambda i: values[_pnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
    """A schedule from a constant or a callable."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if _np.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise _PlaitTypeError(f"step size must be a scalar or a schedule, got "
                         f"{type(scalar_or_schedule).__name__}")


def _power(base: float, i, like):
    """``base ** (i + 1)`` in ``like``'s dtype (``i`` may be a traced integer)."""
    return _pnp.asarray(base, like.dtype) ** (_pnp.asarray(i) + 1).astype(like.dtype)


# --- optimizers ------------------------------------------------------------------------------

@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x <- x - step_size(i) * g``."""
    lr = make_schedule(step_size)
    return (lambda x0: x0, lambda i, g, x: x - lr(i) * g, lambda x: x)


@optimizer
def momentum(step_size, mass: float = 0.9):
    """Heavy-ball momentum: ``v <- mass * v + g``, ``x <- x - step_size(i) * v``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - lr(i) * v, v
    return (lambda x0: (x0, _pnp.zeros_like(x0)), update, lambda s: s[0])


@optimizer
def nesterov(step_size, mass: float):
    """Nesterov momentum: ``v <- mass * v + g``, ``x <- x - step_size(i) * (mass * v + g)``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - lr(i) * (mass * v + g), v
    return (lambda x0: (x0, _pnp.zeros_like(x0)), update, lambda s: s[0])


@optimizer
def adagrad(step_size, momentum: float = 0.9):
    """Adagrad with momentum on the normalized gradient."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + _pnp.square(g)
        inv = _pnp.where(g_sq > 0, 1.0 / _pnp.sqrt(_pnp.where(g_sq > 0, g_sq, 1.0)), 0.0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        return x - lr(i) * m, g_sq, m
    return (lambda x0: (x0, _pnp.zeros_like(x0), _pnp.zeros_like(x0)), update, lambda s: s[0])


@optimizer
def rmsprop(step_size, gamma: float = 0.9, eps: float = 1e-8):
    """RMSProp: ``a <- gamma a + (1 - gamma) g**2``, ``x <- x - step_size(i) g / sqrt(a + eps)``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, avg = state
        avg = avg * gamma + _pnp.square(g) * (1.0 - gamma)
        return x - lr(i) * g / _pnp.sqrt(avg + eps), avg
    return (lambda x0: (x0, _pnp.zeros_like(x0)), update, lambda s: s[0])


@optimizer
def rmsprop_momentum(step_size, gamma: float = 0.9, eps: float = 1e-8, momentum: float = 0.9):
    """RMSProp with momentum on the scaled step."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, avg, mom = state
        avg = avg * gamma + _pnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + lr(i) * g / _pnp.sqrt(avg + eps)
        return x - mom, avg, mom
    return (lambda x0: (x0, _pnp.zeros_like(x0), _pnp.zeros_like(x0)), update, lambda s: s[0])


@optimizer
def adam(step_size, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """Adam (Kingma & Ba, 2015) with bias correction; ``step`` counts from 0."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * _pnp.square(g) + b2 * v
        mhat = m / (1 - _power(b1, i, m))
        vhat = v / (1 - _power(b2, i, m))
        return x - lr(i) * mhat / (_pnp.sqrt(vhat) + eps), m, v
    return (lambda x0: (x0, _pnp.zeros_like(x0), _pnp.zeros_like(x0)), update, lambda s: s[0])


@optimizer
def adamax(step_size, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """Adamax: Adam with the infinity norm ``u <- max(b2 u, |g|)``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = _pnp.maximum(b2 * u, _pnp.abs(g))
        return x - (lr(i) / (1 - _power(b1, i, m))) * m / (u + eps), m, u
    return (lambda x0: (x0, _pnp.zeros_like(x0), _pnp.zeros_like(x0)), update, lambda s: s[0])


@optimizer
def sm3(step_size, momentum: float = 0.9):
    """SM3 (Anil et al., 2019): per-axis accumulators instead of a full second moment."""
    lr = make_schedule(step_size)

    def init(x0):
        shape = _Static(tuple(x0.shape))
        x0 = _pnp.atleast_1d(x0)
        return x0, _pnp.zeros_like(x0), [_pnp.zeros((n,), x0.dtype) for n in x0.shape], shape

    def along(v, axis, ndim):
        return _pnp.reshape(v, tuple(-1 if a == axis else 1 for a in range(ndim)))

    def update(i, g, state):
        x, m, vs, shape = state
        g = _pnp.reshape(g, x.shape)
        acc = _functools.reduce(_pnp.minimum, [along(v, a, x.ndim) for a, v in enumerate(vs)])
        acc = acc + _pnp.square(g)
        inv = _pnp.where(acc > 0, 1.0 / _pnp.sqrt(_pnp.where(acc > 0, acc, 1.0)), 0.0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        x = x - lr(i) * m
        vs = [_pnp.max(acc, axis=tuple(b for b in range(x.ndim) if b != a))
              for a in range(x.ndim)]
        return x, m, vs, shape
    return init, update, lambda s: _pnp.reshape(s[0], s[3].value)


# --- utilities ------------------------------------------------------------------------------

def l2_norm(tree) -> _Any:
    """The l2 norm of all the leaves of ``tree`` taken as one vector."""
    return _pnp.sqrt(sum(_pnp.sum(_pnp.square(x)) for x in _tree_leaves(tree)))


def clip_grads(grad_tree, max_norm):
    """``grad_tree`` scaled down so that its l2 norm is at most ``max_norm``."""
    norm = l2_norm(grad_tree)
    return _tree_map(lambda g: _pnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """A leaf marking one parameter's optimizer state in an unpacked state."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        return iter(self.subtree)


def unpack_optimizer_state(opt_state: OptimizerState):
    """The state as a pytree of the parameters' structure with ``JoinPoint`` leaves."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [_tree_unflatten(s, f) for s, f in zip(subtree_defs, states_flat)]
    return _tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree) -> OptimizerState:
    """The inverse of :func:`unpack_optimizer_state`."""
    sentinels, tree_def = _tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise _PlaitTypeError("pack_optimizer_state expects a pytree of JoinPoint leaves (from "
                             "unpack_optimizer_state)")
    flat = [_tree_flatten(s.subtree) for s in sentinels]
    return OptimizerState([f[0] for f in flat], tree_def, tuple(f[1] for f in flat))
