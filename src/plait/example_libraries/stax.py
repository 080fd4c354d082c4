"""A small functional layer library in the style of ``jax.example_libraries.stax``.

A layer is a pair ``(init_fun, apply_fun)``:

- ``init_fun(key, input_shape) -> (output_shape, params)``;
- ``apply_fun(params, inputs, *, rng=None, mode="train") -> outputs``.

``mode`` is ``"train"`` or ``"eval"``: ``Dropout`` drops only in training,
``BatchNorm`` normalizes with batch statistics in training and with its running
statistics in evaluation. Layers with running statistics also carry
``update_stats(params, inputs, momentum) -> params`` (a pure function); ``serial``
composes it, so ``model.update_stats(params, x)`` refreshes every BatchNorm.
Layers unpack as 2-tuples: ``init, apply = Dense(10)``.
"""
import math as _math
from typing import Callable as _Callable, Sequence as _Sequence

import plait.numpy as _pnp
from plait import lax as _lax
from plait import nn as _nn
from plait import random as _random
from plait.errors import PlaitValueError as _PlaitValueError

__all__ = ["AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout",
           "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu",
           "GeneralConv", "GeneralConvTranspose", "GlobalAvgPool", "Identity", "Layer",
           "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax",
           "Softplus", "SumPool", "Tanh", "elementwise", "elu", "gelu", "glorot",
           "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax", "normal", "ones",
           "parallel", "randn", "relu", "selu", "serial", "shape_dependent", "sigmoid",
           "softmax", "softplus", "standardize", "zeros"]


class Layer(tuple):
    """``(init_fun, apply_fun)``, optionally with an ``update_stats`` function."""

    def __new__(cls, init_fun: _Callable, apply_fun: _Callable,
                update_stats: _Callable | None = None):
        self = super().__new__(cls, (init_fun, apply_fun))
        self.update_stats = update_stats
        return self

    @property
    def init(self) -> _Callable:
        return self[0]

    @property
    def apply(self) -> _Callable:
        return self[1]


def _check_mode(mode: str, where: str) -> None:
    if mode not in ("train", "eval"):
        raise _PlaitValueError(f"{where}: mode must be 'train' or 'eval', got {mode!r}")


def Dense(out_dim: int, W_init=None, b_init=None) -> Layer:
    """``inputs @ W + b`` over the last axis (JAX's default initializers: glorot normal
    weights, normal(1e-2) biases)."""
    W_init = W_init or _nn.init.glorot_normal()
    b_init = b_init or _nn.init.normal()

    def init_fun(key, input_shape):
        k1, k2 = _random.split(key)
        W = W_init(k1, (input_shape[-1], out_dim))
        b = b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return _pnp.matmul(inputs, W) + b
    return Layer(init_fun, apply_fun)


