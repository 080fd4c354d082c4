"""ONNX rows (issue 25): models imported with ``plait.onnx.load`` run by ``plait.jit``
(native, and xla when jaxlib is installed) against onnxruntime on the CPU (its default session options: all graph optimizations,
intra-op threads on every core) and plait eagerly.

Models (``benchmarks/onnx_models.py``, built with ``onnx.helper``, random weights): a
ResNet-style CNN (conv-bn-relu stem, max pool, two residual blocks, global average
pool, gemm, softmax) on float32[B, 3, S, S] and a pre-LN transformer block (attention
with a causal mask, GELU MLP) on float32[B, T, D]. Skipped (a note row) without the
onnx and onnxruntime packages. ``python -m benchmarks.onnx [--quick|--smoke]``.
"""
from __future__ import annotations

import numpy as np

import plait
from benchmarks.common import Config, Row, check_row, first_outputs, measure, standalone
from benchmarks.harness import optional_import

RTOL = 1e-4


def _row(name: str, model_proto, x, cfg: Config) -> Row:
    ort = optional_import("onnxruntime")
    model = plait.onnx.load(model_proto)
    f = plait.jit(model)
    sess = ort.InferenceSession(model_proto.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    cands = {"plait.jit": lambda: f(model.params, x),
             "onnxruntime": lambda: sess.run(None, feed)[0]}
    if optional_import("jaxlib") is not None:
        fx = plait.jit(model, backend="xla")
        cands["plait xla"] = lambda: fx(model.params, x)
    if cfg.smoke or cfg.quick:
        cands["plait eager"] = lambda: model(model.params, x)
    outs, first = first_outputs(cands)
    outs = {k: (o[0] if isinstance(o, tuple) else o) for k, o in outs.items()}
    row = Row(name, first_call=first)
    if check_row(row, np.asarray(outs["onnxruntime"]), outs, RTOL, against="onnxruntime"):
        measure(row, cands, cfg)
    return row


def run(cfg: Config):
    if optional_import("onnx") is None or optional_import("onnxruntime") is None:
        return [Row("ONNX (onnx/onnxruntime not installed)", note="skipped")], ""
    from benchmarks.onnx_models import resnet, transformer
    rng = np.random.default_rng(0)
    b, s, w = (2, 16, 8) if cfg.smoke else (4, 32, 16) if cfg.quick else (16, 32, 16)
    bt, t, d, h = (2, 8, 16, 2) if cfg.smoke else (4, 32, 64, 4) if cfg.quick else \
        (8, 64, 128, 4)
    cnn = resnet(rng, batch=b, size=s, width=w)
    blk = transformer(rng, batch=bt, seq=t, dim=d, heads=h)
    rows = [
        _row(f"ONNX ResNet-style f32[{b},3,{s},{s}] width {w}", cnn,
             rng.normal(size=(b, 3, s, s)).astype(np.float32), cfg),
        _row(f"ONNX transformer block f32[{bt},{t},{d}] {h} heads", blk,
             rng.normal(size=(bt, t, d)).astype(np.float32), cfg),
    ]
    return rows, ""


if __name__ == "__main__":
    standalone(run)
