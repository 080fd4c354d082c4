"""plait.onnx.load: models built with onnx.helper, compared with onnxruntime, run under
jit, grad (weights as a pytree) and vmap."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402
from plait.errors import OnnxImportError, UnsupportedOnnxOperatorError  # noqa: E402
from plait.test_util import check_grads  # noqa: E402

from benchmarks.onnx_models import resnet, transformer  # noqa: E402

MODELS = {"resnet": (resnet, dict(batch=2, size=8, width=4), (2, 3, 8, 8)),
          "transformer": (transformer, dict(batch=2, seq=4, dim=8, heads=2), (2, 4, 8))}


def _setup(name):
    make, kw, shape = MODELS[name]
    rng = np.random.default_rng(0)
    m = make(rng, **kw)
    onnx.checker.check_model(m)
    x = rng.normal(size=shape).astype(np.float32)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {sess.get_inputs()[0].name: x})
    return m, x, want


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("name", list(MODELS))
def test_matches_onnxruntime_eager_jit_vmap(name, tmp_path):
    m, x, want = _setup(name)
    path = tmp_path / "model.onnx"
    onnx.save(m, str(path))
    model = plait.onnx.load(path)
    assert model.input_names == (m.graph.input[0].name,)
    runs = [model(model.params, x), plait.jit(model)(model.params, x)]
    try:
        import jaxlib  # noqa: F401
        runs.append(plait.jit(model, backend="xla")(model.params, x))
    except ImportError:
        pass
    for got in runs:
        for g, w in zip(_tuple(got), want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-5)
    xs = np.stack([x, 0.5 * x, -x])
    got = plait.jit(plait.vmap(model, in_axes=(None, 0)))(model.params, xs)
    for b in range(3):
        loop = _tuple(model(model.params, xs[b]))
        for g, w in zip(_tuple(got), loop):
            np.testing.assert_allclose(np.asarray(g)[b], np.asarray(w), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", list(MODELS))
def test_grad_of_the_weights(name):
    m, x, _ = _setup(name)
    model = plait.onnx.load(m.SerializeToString())

    def loss(params, x):
        outs = _tuple(model(params, x))
        return sum(pnp.sum(pnp.sin(3.0 * o)) for o in outs)
    p64 = {k: v.astype(np.float64) for k, v in model.params.items()}
    x64 = x.astype(np.float64)
    g_eager = plait.grad(loss)(p64, x64)
    g_jit = plait.jit(plait.grad(loss))(p64, x64)
    for k in p64:
        np.testing.assert_allclose(np.asarray(g_jit[k]), np.asarray(g_eager[k]),
                                   rtol=1e-9, atol=1e-9)
    # the weight tensors (scalar initializers are constants such as a Pow exponent, whose
    # derivative log(base) is NaN at negative bases)
    w = {k: v for k, v in p64.items() if v.ndim}
    check_grads(lambda w: loss({**p64, **w}, x64), (w,), order=1, modes=("rev",))


def test_unsupported_operators_are_reported_at_once():
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("NonMaxSuppression", ["a"], ["b"]),
             helper.make_node("TopK", ["b"], ["c", "d"]),
             helper.make_node("TopK", ["c"], ["e", "f"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3])])
    m = helper.make_model(g)
    with pytest.raises(UnsupportedOnnxOperatorError,
                       match=r"NonMaxSuppression \(x1\), TopK \(x2\)"):
        plait.onnx.load(m)
    with pytest.raises(OnnxImportError, match="takes a path, bytes or an onnx.ModelProto"):
        plait.onnx.load(3)


def test_dynamic_shape_input_is_a_clear_error():
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                                       helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    model = plait.onnx.load(helper.make_model(g))
    with pytest.raises(OnnxImportError, match="its shape \\(input 1\\) must be known"):
        plait.jit(model)(model.params, np.ones(4, np.float32), np.array([2, 2]))


def test_operator_zoo_matches_onnxruntime():
    """The converters the two models do not reach, in one small model."""
    from onnx import TensorProto, helper, numpy_helper
    from benchmarks.onnx_models import OPSET
    nodes, inits, outs = [], [], []

    def const(name, v, dt=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(v, dt), name))
        return name

    def node(op, ins, out=None, **kw):
        out = out or f"{op.lower()}{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [out], **kw))
        return out

    def output(name):
        outs.append(name)
    a = node("Abs", ["x"])
    a1 = node("Add", [a, const("one", 1.0)])
    e = node("Exp", [node("Neg", [a])])
    lg = node("Log", [a1])
    rc = node("Reciprocal", [a1])
    for t in (e, lg, rc, node("Floor", ["x"]), node("Ceil", ["x"]),
              node("LeakyRelu", ["x"], alpha=0.2),
              node("Clip", ["x", const("lo", -0.5), const("hi", 0.7)]),
              node("Max", ["x", e, lg]), node("Min", ["x", rc]), node("Sum", ["x", e, rc]),
              node("Mean", ["x", lg]), node("Dropout", ["x"]), node("Identity", ["x"]),
              node("Tanh", ["x"]), node("Sigmoid", ["x"]), node("Relu", ["x"]),
              node("Sqrt", [a1]), node("Pow", [a1, const("p", 1.5)]),
              node("Erf", ["x"]), node("Gelu", ["x"]),
              node("Where", [node("And", [node("Greater", ["x", const("z", 0.0)]),
                                          node("Less", ["x", const("o2", 1.0)])]),
                             "x", e]),
              node("Cast", [node("Or", [node("Not", [node("Equal", [node("Floor", ["x"]),
                                                                    node("Ceil", ["x"])])]),
                                        node("Less", ["x", const("m1", -1.0)])])],
                   to=TensorProto.FLOAT),
              node("Mul", ["x", node("ConstantOfShape", [node("Shape", ["x"])],
                                     value=numpy_helper.from_array(np.array([2.0], np.float32)))]),
              node("Add", ["x", node("Expand", [node("Cast", [node("Range", [
                  const("r0", 0, np.int64), const("r1", 4, np.int64), const("r2", 1, np.int64)])],
                  to=TensorProto.FLOAT), const("shp", [3, 4], np.int64)])]),
              node("Add", ["x", node("Constant", [], value=numpy_helper.from_array(
                  np.arange(4, dtype=np.float32)))])):
        output(t)
    for op in ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceMean"):
        output(node(op, ["x", const(f"ax_{op}", [1], np.int64)], keepdims=0))
    r4 = node("Reshape", ["x", const("s4", [1, 3, 2, 2], np.int64)])
    output(node("GlobalMaxPool", [r4]))
    output(node("Flatten", [r4], axis=2))
    output(node("Squeeze", [node("Unsqueeze", ["x", const("u0", [0], np.int64)]),
                            const("u1", [0], np.int64)]))
    output(node("Gemm", ["x", "x", const("c", np.ones((4, 4)))], transA=1, alpha=0.5, beta=2.0))
    output(node("Slice", ["x", const("st", [-1, 3], np.int64), const("en", [-4, 0], np.int64),
                          const("axs", [0, 1], np.int64), const("sp", [-1, -2], np.int64)]))
    output(node("Gather", ["x", const("gi", [[2, -1], [0, 1]], np.int64)], axis=1))
    g = helper.make_graph(
        nodes, "zoo", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 9
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})
    model = plait.onnx.load(m)
    for got in (model(model.params, x), plait.jit(model)(model.params, x)):
        assert len(got) == len(want)
        for name, g_, w in zip(outs, got, want):
            np.testing.assert_allclose(np.asarray(g_), w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_opset_11_softmax_and_clip_semantics():
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=1),
             helper.make_node("Clip", ["x"], ["c"], min=-0.3, max=0.4)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     [2, 3, 4])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                           for o in ("s", "c")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 10)])
    m.ir_version = 6
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    model = plait.onnx.load(m)
    for g_, w in zip(model(model.params, x), sess.run(None, {"x": x})):
        np.testing.assert_allclose(np.asarray(g_), w, rtol=1e-6, atol=1e-7)


def test_vision_and_sequence_operators_match_onnxruntime():
    """Pad, Split, ConvTranspose, InstanceNormalization, the hard/soft activations,
    ArgMax, CumSum, Tile, Einsum, Size: one small model, eager and jit."""
    from onnx import TensorProto, helper, numpy_helper
    from benchmarks.onnx_models import OPSET
    rng = np.random.default_rng(0)
    nodes, inits, outs = [], [], []

    def const(name, v, dt=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(v, dt), name))
        return name

    def node(op, ins, n_out=1, **kw):
        names = [f"{op.lower()}{len(nodes)}_{i}" for i in range(n_out)]
        nodes.append(helper.make_node(op, ins, names, **kw))
        return names if n_out > 1 else names[0]
    x = "x"                                                        # [2, 3, 5, 5]
    for op in ("Softplus", "Elu", "Selu", "HardSigmoid", "HardSwish", "Sin", "Cos", "Sign"):
        outs.append(node(op, [x]))
    outs.append(node("PRelu", [x, const("slope", rng.uniform(0, 1, (3, 1, 1)))]))
    outs.append(node("InstanceNormalization", [x, const("is", rng.uniform(0.5, 1, 3)),
                                               const("ib", rng.normal(size=3))]))
    outs.append(node("ConvTranspose", [x, const("wt", rng.normal(size=(3, 4, 3, 3))),
                                       const("bt", rng.normal(size=4))],
                     strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0]))
    for mode in ("constant", "reflect", "edge"):
        extra = [const("pv", 1.5)] if mode == "constant" else []
        outs.append(node("Pad", [x, const(f"pads_{mode}", [0, 0, 1, 2, 0, 0, 2, 1], np.int64)]
                         + extra, mode=mode))
    outs += node("Split", [x, const("sp", [1, 2], np.int64)], n_out=2, axis=1)
    outs.append(node("Cast", [node("ArgMax", [x], axis=2, keepdims=0)], to=TensorProto.FLOAT))
    outs.append(node("CumSum", [x, const("ca", 3, np.int64)], exclusive=1, reverse=1))
    outs.append(node("Tile", [x, const("rep", [1, 2, 1, 1], np.int64)]))
    outs.append(node("Einsum", [x, x], equation="nchw,ncwv->nhv"))
    outs.append(node("Mul", [x, node("Cast", [node("Size", [x])], to=TensorProto.FLOAT)]))
    outs.append(node("Softsign", [x]))
    outs.append(node("Trilu", [x, const("tk", 1, np.int64)], upper=0))
    outs.append(node("Cast", [node("LessOrEqual", [x, node("Neg", [x])])], to=TensorProto.FLOAT))
    for op in ("ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"):
        outs.append(node(op, [x, const(f"ra_{op}", [1, 3], np.int64)], keepdims=0))
    for mode, ctm, extra in (("nearest", "half_pixel", {}),
                             ("nearest", "asymmetric", {"nearest_mode": "floor"}),
                             ("linear", "half_pixel", {}), ("linear", "align_corners", {}),
                             ("linear", "pytorch_half_pixel", {})):
        outs.append(node("Resize", [x, "", const(f"sc_{mode}_{ctm}", [1, 1, 2, 1.6])],
                         mode=mode, coordinate_transformation_mode=ctm, **extra))
    outs.append(node("Resize", [x, "", "", const("rs", [2, 3, 3, 7], np.int64)], mode="linear"))
    g = helper.make_graph(
        nodes, "zoo2", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 3, 5, 5])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 9
    xv = rng.normal(size=(2, 3, 5, 5)).astype(np.float32)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": xv})
    model = plait.onnx.load(m)
    for got in (model(model.params, xv), plait.jit(model)(model.params, xv)):
        assert len(got) == len(want)
        for name, g_, w in zip(outs, got, want):
            np.testing.assert_allclose(np.asarray(g_), w, rtol=2e-5, atol=2e-5, err_msg=name)
