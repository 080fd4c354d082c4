"""Small ONNX models built with onnx.helper (benchmarks/onnx.py and tests/onnx_import):
a ResNet-style CNN and a transformer block, with random weights."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 20


class _Builder:
    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits = [], []
        self.n = 0

    def name(self, base="t"):
        self.n += 1
        return f"{base}{self.n}"

    def weight(self, shape, scale=None, positive=False):
        scale = scale if scale is not None else 1.0 / np.sqrt(max(1, np.prod(shape[1:])))
        a = self.rng.normal(size=shape) * scale
        if positive:
            a = np.abs(a) + 0.5
        nm = self.name("w")
        self.inits.append(numpy_helper.from_array(a.astype(np.float32), nm))
        return nm

    def const(self, value, dtype=np.int64):
        nm = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), nm))
        return nm

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, inputs, outputs):
        g = helper.make_graph(self.nodes, "g", inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 9
        return m


def _conv_bn(b, x, cin, cout, k=3, stride=1, relu=True):
    w = b.weight((cout, cin, k, k))
    y = b.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
             pads=[k // 2] * 4)
    y = b.op("BatchNormalization", [y, b.weight((cout,), positive=True), b.weight((cout,), 0.1),
                                    b.weight((cout,), 0.1), b.weight((cout,), positive=True)],
             epsilon=1e-5)
    return b.op("Relu", [y]) if relu else y


def resnet(rng, batch=2, size=16, width=8, classes=10):
    """conv-bn-relu stem, max pool, two residual blocks (one strided with a 1x1 projection),
    global average pool, flatten, gemm, softmax."""
    b = _Builder(rng)
    x = "image"
    y = _conv_bn(b, x, 3, width)
    y = b.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    h = _conv_bn(b, y, width, width)
    h = _conv_bn(b, h, width, width, relu=False)
    y = b.op("Relu", [b.op("Add", [h, y])])
    h = _conv_bn(b, y, width, 2 * width, stride=2)
    h = _conv_bn(b, h, 2 * width, 2 * width, relu=False)
    sc = _conv_bn(b, y, width, 2 * width, k=1, stride=2, relu=False)
    y = b.op("Relu", [b.op("Add", [h, sc])])
    y = b.op("AveragePool", [y], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    y = b.op("GlobalAveragePool", [y])
    y = b.op("Flatten", [y], axis=1)
    y = b.op("Gemm", [y, b.weight((classes, 2 * width)), b.weight((classes,), 0.1)], transB=1)
    y = b.op("Softmax", [y], axis=-1)
    return b.model([helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, 3, size, size])],
                   [helper.make_tensor_value_info(y, TensorProto.FLOAT, [batch, classes])])


def transformer(rng, batch=2, seq=8, dim=16, heads=2):
    """Pre-LN transformer block: LayerNormalization, Q/K/V MatMuls, heads by Reshape and
    Transpose, scores / Sqrt(d), a causal mask by Where, Softmax, output projection,
    residual Add; MLP with Erf-form GELU and a Gelu op; Slice, Gather, Concat, Shape,
    Squeeze, Unsqueeze on the way."""
    b = _Builder(rng)
    x = "tokens"
    dh = dim // heads
    ln = b.op("LayerNormalization", [x, b.weight((dim,), positive=True), b.weight((dim,), 0.1)],
              axis=-1, epsilon=1e-5)

    def heads_of(t):
        t = b.op("Reshape", [t, b.const([batch, seq, heads, dh])])
        return b.op("Transpose", [t], perm=[0, 2, 1, 3])
    q = heads_of(b.op("MatMul", [ln, b.weight((dim, dim))]))
    k = heads_of(b.op("MatMul", [ln, b.weight((dim, dim))]))
    v = heads_of(b.op("MatMul", [ln, b.weight((dim, dim))]))
    kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
    s = b.op("Div", [b.op("MatMul", [q, kt]),
                     b.op("Sqrt", [b.const(float(dh), np.float32)])])
    mask = np.tril(np.ones((seq, seq), bool))
    s = b.op("Where", [b.const(mask, np.bool_), s, b.const(-1e9, np.float32)])
    p = b.op("Softmax", [s], axis=-1)
    o = b.op("Transpose", [b.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    shape = b.op("Shape", [x])
    o = b.op("Reshape", [o, shape])
    x1 = b.op("Add", [x, b.op("MatMul", [o, b.weight((dim, dim))])])
    ln2 = b.op("LayerNormalization", [x1, b.weight((dim,), positive=True)], axis=-1)
    hdn = b.op("Add", [b.op("MatMul", [ln2, b.weight((dim, 2 * dim))]), b.weight((2 * dim,), 0.1)])
    erf = b.op("Erf", [b.op("Div", [hdn, b.const(np.sqrt(2.0), np.float32)])])
    g1 = b.op("Mul", [b.op("Mul", [hdn, b.op("Add", [erf, b.const(1.0, np.float32)])]),
                      b.const(0.5, np.float32)])
    half = b.op("Slice", [g1, b.const([0]), b.const([dim]), b.const([2])])      # first half
    rest = b.op("Slice", [g1, b.const([dim]), b.const([2 * dim]), b.const([2])])
    g2 = b.op("Gelu", [b.op("Sigmoid", [rest])], approximate="tanh")
    mlp = b.op("Concat", [half, b.op("Tanh", [g2])], axis=-1)
    x2 = b.op("Add", [x1, b.op("MatMul", [mlp, b.weight((2 * dim, dim))])])
    first = b.op("Gather", [x2, b.const(0)], axis=1)                 # the first token
    pooled = b.op("Squeeze", [b.op("Unsqueeze", [first, b.const([1])]), b.const([1])])
    pw = b.op("Pow", [pooled, b.const(2.0, np.float32)])
    red = b.op("ReduceMean", [pw, b.const([-1])], keepdims=1)
    return b.model([helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, seq, dim])],
                   [helper.make_tensor_value_info(x2, TensorProto.FLOAT, [batch, seq, dim]),
                    helper.make_tensor_value_info(red, TensorProto.FLOAT, [batch, 1])])
