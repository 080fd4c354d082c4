"""Activation and normalization functions, written with plait.numpy (like ``jax.nn``).

Every function is differentiable to any order, jittable and vmappable; reductions
subtract the (gradient-stopped) maximum so large inputs do not overflow.
"""
from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

import plait.numpy as pnp
from plait import lax
from plait.errors import PlaitValueError

SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805


def _float(x):
    x = pnp.asarray(x)
    if not pnp.issubdtype(x.dtype, pnp.inexact):
        x = x.astype(pnp.float32)
    return x


def _float16_once(fn):
    """``fn`` of a float16 ``x`` computed in float32 and rounded to float16 once, as
    NumPy's float16 loops round: step by step in float16, the shift ``x - max`` alone
    rounds by up to 2^-9 at ``|x - max|`` ~ 4, so softmax was 3 ulps off."""
    @functools.wraps(fn)
    def wrapped(x, *args, **kwargs):
        x = _float(x)
        if x.dtype != pnp.float16:
            return fn(x, *args, **kwargs)
        out = fn(x.astype(pnp.float32), *args, **kwargs)
        if isinstance(out, tuple):
            return tuple(o.astype(pnp.float16) for o in out)
        return out.astype(pnp.float16)
    return wrapped


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


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``, finite with exact derivatives in both tails."""
    x = _float(x)
    return -softplus(-x)


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit: ``x * Phi(x)``; ``approximate`` uses the tanh form."""
    x = _float(x)
    if approximate:
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + pnp.tanh(c * (x + 0.044715 * (x * x * x))))
    return 0.5 * x * (1.0 + lax.erf(x / math.sqrt(2.0)))


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    return tuple(int(a) % ndim for a in axis)


@_float16_once
def logsumexp(x, axis: int | Sequence[int] | None = None, b=None, keepdims: bool = False,
              return_sign: bool = False, where=None):
    """``log(sum(b * exp(x), axis))`` without overflow; ``where`` masks entries out;
    ``return_sign`` also returns the sign of the sum (for negative ``b``)."""
    x = _float(x)
    axes = _axes(axis, x.ndim)
    if where is not None:
        where = pnp.broadcast_to(pnp.asarray(where, dtype=bool), x.shape)
        x = pnp.where(where, x, pnp.asarray(-np.inf, x.dtype))
    m = lax.stop_gradient(pnp.max(x, axis=axes, keepdims=True))
    m = pnp.where(pnp.isfinite(m), m, pnp.zeros_like(m))
    e = pnp.exp(x - m)
    if b is not None:
        e = e * pnp.asarray(b, x.dtype)
    total = pnp.sum(e, axis=axes, keepdims=True)
    sign = pnp.sign(total)
    out = pnp.log(pnp.abs(total) if (return_sign or b is not None) else total) + m
    if not keepdims:
        out, sign = pnp.squeeze(out, axis=axes), pnp.squeeze(sign, axis=axes)
    return (out, sign) if return_sign else out


@_float16_once
def logmeanexp(x, axis: int | Sequence[int] | None = None, where=None,
               keepdims: bool = False):
    """``log(mean(exp(x), axis))`` without overflow (over the ``where`` entries)."""
    x = _float(x)
    axes = _axes(axis, x.ndim)
    if where is None:
        n = float(np.prod([x.shape[a] for a in axes]))
        return logsumexp(x, axes, keepdims=keepdims) - math.log(n)
    w = pnp.broadcast_to(pnp.asarray(where, dtype=bool), x.shape)
    n = pnp.sum(w, axis=axes, keepdims=keepdims).astype(x.dtype)
    return logsumexp(x, axes, keepdims=keepdims, where=w) - pnp.log(n)


@_float16_once
def log_softmax(x, axis: int | Sequence[int] = -1, where=None):
    """``x - logsumexp(x, axis)``; entries outside ``where`` are ``-inf``."""
    x = _float(x)
    if where is not None:
        where = pnp.broadcast_to(pnp.asarray(where, dtype=bool), x.shape)
        xm = pnp.where(where, x, pnp.asarray(-np.inf, x.dtype))
    else:
        xm = x
    mx = lax.stop_gradient(pnp.max(xm, axis=axis, keepdims=True))
    mx = pnp.where(mx == -np.inf, pnp.zeros_like(mx), mx)   # all -inf: no nan from the shift
    shifted = x - mx
    e = pnp.exp(shifted)
    if where is not None:
        e = pnp.where(where, e, pnp.zeros_like(e))
    out = shifted - pnp.log(pnp.sum(e, axis=axis, keepdims=True))
    return out if where is None else pnp.where(where, out, pnp.asarray(-np.inf, x.dtype))


@_float16_once
def softmax(x, axis: int | Sequence[int] = -1, where=None):
    """``exp(x) / sum(exp(x), axis)``; entries outside ``where`` are 0."""
    x = _float(x)
    if where is not None:
        where = pnp.broadcast_to(pnp.asarray(where, dtype=bool), x.shape)
        xm = pnp.where(where, x, pnp.asarray(-np.inf, x.dtype))
    else:
        xm = x
    mx = lax.stop_gradient(pnp.max(xm, axis=axis, keepdims=True))
    mx = pnp.where(mx == -np.inf, pnp.zeros_like(mx), mx)   # all -inf: no nan from the shift
    e = pnp.exp(x - mx)
    if where is not None:
        e = pnp.where(where, e, pnp.zeros_like(e))
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


def identity(x):
    """``x`` unchanged."""
    return pnp.asarray(x)


def tanh(x):
    """Hyperbolic tangent."""
    return pnp.tanh(_float(x))


def celu(x, alpha: float = 1.0):
    """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = _float(x)
    return pnp.maximum(x, 0.0) + alpha * pnp.expm1(pnp.minimum(x, 0.0) / alpha)


def glu(x, axis: int = -1):
    """Gated linear unit: the first half of ``x`` along ``axis`` times the sigmoid of the
    second half."""
    x = _float(x)
    n = x.shape[axis]
    if n % 2:
        raise PlaitValueError(f"glu: axis {axis} has odd size {n}; it must split in two")
    a, b = pnp.split(x, 2, axis=axis)
    return a * sigmoid(b)


def mish(x):
    """``x * tanh(softplus(x))``."""
    x = _float(x)
    return x * pnp.tanh(softplus(x))


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    return relu6(_float(x) + 3.0) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also called hard swish)."""
    x = _float(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]``."""
    x = _float(x)
    return pnp.where(x > 1, pnp.ones_like(x), pnp.where(x < -1, -pnp.ones_like(x), x))


def squareplus(x, b: float = 4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth ReLU."""
    x = _float(x)
    return (x + pnp.sqrt(x * x + b)) / 2


def sparse_plus(x):
    """0 below -1, ``x`` above 1, ``(x + 1)**2 / 4`` between."""
    x = _float(x)
    return pnp.where(x <= -1, pnp.zeros_like(x), pnp.where(x >= 1, x, (x + 1) ** 2 / 4))


def sparse_sigmoid(x):
    """``clip(x + 1, 0, 2) / 2`` (the derivative of ``sparse_plus``)."""
    return 0.5 * pnp.clip(_float(x) + 1.0, 0.0, 2.0)


def soft_sign(x):
    """``x / (|x| + 1)``."""
    x = _float(x)
    return x / (pnp.abs(x) + 1)


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate for small and large ``x``."""
    x = _float(x)
    return pnp.where(x > math.log(2), pnp.log1p(-pnp.exp(-x)), pnp.log(-pnp.expm1(-x)))
