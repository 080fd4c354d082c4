"""ONNX import: ``plait.onnx.load(path_or_model)`` -> a jittable, differentiable model.

Needs the optional ``onnx`` package (``pip install plait[onnx]``), imported only when a
model is loaded. The returned :class:`OnnxModel` is called as ``model(params, *inputs)``:
``params`` (``model.params``, a dict of the float initializers) is a pytree, so
``plait.grad`` fine-tunes the weights and ``jit``/``vmap`` apply as to any function.
Integer initializers, ``Constant`` nodes and shape arithmetic stay static NumPy values.
Operators: :data:`plait.onnx.ops.SUPPORTED` (one table, :data:`plait.onnx.ops.CONVERTERS`);
a model using others is refused with every unsupported operator named at once.
"""
import os as _os
from typing import Any as _Any

import numpy as _np

from plait.errors import OnnxImportError as _OnnxImportError
from plait.errors import UnsupportedOnnxOperatorError as _UnsupportedOnnxOperatorError

__all__ = ["load", "OnnxModel", "SUPPORTED"]


def _onnx():
    try:
        import onnx
    except ImportError:
        raise _OnnxImportError("plait.onnx needs the onnx package: pip install 'plait[onnx]'",
                              locate=False) from None
    return onnx


def __getattr__(name: str):
    if name == "SUPPORTED":
        from plait.onnx.ops import SUPPORTED
        return SUPPORTED
    raise AttributeError(name)


class OnnxModel:
    """An imported ONNX graph: ``model(params, *inputs)`` runs it with plait.

    ``params``: dict of weights (float initializers); ``input_names``/``output_names``:
    the graph's; one output is returned as an array, several as a tuple."""

    def __init__(self, graph, params: dict, consts: dict, attrs: list, opset: int):
        self.graph = graph
        self.opset = opset
        self.params = params
        self._consts = consts
        self._attrs = attrs
        # the loaded weights: read as constants where an operator needs a static operand
        # (Resize scales, Pad values, ...), so those uses do not follow ``params``
        self._initial = {k: v for k, v in params.items()}
        inits = set(params) | set(consts)
        self.input_names = tuple(i.name for i in graph.input if i.name not in inits)
        self.output_names = tuple(o.name for o in graph.output)

    def __call__(self, params: dict, *inputs: _Any):
        from plait.onnx.ops import CONVERTERS, Node
        import plait.numpy as pnp
        if len(inputs) != len(self.input_names):
            raise _OnnxImportError(f"the model takes {len(self.input_names)} inputs "
                                  f"({', '.join(self.input_names)}), got {len(inputs)}")
        missing = sorted(set(self.params) - set(params))
        if missing:
            raise _OnnxImportError(f"params lacks the weights {missing[:5]}")
        env: dict = dict(self._consts)
        env.update({k: pnp.asarray(v) for k, v in params.items()})
        env.update({n: pnp.asarray(x) for n, x in zip(self.input_names, inputs)})
        for node, attrs in zip(self.graph.node, self._attrs):
            fn, fold = CONVERTERS[node.op_type]
            ins = [env[i] if i else None for i in node.input]
            static = all(v is None or isinstance(v, _np.ndarray) for v in ins)
            outs = fn(Node(node, ins, attrs, _np if (fold and static) else pnp, self.opset,
                           self._initial))
            for name, v in zip(node.output, outs):
                if name:
                    env[name] = v
        outs = [env[n] for n in self.output_names]
        outs = [pnp.asarray(o) if isinstance(o, _np.ndarray) else o for o in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)


def load(model: _Any) -> OnnxModel:
    """Import an ONNX model (a path, serialized bytes or an ``onnx.ModelProto``)."""
    onnx = _onnx()
    from onnx import helper, numpy_helper
    from plait.onnx.ops import CONVERTERS
    if isinstance(model, (str, _os.PathLike)):
        model = onnx.load(_os.fspath(model))
    elif isinstance(model, (bytes, bytearray)):
        model = onnx.load_from_string(bytes(model))
    if not isinstance(model, onnx.ModelProto):
        raise _OnnxImportError(f"plait.onnx.load takes a path, bytes or an onnx.ModelProto, "
                              f"got {type(model).__name__}")
    g = model.graph
    unsupported: dict = {}
    for node in g.node:
        if node.op_type not in CONVERTERS or node.domain not in ("", "ai.onnx"):
            unsupported[node.op_type] = unsupported.get(node.op_type, 0) + 1
    if unsupported:
        listed = ", ".join(f"{k} (x{v})" for k, v in sorted(unsupported.items()))
        raise _UnsupportedOnnxOperatorError(
            f"the ONNX model uses operators plait.onnx does not convert: {listed}; "
            f"supported: {', '.join(sorted(CONVERTERS))}")
    params, consts = {}, {}
    for t in g.initializer:
        a = _np.array(numpy_helper.to_array(t))   # a writable copy (to_array views the proto)
        (params if a.dtype.kind == "f" else consts)[t.name] = a
    attrs = [{a.name: helper.get_attribute_value(a) for a in node.attribute} for node in g.node]
    for d in attrs:
        for k, v in d.items():
            if isinstance(v, bytes):
                d[k] = v.decode()
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                d[k] = [x.decode() for x in v]
    opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")],
                default=13)
    return OnnxModel(g, params, consts, attrs, opset)
