"""Activation and normalization functions, written with plait.numpy (like ``jax.nn``).

Every function is differentiable to any order, jittable and vmappable; reductions
subtract the (gradient-stopped) maximum so large inputs do not overflow.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

import plait.numpy as pnp
from plait import lax
from plait.random._special import erf

SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805


def _float(x):
    x = pnp.asarray(x)
    if not pnp.issubdtype(x.dtype, pnp.inexact):
        x = x.astype(pnp.float32)
    return x


def relu(x):
    """``max(x, 0)`` (gradient 0 at 0; NaN stays NaN, as NumPy's ``maximum``)."""
    x = pnp.asarray(x)
    return pnp.where(x <= 0, pnp.zeros_like(x), x)


def relu6(x):
    """``min(max(x, 0), 6)`` (NaN stays NaN)."""
    x = pnp.asarray(x)
    return pnp.where(x <= 0, pnp.zeros_like(x), pnp.where(x >= 6, pnp.full_like(x, 6), x))


def leaky_relu(x, negative_slope: float = 0.01):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""
    x = _float(x)
    return pnp.where(x >= 0, x, negative_slope * x)


def elu(x, alpha: float = 1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    x = _float(x)
    safe = pnp.where(x > 0, pnp.zeros_like(x), x)
    return pnp.where(x > 0, x, alpha * pnp.expm1(safe))


def selu(x):
    """Scaled ELU with the self-normalizing constants of Klambauer et al. (2017)."""
    return SELU_SCALE * elu(x, SELU_ALPHA)


def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))``."""
    return lax.logistic(_float(x))


def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    x = _float(x)
    return x * sigmoid(x)


swish = silu


def softplus(x):
    """``log(1 + exp(x))``, computed stably as ``logaddexp(x, 0)``."""
    x = _float(x)
    return pnp.logaddexp(x, pnp.zeros_like(x))


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit: ``x * Phi(x)``; ``approximate`` uses the tanh form."""
    x = _float(x)
    if approximate:
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + pnp.tanh(c * (x + 0.044715 * (x * x * x))))
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    return tuple(int(a) % ndim for a in axis)


def logsumexp(x, axis: int | Sequence[int] | None = None, keepdims: bool = False):
    """``log(sum(exp(x), axis))`` without overflow."""
    x = _float(x)
    axes = _axes(axis, x.ndim)
    m = lax.stop_gradient(pnp.max(x, axis=axes, keepdims=True))
    m = pnp.where(pnp.isfinite(m), m, pnp.zeros_like(m))
    out = pnp.log(pnp.sum(pnp.exp(x - m), axis=axes, keepdims=True)) + m
    return out if keepdims else pnp.squeeze(out, axis=axes)


def log_softmax(x, axis: int | Sequence[int] = -1):
    """``x - logsumexp(x, axis)``."""
    x = _float(x)
    shifted = x - lax.stop_gradient(pnp.max(x, axis=axis, keepdims=True))
    return shifted - pnp.log(pnp.sum(pnp.exp(shifted), axis=axis, keepdims=True))


def softmax(x, axis: int | Sequence[int] = -1):
    """``exp(x) / sum(exp(x), axis)``."""
    x = _float(x)
    e = pnp.exp(x - lax.stop_gradient(pnp.max(x, axis=axis, keepdims=True)))
    return e / pnp.sum(e, axis=axis, keepdims=True)


def one_hot(x, num_classes: int, dtype=np.float32, axis: int = -1):
    """``x`` (integers) as one-hot vectors of length ``num_classes`` along a new ``axis``."""
    x = pnp.asarray(x)
    out_ndim = x.ndim + 1
    axis = axis % out_ndim
    classes = lax.broadcasted_iota(x.dtype, tuple(
        num_classes if d == axis else 1 for d in range(out_ndim)), axis)
    return (pnp.expand_dims(x, axis) == classes).astype(dtype)


def standardize(x, axis: int | Sequence[int] = -1, mean=None, variance=None,
                epsilon: float = 1e-5):
    """``(x - mean) / sqrt(variance + epsilon)``, statistics over ``axis`` unless given."""
    x = _float(x)
    if mean is None:
        mean = pnp.mean(x, axis=axis, keepdims=True)
    if variance is None:
        variance = pnp.mean(pnp.square(x - mean), axis=axis, keepdims=True)
    return (x - mean) * lax.rsqrt(variance + epsilon)
