"""ONNX operator converters: one table, op type -> converter.

A converter takes a :class:`Node` (inputs, attributes, the array namespace) and returns
the node's outputs. Values are either static NumPy arrays (constants, shapes, index
arithmetic: folded at import/trace time, so ``Reshape``/``Slice``/``Gather`` see static
shapes and indices) or plait arrays (anything depending on a model input or weight).
When every input of a node is static and the converter is marked ``fold``, it runs
with NumPy; otherwise with ``plait.numpy``/``plait.lax`` (differentiable, jittable).
Semantics follow the ONNX operator specification for opset 13 and later.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

import plait.numpy as pnp
from plait import lax
from plait.errors import OnnxImportError, UnsupportedOnnxOperatorError
from plait.nn import functions as nnf


class Node:
    """One node being converted: ``x(i)`` its i-th input (None if absent), ``attr``."""

    def __init__(self, proto, inputs: list, attrs: dict, xp, opset: int,
                 initializers: dict | None = None):
        self.proto = proto
        self.inputs = inputs
        self.attrs = attrs
        self.xp = xp
        self.opset = opset
        self.initializers = initializers or {}

    def x(self, i: int):
        return self.inputs[i] if i < len(self.inputs) else None

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def static(self, i: int, what: str) -> np.ndarray:
        v = self.x(i)
        if v is None:
            return None
        if not isinstance(v, np.ndarray):
            init = self.initializers.get(self.proto.input[i])
            if init is not None:      # a float initializer used as a static operand (scales)
                return init
            raise OnnxImportError(
                f"{self.proto.op_type} node {self.proto.name!r}: its {what} (input {i}) must "
                "be known when the model is imported (a constant or computed from shapes), "
                "but it depends on the model's inputs or weights")
        return v


CONVERTERS: dict[str, tuple[Callable, bool]] = {}


def converter(*names: str, fold: bool = True):
    """Register a converter for op types ``names``; ``fold``: it also runs on NumPy."""
    def reg(fn):
        for n in names:
            CONVERTERS[n] = (fn, fold)
        return fn
    return reg


# ---- elementwise -----------------------------------------------------------------------

def _binary(name, fn):
    converter(name)(lambda n: [fn(n.xp, n.x(0), n.x(1))])


def _div(xp, a, b):
    if xp is np and np.result_type(a, b).kind in "iu":
        return np.trunc(a / b).astype(np.result_type(a, b))
    return xp.divide(a, b)


for _name, _fn in {"Add": lambda xp, a, b: xp.add(a, b),
                   "Sub": lambda xp, a, b: xp.subtract(a, b),
                   "Mul": lambda xp, a, b: xp.multiply(a, b),
                   "Div": _div,
                   "Pow": lambda xp, a, b: xp.power(a, xp.asarray(b).astype(xp.asarray(a).dtype)),
                   "Equal": lambda xp, a, b: xp.equal(a, b),
                   "Less": lambda xp, a, b: xp.less(a, b),
                   "Greater": lambda xp, a, b: xp.greater(a, b),
                   "And": lambda xp, a, b: xp.logical_and(a, b),
                   "Or": lambda xp, a, b: xp.logical_or(a, b)}.items():
    _binary(_name, _fn)

for _name, _fn in {"Relu": lambda xp, x: xp.maximum(x, xp.zeros((), xp.asarray(x).dtype)),
                   "Tanh": lambda xp, x: xp.tanh(x), "Exp": lambda xp, x: xp.exp(x),
                   "Log": lambda xp, x: xp.log(x), "Sqrt": lambda xp, x: xp.sqrt(x),
                   "Neg": lambda xp, x: xp.negative(x), "Abs": lambda xp, x: xp.abs(x),
                   "Reciprocal": lambda xp, x: 1 / x, "Not": lambda xp, x: xp.logical_not(x),
                   "Floor": lambda xp, x: xp.floor(x), "Ceil": lambda xp, x: xp.ceil(x),
                   "Sigmoid": lambda xp, x: 1 / (1 + xp.exp(-x)),
                   "Identity": lambda xp, x: x}.items():
    converter(_name)(lambda n, _fn=_fn: [_fn(n.xp, n.x(0))])


@converter("Mod")
def _mod(n):
    a, b = n.x(0), n.x(1)
    return [n.xp.fmod(a, b) if n.attr("fmod", 0) else n.xp.mod(a, b)]


@converter("Erf", fold=False)
def _erf(n):
    return [lax.erf(n.x(0))]


@converter("Gelu", fold=False)
def _gelu(n):
    return [nnf.gelu(n.x(0), approximate=n.attr("approximate", "none") == "tanh")]


@converter("Softmax", fold=False)
def _softmax(n):
    x = n.x(0)
    if n.opset >= 13:
        return [nnf.softmax(x, axis=n.attr("axis", -1))]
    shp = np.shape(x)           # before opset 13: over the dimensions from axis on, flattened
    a = n.attr("axis", 1) % len(shp)
    flat = pnp.reshape(x, (int(np.prod(shp[:a])), int(np.prod(shp[a:]))))
    return [pnp.reshape(nnf.softmax(flat, axis=1), shp)]


@converter("LeakyRelu")
def _leaky(n):
    x = n.x(0)
    return [n.xp.where(x >= 0, x, x * n.attr("alpha", 0.01))]


@converter("Where")
def _where(n):
    return [n.xp.where(n.x(0), n.x(1), n.x(2))]


@converter("Clip")
def _clip(n):
    x, lo, hi = n.x(0), n.x(1), n.x(2)
    if n.opset < 11:            # bounds were attributes
        lo, hi = n.attr("min"), n.attr("max")
    if lo is not None:
        x = n.xp.maximum(x, lo)
    if hi is not None:
        x = n.xp.minimum(x, hi)
    return [x]


@converter("Max", "Min", "Sum", "Mean")
def _variadic(n):
    xp, op = n.xp, n.proto.op_type
    acc = n.inputs[0]
    for v in n.inputs[1:]:
        acc = {"Max": xp.maximum, "Min": xp.minimum}.get(op, xp.add)(acc, v)
    return [acc / len(n.inputs) if op == "Mean" else acc]


@converter("Cast")
def _cast(n):
    from onnx import helper
    return [n.xp.asarray(n.x(0)).astype(helper.tensor_dtype_to_np_dtype(n.attr("to")))]


@converter("Dropout")
def _dropout(n):
    x = n.x(0)
    return [x, n.xp.ones(np.shape(x), bool)]


# ---- linear algebra --------------------------------------------------------------------

@converter("MatMul")
def _matmul(n):
    return [n.xp.matmul(n.x(0), n.x(1))]


@converter("Gemm")
def _gemm(n):
    xp = n.xp
    a, b, c = n.x(0), n.x(1), n.x(2)
    if n.attr("transA", 0):
        a = xp.transpose(a)
    if n.attr("transB", 0):
        b = xp.transpose(b)
    y = xp.matmul(a, b)
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return [y]


def _pairs(n, nsp: int):
    pads = n.attr("pads", [0] * (2 * nsp))
    if n.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise UnsupportedOnnxOperatorError(
            f"{n.proto.op_type}: auto_pad={n.attr('auto_pad')!r} (export with explicit pads)",
            locate=False)
    return [(int(pads[i]), int(pads[i + nsp])) for i in range(nsp)]


@converter("Conv", fold=False)
def _conv(n):
    x, w, b = n.x(0), n.x(1), n.x(2)
    nsp = len(np.shape(w)) - 2
    y = lax.conv_general_dilated(
        x, w, tuple(n.attr("strides", [1] * nsp)), _pairs(n, nsp),
        rhs_dilation=tuple(n.attr("dilations", [1] * nsp)),
        feature_group_count=n.attr("group", 1))
    if b is not None:
        y = y + pnp.reshape(b, (1, -1) + (1,) * nsp)
    return [y]


@converter("BatchNormalization", fold=False)
def _batchnorm(n):
    x, scale, bias, mean, var = (n.x(i) for i in range(5))
    shape = (1, -1) + (1,) * (len(np.shape(x)) - 2)
    r = lambda v: pnp.reshape(v, shape)   # noqa: E731
    inv = r(scale) / pnp.sqrt(r(var) + n.attr("epsilon", 1e-5))
    return [(x - r(mean)) * inv + r(bias)]


@converter("LayerNormalization", fold=False)
def _layernorm(n):
    x, scale, bias = n.x(0), n.x(1), n.x(2)
    nd = len(np.shape(x))
    axes = tuple(range(n.attr("axis", -1) % nd, nd))
    mu = pnp.mean(x, axis=axes, keepdims=True)
    var = pnp.mean(pnp.square(x - mu), axis=axes, keepdims=True)
    y = (x - mu) / pnp.sqrt(var + n.attr("epsilon", 1e-5)) * scale
    return [y + bias if bias is not None else y]


# ---- pooling ---------------------------------------------------------------------------

def _window(n, x):
    nsp = len(np.shape(x)) - 2
    k = tuple(n.attr("kernel_shape"))
    s = tuple(n.attr("strides", [1] * nsp))
    d = tuple(n.attr("dilations", [1] * nsp))
    if n.attr("ceil_mode", 0):
        raise UnsupportedOnnxOperatorError(f"{n.proto.op_type}: ceil_mode=1", locate=False)
    return nsp, k, s, d, _pairs(n, nsp)


@converter("MaxPool", fold=False)
def _maxpool(n):
    x = n.x(0)
    nsp, k, s, d, pads = _window(n, x)
    y = lax.reduce_window(x, -np.inf, lax.max, (1, 1) + k, (1, 1) + s,
                          [(0, 0), (0, 0)] + pads, window_dilation=(1, 1) + d)
    return [y]


@converter("AveragePool", fold=False)
def _avgpool(n):
    x = n.x(0)
    nsp, k, s, d, pads = _window(n, x)
    y = lax.reduce_window(x, 0.0, lax.add, (1, 1) + k, (1, 1) + s,
                          [(0, 0), (0, 0)] + pads, window_dilation=(1, 1) + d)
    if n.attr("count_include_pad", 0):
        return [y / float(np.prod(k))]
    count = np.ones((), np.float64)
    for ax in range(nsp):       # valid taps per output position, axis by axis
        size, (lo, _) = np.shape(x)[2 + ax], pads[ax]
        pos = np.arange(np.shape(y)[2 + ax])[:, None] * s[ax] - lo + np.arange(k[ax]) * d[ax]
        c = ((pos >= 0) & (pos < size)).sum(1).astype(np.float64)
        count = np.multiply.outer(count, c)
    return [y / count.astype(np.asarray(0.0, dtype=y.dtype).dtype)]


@converter("GlobalAveragePool", "GlobalMaxPool", fold=False)
def _global_pool(n):
    x = n.x(0)
    axes = tuple(range(2, len(np.shape(x))))
    f = pnp.mean if n.proto.op_type == "GlobalAveragePool" else pnp.max
    return [f(x, axis=axes, keepdims=True)]


# ---- reductions ------------------------------------------------------------------------

@converter("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd")
def _reduce(n):
    xp = n.xp
    axes = n.static(1, "axes") if n.x(1) is not None else n.attr("axes")
    if axes is None or len(axes) == 0:
        if n.attr("noop_with_empty_axes", 0):
            return [n.x(0)]
        axes = None
    else:
        axes = tuple(int(a) for a in np.asarray(axes).reshape(-1))
    f = {"ReduceMean": xp.mean, "ReduceSum": xp.sum, "ReduceMax": xp.max,
         "ReduceMin": xp.min, "ReduceProd": xp.prod}[n.proto.op_type]
    return [f(n.x(0), axis=axes, keepdims=bool(n.attr("keepdims", 1)))]


# ---- shapes ----------------------------------------------------------------------------

@converter("Shape")
def _shape(n):
    shp = np.array(np.shape(n.x(0)), np.int64)
    start, end = n.attr("start", 0), n.attr("end", None)
    return [shp[start:end]]


@converter("Constant")
def _constant(n):
    from onnx import numpy_helper
    a = n.attrs
    if "value" in a:
        return [numpy_helper.to_array(a["value"])]
    for key, dt in (("value_float", np.float32), ("value_floats", np.float32),
                    ("value_int", np.int64), ("value_ints", np.int64)):
        if key in a:
            return [np.asarray(a[key], dt)]
    raise UnsupportedOnnxOperatorError(f"Constant with attributes {sorted(a)}", locate=False)


@converter("ConstantOfShape")
def _constant_of_shape(n):
    from onnx import numpy_helper
    shape = tuple(int(s) for s in n.static(0, "shape"))
    v = numpy_helper.to_array(n.attr("value")) if n.attr("value") is not None \
        else np.zeros(1, np.float32)
    return [np.full(shape, v.reshape(-1)[0], v.dtype)]


@converter("Range")
def _range(n):
    s, e, d = (n.static(i, "range bound").item() for i in range(3))
    return [np.arange(s, e, d, dtype=n.inputs[0].dtype)]


@converter("Reshape")
def _reshape(n):
    x = n.x(0)
    shape = [int(v) for v in n.static(1, "shape")]
    if not n.attr("allowzero", 0):
        shape = [np.shape(x)[i] if v == 0 else v for i, v in enumerate(shape)]
    return [n.xp.reshape(x, tuple(shape))]


@converter("Flatten")
def _flatten(n):
    x = n.x(0)
    shp = np.shape(x)
    a = n.attr("axis", 1) % (len(shp) + 1) if shp else 0
    return [n.xp.reshape(x, (int(np.prod(shp[:a])), int(np.prod(shp[a:]))))]


@converter("Transpose")
def _transpose(n):
    x = n.x(0)
    perm = n.attr("perm", list(reversed(range(len(np.shape(x))))))
    return [n.xp.transpose(x, tuple(perm))]


@converter("Concat")
def _concat(n):
    xs = [v for v in n.inputs if v is not None]
    return [n.xp.concatenate(xs, axis=n.attr("axis"))]


def _axes_of(n, what="axes"):
    if n.x(1) is not None:
        return [int(a) for a in n.static(1, what)]
    return n.attr("axes")


@converter("Squeeze")
def _squeeze(n):
    axes = _axes_of(n)
    x = n.x(0)
    return [n.xp.squeeze(x, axis=None if axes is None else tuple(axes))]


@converter("Unsqueeze")
def _unsqueeze(n):
    x = n.x(0)
    axes = _axes_of(n)
    nd = len(np.shape(x)) + len(axes)
    for a in sorted(a % nd for a in axes):
        x = n.xp.expand_dims(x, a)
    return [x]


@converter("Expand")
def _expand(n):
    x = n.x(0)
    shape = tuple(int(v) for v in n.static(1, "shape"))
    return [n.xp.broadcast_to(x, np.broadcast_shapes(np.shape(x), shape))]


@converter("Slice")
def _slice(n):
    x = n.x(0)
    nd = len(np.shape(x))
    starts = n.static(1, "starts")
    ends = n.static(2, "ends")
    axes = n.static(3, "axes") if n.x(3) is not None else np.arange(len(starts))
    steps = n.static(4, "steps") if n.x(4) is not None else np.ones(len(starts), np.int64)
    idx = [slice(None)] * nd
    big = np.iinfo(np.int64).max // 2
    for s, e, a, st in zip(starts, ends, axes, steps):
        s, e, st = int(s), int(e), int(st)
        e = None if abs(e) >= big else e
        s = None if abs(s) >= big else s
        idx[int(a) % nd] = slice(s, e, st)
    return [x[tuple(idx)]]


@converter("Gather")
def _gather(n):
    x, idx = n.x(0), n.x(1)
    axis = n.attr("axis", 0)
    if isinstance(idx, np.ndarray):
        size = np.shape(x)[axis]
        idx = np.where(idx < 0, idx + size, idx)
    return [n.xp.take(x, idx, axis=axis)]


# ---- more activations, normalization and tensor ops -------------------------------------

for _name, _fn in {"Sin": lambda xp, x: xp.sin(x), "Cos": lambda xp, x: xp.cos(x),
                   "Sign": lambda xp, x: xp.sign(x),
                   "Softplus": lambda xp, x: xp.logaddexp(x, xp.zeros((), xp.asarray(x).dtype))
                   }.items():
    converter(_name)(lambda n, _fn=_fn: [_fn(n.xp, n.x(0))])


@converter("Elu", "Selu")
def _elu(n):
    xp, x = n.xp, n.x(0)
    selu = n.proto.op_type == "Selu"
    alpha = n.attr("alpha", 1.6732632423543772 if selu else 1.0)
    y = xp.where(x > 0, x, alpha * (xp.exp(xp.minimum(x, 0.0 * x)) - 1))
    return [y * n.attr("gamma", 1.0507009873554805) if selu else y]


@converter("HardSigmoid", "HardSwish")
def _hard(n):
    xp, x = n.xp, n.x(0)
    swish = n.proto.op_type == "HardSwish"
    a, b = (1 / 6, 0.5) if swish else (n.attr("alpha", 0.2), n.attr("beta", 0.5))
    h = xp.clip(x * a + b, 0.0, 1.0)
    return [x * h if swish else h]


@converter("PRelu")
def _prelu(n):
    x, slope = n.x(0), n.x(1)
    return [n.xp.where(x < 0, x * slope, x)]


@converter("InstanceNormalization", fold=False)
def _instancenorm(n):
    x, scale, bias = n.x(0), n.x(1), n.x(2)
    nd = len(np.shape(x))
    axes = tuple(range(2, nd))
    mu = pnp.mean(x, axis=axes, keepdims=True)
    var = pnp.mean(pnp.square(x - mu), axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (nd - 2)
    y = (x - mu) / pnp.sqrt(var + n.attr("epsilon", 1e-5))
    return [y * pnp.reshape(scale, shape) + pnp.reshape(bias, shape)]


@converter("ConvTranspose", fold=False)
def _conv_transpose(n):
    x, w, b = n.x(0), n.x(1), n.x(2)
    nsp = len(np.shape(w)) - 2
    if n.attr("group", 1) != 1 or n.attr("output_shape") is not None:
        raise UnsupportedOnnxOperatorError("ConvTranspose with group > 1 or output_shape",
                                           locate=False)
    k = np.shape(w)[2:]
    s = n.attr("strides", [1] * nsp)
    d = n.attr("dilations", [1] * nsp)
    op = n.attr("output_padding", [0] * nsp)
    pads = _pairs(n, nsp)
    # the transpose of a strided conv: dilate the input, flip the kernel, swap its channels
    rhs = pnp.flip(pnp.swapaxes(w, 0, 1), axis=tuple(range(2, 2 + nsp)))
    padding = [(d[i] * (k[i] - 1) - pads[i][0], d[i] * (k[i] - 1) - pads[i][1] + op[i])
               for i in range(nsp)]
    y = lax.conv_general_dilated(x, rhs, (1,) * nsp, padding, lhs_dilation=tuple(s),
                                 rhs_dilation=tuple(d))
    if b is not None:
        y = y + pnp.reshape(b, (1, -1) + (1,) * nsp)
    return [y]


@converter("Pad")
def _pad(n):
    x = n.x(0)
    nd = len(np.shape(x))
    pads = [int(v) for v in n.static(1, "pads")] if n.x(1) is not None else n.attr("pads")
    axes = [int(a) % nd for a in n.static(3, "axes")] if n.x(3) is not None else list(range(nd))
    if min(pads) < 0:
        raise UnsupportedOnnxOperatorError("Pad with negative pads", locate=False)
    width = [(0, 0)] * nd
    for i, a in enumerate(axes):
        width[a] = (pads[i], pads[i + len(axes)])
    mode = n.attr("mode", "constant")
    if mode == "constant":
        cv = n.x(2)
        cv = 0.0 if cv is None else cv.reshape(()) if isinstance(cv, np.ndarray) else cv
        return [n.xp.pad(x, width, mode="constant", constant_values=cv)]
    return [n.xp.pad(x, width, mode={"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode])]


@converter("Split")
def _split(n):
    x = n.x(0)
    axis = n.attr("axis", 0)
    size = np.shape(x)[axis]
    parts = [int(v) for v in n.static(1, "split")] if n.x(1) is not None else n.attr("split")
    if parts is None:
        k = len(n.proto.output)
        step = -(-size // k)
        parts = [min(step, size - i * step) for i in range(k)]
    cuts = np.cumsum(parts)[:-1].tolist()
    return n.xp.split(x, cuts, axis=axis)


@converter("ArgMax", "ArgMin")
def _argext(n):
    x = n.x(0)
    axis = n.attr("axis", 0)
    if n.attr("select_last_index", 0):
        raise UnsupportedOnnxOperatorError(f"{n.proto.op_type} select_last_index=1",
                                           locate=False)
    f = n.xp.argmax if n.proto.op_type == "ArgMax" else n.xp.argmin
    r = n.xp.asarray(f(x, axis=axis)).astype(np.int64)
    return [n.xp.expand_dims(r, axis) if n.attr("keepdims", 1) else r]


@converter("CumSum")
def _cumsum(n):
    xp, x = n.xp, n.x(0)
    axis = int(n.static(1, "axis").reshape(()))
    if n.attr("reverse", 0):
        x = xp.flip(x, axis=axis)
    y = xp.cumsum(x, axis=axis)
    if n.attr("exclusive", 0):
        y = y - x
    return [xp.flip(y, axis=axis) if n.attr("reverse", 0) else y]


@converter("Tile")
def _tile(n):
    return [n.xp.tile(n.x(0), tuple(int(r) for r in n.static(1, "repeats")))]


@converter("Einsum")
def _einsum(n):
    return [n.xp.einsum(n.attr("equation"), *n.inputs)]


@converter("Size")
def _size(n):
    return [np.array(int(np.prod(np.shape(n.x(0)))), np.int64)]


_binary("LessOrEqual", lambda xp, a, b: xp.less_equal(a, b))
_binary("GreaterOrEqual", lambda xp, a, b: xp.greater_equal(a, b))
converter("Softsign")(lambda n: [n.x(0) / (1 + n.xp.abs(n.x(0)))])


@converter("Trilu")
def _trilu(n):
    k = int(n.static(1, "k").reshape(())) if n.x(1) is not None else 0
    f = n.xp.triu if n.attr("upper", 1) else n.xp.tril
    return [f(n.x(0), k)]


@converter("ReduceL2", "ReduceSumSquare", "ReduceLogSumExp")
def _reduce_more(n):
    xp, x = n.xp, n.x(0)
    axes = n.static(1, "axes") if n.x(1) is not None else n.attr("axes")
    axes = None if axes is None or len(axes) == 0 else tuple(int(a) for a in axes)
    keep = bool(n.attr("keepdims", 1))
    op = n.proto.op_type
    if op == "ReduceLogSumExp":
        m = xp.max(x, axis=axes, keepdims=True)
        r = xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m
        return [r if keep else xp.squeeze(r, axis=axes)]
    sq = xp.sum(x * x, axis=axes, keepdims=keep)
    return [xp.sqrt(sq) if op == "ReduceL2" else sq]


def _source_coords(n, out: int, size: int, scale: float) -> np.ndarray:
    """ONNX Resize: the input coordinate of each output coordinate along one axis."""
    mode = n.attr("coordinate_transformation_mode", "half_pixel")
    o = np.arange(out, dtype=np.float64)
    if mode == "asymmetric":
        return o / scale
    if mode == "align_corners":
        return o * (size - 1) / (out - 1) if out > 1 else np.zeros(out)
    if mode == "pytorch_half_pixel" and out == 1:
        return np.zeros(out)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        return (o + 0.5) / scale - 0.5
    raise UnsupportedOnnxOperatorError(f"Resize coordinate_transformation_mode={mode!r}",
                                       locate=False)


@converter("Resize", fold=False)
def _resize(n):
    x = n.x(0)
    shp = np.shape(x)
    scales = n.static(2, "scales") if n.x(2) is not None else None
    if scales is not None and scales.size == 0:
        scales = None
    if scales is None:
        sizes = [int(v) for v in n.static(3, "sizes")]
        scales = [o / i for o, i in zip(sizes, shp)]
    else:
        scales = [float(v) for v in scales]
        sizes = [int(np.floor(i * s)) for i, s in zip(shp, scales)]
    mode = n.attr("mode", "nearest")
    if mode not in ("nearest", "linear") or n.attr("antialias", 0) or n.attr("axes"):
        raise UnsupportedOnnxOperatorError(f"Resize mode={mode!r} (nearest and linear are "
                                           "supported, without antialias or axes)", locate=False)
    for ax, (size, out, sc) in enumerate(zip(shp, sizes, scales)):
        if size == out and sc == 1.0:
            continue
        c = _source_coords(n, out, size, sc)
        if mode == "nearest":
            rule = n.attr("nearest_mode", "round_prefer_floor")
            idx = {"floor": np.floor(c), "ceil": np.ceil(c),
                   "round_prefer_floor": np.ceil(c - 0.5),
                   "round_prefer_ceil": np.floor(c + 0.5)}[rule]
            x = pnp.take(x, np.clip(idx, 0, size - 1).astype(np.int64), axis=ax)
        else:
            c = np.clip(c, 0, size - 1)
            i0 = np.floor(c).astype(np.int64)
            i1 = np.minimum(i0 + 1, size - 1)
            w = (c - i0).reshape((-1,) + (1,) * (len(shp) - ax - 1)).astype(np.float32)
            x = pnp.take(x, i0, axis=ax) * (1 - w) + pnp.take(x, i1, axis=ax) * w
    return [x]


SUPPORTED = tuple(sorted(CONVERTERS))
__all__ = ["CONVERTERS", "SUPPORTED", "Node", "converter"]