_LAYOUTS = {"NHWC": ("NHWC", "HWIO", "NHWC"), "NCHW": ("NCHW", "OIHW", "NCHW")}


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: _Sequence[int], strides: _Sequence[int] | None = None,
                padding="VALID", W_init=None, b_init=None) -> Layer:
    """A 2-D convolution with layouts ``(lhs, kernel, out)``, e.g. ``("NHWC","HWIO","NHWC")``."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    filter_shape = tuple(filter_shape)
    strides = tuple(strides) if strides is not None else (1,) * len(filter_shape)
    in_axis, out_axis = rhs_spec.index("I"), rhs_spec.index("O")
    W_init = W_init or _nn.init.glorot_normal(in_axis=in_axis, out_axis=out_axis)
    b_init = b_init or _nn.init.normal(1e-6)
    spatial = [c for c in out_spec if c not in "NC"]

    def init_fun(key, input_shape):
        if len(input_shape) != len(lhs_spec):
            raise _PlaitValueError(f"Conv with layout {lhs_spec} got input shape {input_shape}")
        in_chan = input_shape[lhs_spec.index("C")]
        it = iter(filter_shape)
        kshape = tuple(out_chan if c == "O" else in_chan if c == "I" else next(it)
                       for c in rhs_spec)
        sizes = {c: input_shape[lhs_spec.index(c)] for c in lhs_spec}
        out_sp = []
        for c, k, s in zip(spatial, filter_shape, strides):
            n = sizes[c]
            if padding == "SAME":
                out_sp.append(-(-n // s))
            elif padding == "VALID":
                out_sp.append((n - k) // s + 1)
            else:
                lo, hi = padding[spatial.index(c)]
                out_sp.append((n + lo + hi - k) // s + 1)
        sp = dict(zip(spatial, out_sp))
        out_shape = tuple(sizes["N"] if c == "N" else out_chan if c == "C" else sp[c]
                          for c in out_spec)
        k1, k2 = _random.split(key)
        bshape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        return out_shape, (W_init(k1, kshape), b_init(k2, bshape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return _lax.conv_general_dilated(inputs, W, strides, padding,
                                        dimension_numbers=dimension_numbers) + b
    return Layer(init_fun, apply_fun)


def Conv(out_chan: int, filter_shape: _Sequence[int], strides=None, padding="VALID",
         W_init=None, b_init=None, layout: str = "NHWC") -> Layer:
    """2-D convolution, ``layout`` ``"NHWC"`` (HWIO kernel) or ``"NCHW"`` (OIHW kernel)."""
    if layout not in _LAYOUTS:
        raise _PlaitValueError(f"Conv: layout must be 'NHWC' or 'NCHW', got {layout!r}")
    return GeneralConv(_LAYOUTS[layout], out_chan, filter_shape, strides, padding, W_init,
                       b_init)


def _pool_dims(window, strides, spec: str, ndim: int):
    strides = tuple(strides) if strides is not None else tuple(window)
    it_w, it_s = iter(window), iter(strides)
    dims, strd = [], []
    for c in spec:
        if c in "NC":
            dims.append(1)
            strd.append(1)
        else:
            dims.append(next(it_w))
            strd.append(next(it_s))
    if len(dims) != ndim:
        raise _PlaitValueError(f"pooling layout {spec} does not match an input of rank {ndim}")
    return tuple(dims), tuple(strd)


def _pool_shape(input_shape, dims, strd, padding):
    out = []
    for n, k, s in zip(input_shape, dims, strd):
        if padding == "SAME":
            out.append(-(-n // s))
        elif padding == "VALID":
            out.append((n - k) // s + 1)
        else:
            raise _PlaitValueError("pooling padding must be 'SAME' or 'VALID'")
    return tuple(out)


def MaxPool(window_shape: _Sequence[int], strides=None, padding="VALID",
            spec: str = "NHWC") -> Layer:
    """Max over windows of the spatial axes of ``spec``."""
    def init_fun(key, input_shape):
        dims, strd = _pool_dims(window_shape, strides, spec, len(input_shape))
        return _pool_shape(input_shape, dims, strd, padding), ()

    def apply_fun(params, inputs, **kwargs):
        dims, strd = _pool_dims(window_shape, strides, spec, inputs.ndim)
        return _lax.reduce_window_max(inputs, dims, strd, padding)
    return Layer(init_fun, apply_fun)


def AvgPool(window_shape: _Sequence[int], strides=None, padding="VALID",
            spec: str = "NHWC") -> Layer:
    """Mean over windows (with SAME padding, over the in-bounds entries only)."""
    def init_fun(key, input_shape):
        dims, strd = _pool_dims(window_shape, strides, spec, len(input_shape))
        return _pool_shape(input_shape, dims, strd, padding), ()

    def apply_fun(params, inputs, **kwargs):
        dims, strd = _pool_dims(window_shape, strides, spec, inputs.ndim)
        sums = _lax.reduce_window_sum(inputs, dims, strd, padding)
        if padding == "VALID":
            return sums / _math.prod(dims)
        ones = _pnp.ones(inputs.shape, inputs.dtype)
        return sums / _lax.reduce_window_sum(ones, dims, strd, padding)
    return Layer(init_fun, apply_fun)


def SumPool(window_shape: _Sequence[int], strides=None, padding="VALID",
            spec: str = "NHWC") -> Layer:
    """Sum over windows of the spatial axes of ``spec``."""
    def init_fun(key, input_shape):
        dims, strd = _pool_dims(window_shape, strides, spec, len(input_shape))
        return _pool_shape(input_shape, dims, strd, padding), ()

    def apply_fun(params, inputs, **kwargs):
        dims, strd = _pool_dims(window_shape, strides, spec, inputs.ndim)
        return _lax.reduce_window_sum(inputs, dims, strd, padding)
    return Layer(init_fun, apply_fun)


def GlobalAvgPool(spec: str = "NHWC") -> Layer:
    """Mean over the spatial axes: ``(N, H, W, C) -> (N, C)``."""
    axes = tuple(i for i, c in enumerate(spec) if c not in "NC")

    def init_fun(key, input_shape):
        return tuple(d for i, d in enumerate(input_shape) if i not in axes), ()

    def apply_fun(params, inputs, **kwargs):
        return _pnp.mean(inputs, axis=axes)
    return Layer(init_fun, apply_fun)


def _flatten_init(key, input_shape):
    return (input_shape[0], _math.prod(input_shape[1:])), ()


def _flatten_apply(params, inputs, **kwargs):
    return _pnp.reshape(inputs, (inputs.shape[0], -1))


Flatten = Layer(_flatten_init, _flatten_apply)
"""Flatten every axis but the first (a layer, not a constructor)."""


def elementwise(fun: _Callable, **fun_kwargs) -> Layer:
    """A parameterless layer applying ``fun`` to its input."""
    return Layer(lambda key, input_shape: (input_shape, ()),
                 lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs))


Relu = elementwise(_nn.relu)
Elu = elementwise(_nn.elu)
LeakyRelu = elementwise(_nn.leaky_relu)
Softplus = elementwise(_nn.softplus)
Exp = elementwise(_pnp.exp)
Selu = elementwise(_nn.selu)
Tanh = elementwise(_pnp.tanh)
Sigmoid = elementwise(_nn.sigmoid)
Gelu = elementwise(_nn.gelu)
LogSoftmax = elementwise(_nn.log_softmax, axis=-1)
Softmax = elementwise(_nn.softmax, axis=-1)


def Dropout(rate: float, mode: str = "train") -> Layer:
    """JAX's stax semantics: ``rate`` is the probability of KEEPING an input. In training
    each input is kept with probability ``rate`` and scaled by ``1 / rate`` (the rest
    become 0); in evaluation the layer is the identity. ``mode`` set here is the
    default; ``apply_fun(..., mode=...)`` overrides it. Training needs ``rng=key``."""
    if not 0.0 < rate <= 1.0:
        raise _PlaitValueError(f"Dropout(rate): rate is the keep probability (as in "
                               f"jax.example_libraries.stax) and must be in (0, 1], got "
                               f"{rate}; to drop a fraction p of the inputs use "
                               f"Dropout(1 - p)")
    _check_mode(mode, "Dropout")
    default_mode = mode

    def init_fun(key, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, *, rng=None, mode=None, **kwargs):
        mode = default_mode if mode is None else mode
        _check_mode(mode, "Dropout")
        if mode == "eval" or rate == 1.0:
            return inputs
        if rng is None:
            raise _PlaitValueError("Dropout in mode='train' needs a PRNG key: call apply_fun("
                                   "params, x, rng=key), or pass mode='eval'")
        keep = _random.bernoulli(rng, rate, inputs.shape)
        return _pnp.where(keep, inputs / rate, _pnp.zeros_like(inputs))
    return Layer(init_fun, apply_fun)


def BatchNorm(axis: _Sequence[int] = (0, 1, 2), epsilon: float = 1e-5, center: bool = True,
              scale: bool = True) -> Layer:
    """Batch normalization over ``axis`` (the reduced axes; default NHWC: all but C).

    Params are ``(beta, gamma, running_mean, running_var)``. ``mode="train"`` uses the
    batch statistics, ``mode="eval"`` the running ones; ``update_stats`` moves the
    running statistics toward a batch's (``running = momentum * running + (1 -
    momentum) * batch``, with the unbiased batch variance).
    """
    axis = (axis,) if isinstance(axis, int) else tuple(axis)

    def stat_shape(input_shape):
        return tuple(d for i, d in enumerate(input_shape) if i not in
                     [a % len(input_shape) for a in axis])

    def init_fun(key, input_shape):
        s = stat_shape(input_shape)
        return input_shape, (_pnp.zeros(s), _pnp.ones(s), _pnp.zeros(s), _pnp.ones(s))

    def expand(v, ndim):
        ax = sorted(a % ndim for a in axis)
        for a in ax:
            v = _pnp.expand_dims(v, a)
        return v

    def apply_fun(params, x, *, mode="train", **kwargs):
        _check_mode(mode, "BatchNorm")
        beta, gamma, rmean, rvar = params
        if mode == "train":
            mean = _pnp.mean(x, axis=axis, keepdims=True)
            var = _pnp.mean(_pnp.square(x - mean), axis=axis, keepdims=True)
        else:
            mean, var = expand(rmean, x.ndim), expand(rvar, x.ndim)
        z = _nn.standardize(x, axis, mean=mean, variance=var, epsilon=epsilon)
        if scale:
            z = z * expand(gamma, x.ndim)
        if center:
            z = z + expand(beta, x.ndim)
        return z

    def update_stats(params, x, momentum: float = 0.9, **kwargs):
        beta, gamma, rmean, rvar = params
        n = _math.prod(x.shape[a % x.ndim] for a in axis)
        mean = _pnp.mean(x, axis=axis)
        var = _pnp.sum(_pnp.square(x - expand(mean, x.ndim)), axis=axis) / max(n - 1, 1)
        return (beta, gamma, momentum * rmean + (1 - momentum) * mean,
                momentum * rvar + (1 - momentum) * var)
    return Layer(init_fun, apply_fun, update_stats)


# The identity layer: a layer value, as in JAX's stax (``serial(..., Identity)``).
Identity = Layer(lambda key, input_shape: (input_shape, ()),
                 lambda params, inputs, **kwargs: inputs)


def serial(*layers: Layer) -> Layer:
    """Layers composed in order. ``init_fun`` splits its key as JAX's does (``key, k =
    split(key)`` per layer, so seeded parameters are JAX's); ``rng`` is split among the
    layers; ``update_stats`` runs the model in training mode and refreshes every layer's
    running statistics."""
    layers = tuple(layers)
    n = len(layers)

    def init_fun(key, input_shape):
        params = []
        for layer in layers:
            key, k = _random.split(key)
            input_shape, p = layer[0](k, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params, inputs, *, rng=None, **kwargs):
        rngs = _random.split(rng, n) if rng is not None else [None] * n
        for layer, p, r in zip(layers, params, rngs):
            inputs = layer[1](p, inputs, rng=r, **kwargs)
        return inputs

    def update_stats(params, inputs, momentum: float = 0.9, *, rng=None, **kwargs):
        rngs = _random.split(rng, n) if rng is not None else [None] * n
        new = []
        for layer, p, r in zip(layers, params, rngs):
            upd = getattr(layer, "update_stats", None)
            new.append(upd(p, inputs, momentum, rng=r) if upd is not None else p)
            inputs = layer[1](p, inputs, rng=r, mode="train", **kwargs)
        return new
    return Layer(init_fun, apply_fun, update_stats)


# --- combinators (FanOut/FanIn/parallel/shape_dependent) -------------------------------------

def FanOut(num: int) -> Layer:
    """``num`` copies of the input (a list), for ``parallel`` branches."""
    return Layer(lambda key, input_shape: ([input_shape] * num, ()),
                 lambda params, inputs, **kwargs: [inputs] * num)


def _fan_in_sum_init(key, input_shape):
    return input_shape[0], ()


FanInSum = Layer(_fan_in_sum_init, lambda params, inputs, **kwargs: sum(inputs))
"""Sum of a list of inputs (a layer, not a constructor)."""


def FanInConcat(axis: int = -1) -> Layer:
    """Concatenation of a list of inputs along ``axis``."""
    def init_fun(key, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(sh[ax] for sh in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

    return Layer(init_fun, lambda params, inputs, **kwargs: _pnp.concatenate(inputs, axis))


def parallel(*layers: Layer) -> Layer:
    """Layers applied side by side: a list of inputs to a list of outputs."""
    layers = tuple(layers)
    n = len(layers)

    def init_fun(key, input_shape):
        outs = [layer[0](k, sh) for layer, k, sh in zip(layers, _random.split(key, n),
                                                          input_shape)]
        return [o[0] for o in outs], [o[1] for o in outs]

    def apply_fun(params, inputs, *, rng=None, **kwargs):
        rngs = _random.split(rng, n) if rng is not None else [None] * n
        return [layer[1](p, x, rng=r, **kwargs)
                for layer, p, x, r in zip(layers, params, inputs, rngs)]
    return Layer(init_fun, apply_fun)


def shape_dependent(make_layer: _Callable) -> Layer:
    """A layer built from the input shape: ``make_layer(input_shape) -> layer``."""
    def init_fun(key, input_shape):
        return make_layer(input_shape)[0](key, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return Layer(init_fun, apply_fun)


# --- transposed convolutions -------------------------------------------------------------------

def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int,
                         filter_shape: _Sequence[int], strides: _Sequence[int] | None = None,
                         padding="VALID", W_init=None, b_init=None) -> Layer:
    """A transposed convolution with layouts ``(lhs, kernel, out)``; SAME output size is
    ``n * stride``, VALID ``n * stride + max(k - stride, 0)``."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    filter_shape = tuple(filter_shape)
    strides = tuple(strides) if strides is not None else (1,) * len(filter_shape)
    W_init = W_init or _nn.init.glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))
    b_init = b_init or _nn.init.normal(1e-6)
    spatial = [c for c in out_spec if c not in "NC"]

    def init_fun(key, input_shape):
        if len(input_shape) != len(lhs_spec):
            raise _PlaitValueError(f"ConvTranspose with layout {lhs_spec} got input shape "
                                  f"{input_shape}")
        in_chan = input_shape[lhs_spec.index("C")]
        it = iter(filter_shape)
        kshape = tuple(out_chan if c == "O" else in_chan if c == "I" else next(it)
                       for c in rhs_spec)
        sizes = {c: input_shape[lhs_spec.index(c)] for c in lhs_spec}
        sp = {}
        for c, k, st in zip(spatial, filter_shape, strides):
            lo, hi = _lax.conv_transpose_padding(k, st, padding)
            sp[c] = (sizes[c] - 1) * st + 1 + lo + hi - k + 1
        out_shape = tuple(sizes["N"] if c == "N" else out_chan if c == "C" else sp[c]
                          for c in out_spec)
        k1, k2 = _random.split(key)
        bshape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        return out_shape, (W_init(k1, kshape), b_init(k2, bshape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return _lax.conv_transpose(inputs, W, strides, padding,
                                  dimension_numbers=dimension_numbers) + b
    return Layer(init_fun, apply_fun)


def Conv1DTranspose(out_chan: int, filter_shape: _Sequence[int], strides=None,
                    padding="VALID", W_init=None, b_init=None) -> Layer:
    """1-D transposed convolution, ``NHC`` input, ``HIO`` kernel."""
    return GeneralConvTranspose(("NHC", "HIO", "NHC"), out_chan, filter_shape, strides,
                                padding, W_init, b_init)


def ConvTranspose(out_chan: int, filter_shape: _Sequence[int], strides=None,
                  padding="VALID", W_init=None, b_init=None) -> Layer:
    """2-D transposed convolution, ``NHWC`` input, ``HWIO`` kernel."""
    return GeneralConvTranspose(("NHWC", "HWIO", "NHWC"), out_chan, filter_shape, strides,
                                padding, W_init, b_init)


# JAX's stax re-exports these functions and initializers under its own namespace.
relu, selu, sigmoid, elu, gelu = _nn.relu, _nn.selu, _nn.sigmoid, _nn.elu, _nn.gelu
leaky_relu, softplus, softmax = _nn.leaky_relu, _nn.softplus, _nn.softmax
standardize = _nn.standardize
log_softmax = logsoftmax = _nn.log_softmax
glorot = glorot_normal = _nn.init.glorot_normal
randn = normal = _nn.init.normal
ones, zeros = _nn.init.ones, _nn.init.zeros
