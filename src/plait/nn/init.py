"""Parameter initializers (like ``jax.nn.initializers``): each builder returns
``init(key, shape, dtype=float32) -> array``.

``variance_scaling`` draws with variance ``scale / n`` where ``n`` is the fan-in,
fan-out or their mean; ``glorot_*``, ``he_*`` and ``lecun_*`` are its named cases.
For convolution kernels the receptive field (every axis but ``in_axis`` and
``out_axis``) multiplies both fans: use ``in_axis=-2, out_axis=-1`` for HWIO and
``in_axis=1, out_axis=0`` for OIHW kernels.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

import plait.numpy as pnp
from plait import random
from plait.errors import PlaitValueError

Initializer = Callable[..., "pnp.ndarray"]
# Standard deviation of the unit normal truncated to (-2, 2).
_TRUNC_STD = 0.87962566103423978


def zeros(key, shape: Sequence[int], dtype=np.float32):
    """All zeros (``key`` is ignored)."""
    return pnp.zeros(tuple(shape), dtype)


def ones(key, shape: Sequence[int], dtype=np.float32):
    """All ones (``key`` is ignored)."""
    return pnp.ones(tuple(shape), dtype)


def constant(value, dtype=np.float32) -> Initializer:
    """An initializer filling with ``value``."""
    def init(key, shape, dtype=dtype):
        return pnp.full(tuple(shape), value, dtype)
    return init


def normal(stddev: float = 1e-2, dtype=np.float32) -> Initializer:
    """Normal samples with standard deviation ``stddev``."""
    def init(key, shape, dtype=dtype):
        return (random.normal(key, shape, dtype) * stddev).astype(dtype)
    return init


def uniform(scale: float = 1e-2, dtype=np.float32) -> Initializer:
    """Uniform samples on ``[0, scale)``."""
    def init(key, shape, dtype=dtype):
        return (random.uniform(key, shape, dtype) * scale).astype(dtype)
    return init


def _fans(shape: Sequence[int], in_axis: int, out_axis: int) -> tuple[float, float]:
    shape = tuple(shape)
    if len(shape) < 2:
        raise PlaitValueError(f"variance_scaling needs a shape with at least 2 dimensions "
                              f"(fan in and fan out), got {shape}")
    i, o = in_axis % len(shape), out_axis % len(shape)
    receptive = math.prod(d for k, d in enumerate(shape) if k not in (i, o))
    return shape[i] * receptive, shape[o] * receptive


def variance_scaling(scale: float, mode: str, distribution: str, in_axis: int = -2,
                     out_axis: int = -1, dtype=np.float32) -> Initializer:
    """Samples with variance ``scale / fan``.

    ``mode`` is ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"``; ``distribution`` is
    ``"normal"``, ``"truncated_normal"`` (at two standard deviations, rescaled) or
    ``"uniform"``.
    """
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise PlaitValueError(f"variance_scaling: unknown mode {mode!r}; use 'fan_in', "
                              f"'fan_out' or 'fan_avg'")
    if distribution not in ("normal", "truncated_normal", "uniform"):
        raise PlaitValueError(f"variance_scaling: unknown distribution {distribution!r}; use "
                              f"'normal', 'truncated_normal' or 'uniform'")

    def init(key, shape, dtype=dtype):
        fan_in, fan_out = _fans(shape, in_axis, out_axis)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        var = scale / fan
        if distribution == "normal":
            return (random.normal(key, shape, dtype) * math.sqrt(var)).astype(dtype)
        if distribution == "truncated_normal":
            z = random.truncated_normal(key, -2.0, 2.0, shape, dtype)
            return (z * (math.sqrt(var) / _TRUNC_STD)).astype(dtype)
        u = random.uniform(key, shape, dtype, -1.0, 1.0)
        return (u * math.sqrt(3 * var)).astype(dtype)
    return init


def glorot_uniform(in_axis: int = -2, out_axis: int = -1, dtype=np.float32) -> Initializer:
    """Glorot/Xavier uniform: variance ``1 / fan_avg``."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, dtype)


def glorot_normal(in_axis: int = -2, out_axis: int = -1, dtype=np.float32) -> Initializer:
    """Glorot/Xavier (truncated) normal: variance ``1 / fan_avg``."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, dtype)


def he_uniform(in_axis: int = -2, out_axis: int = -1, dtype=np.float32) -> Initializer:
    """He/Kaiming uniform: variance ``2 / fan_in``."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, dtype)


def he_normal(in_axis: int = -2, out_axis: int = -1, dtype=np.float32) -> Initializer:
    """He/Kaiming (truncated) normal: variance ``2 / fan_in``."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, dtype)


def lecun_uniform(in_axis: int = -2, out_axis: int = -1, dtype=np.float32) -> Initializer:
    """LeCun uniform: variance ``1 / fan_in``."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, dtype)


def lecun_normal(in_axis: int = -2, out_axis: int = -1, dtype=np.float32) -> Initializer:
    """LeCun (truncated) normal: variance ``1 / fan_in``."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, dtype)


kaiming_uniform, kaiming_normal = he_uniform, he_normal
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal


def truncated_normal(stddev: float = 1e-2, dtype=np.float32, lower: float = -2.0,
                     upper: float = 2.0) -> Initializer:
    """``stddev`` times standard normal samples truncated to ``(lower, upper)``."""
    def init(key, shape, dtype=dtype):
        return (random.truncated_normal(key, lower, upper, shape, dtype) * stddev).astype(dtype)
    return init


def orthogonal(scale: float = 1.0, column_axis: int = -1, dtype=np.float32) -> Initializer:
    """Orthogonal matrices (orthonormal columns, or rows if there are more columns),
    reshaped to ``shape`` with ``column_axis`` as the column axis, times ``scale``."""
    from plait.random.continuous import orthonormalize

    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        if len(shape) < 2:
            raise PlaitValueError(f"orthogonal initializer needs at least 2 dimensions, "
                                  f"got {shape}")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        tall = (n_rows, n_cols) if n_rows >= n_cols else (n_cols, n_rows)
        q = orthonormalize(random.normal(key, tall, dtype))
        if n_rows < n_cols:
            q = q.T
        rest = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = pnp.moveaxis(pnp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return (scale * q).astype(dtype)
    return init


def delta_orthogonal(scale: float = 1.0, column_axis: int = -1,
                     dtype=np.float32) -> Initializer:
    """Convolution kernels (3-5 dims, ``...HW IO``) that are zero except for an orthogonal
    ``[in, out]`` matrix at the spatial centre (Xiao et al., 2018)."""
    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        if len(shape) not in (3, 4, 5):
            raise PlaitValueError(f"delta_orthogonal needs a 3-5 dimensional kernel shape, "
                                  f"got {shape}")
        if shape[-2] > shape[-1]:
            raise PlaitValueError(f"delta_orthogonal needs in-channels <= out-channels, got "
                                  f"{shape[-2]} > {shape[-1]}")
        ortho = orthogonal(scale, column_axis, dtype)(key, shape[-2:])
        centre = tuple((d - 1) // 2 for d in shape[:-2])
        return pnp.zeros(shape, dtype).at[centre].set(ortho)
    return init
