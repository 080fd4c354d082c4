"""plait.onnx on a small model exported from PyTorch, by both exporters.

Not collected by the suite (the file name does not start with ``test_``): CI fails on a
skipped test and deliberately does not install torch (large); it covers the importer
with onnx.helper-built models. Run it by hand with torch installed
(``pip install torch==2.13.0 onnxscript``)::

    python -m pytest tests/onnx_import/torch_export_check.py -q -n 0
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import plait  # noqa: E402
import plait.numpy as pnp  # noqa: E402


class _Net(torch.nn.Module):
    """Conv-BN-ReLU with a grouped residual conv, max pool, multi-head attention over the
    pixels, GELU, linear, LayerNorm, softmax."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.b2 = torch.nn.BatchNorm2d(8)
        self.att = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.fc, self.ln = torch.nn.Linear(8, 5), torch.nn.LayerNorm(5)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)) + y)
        t = torch.nn.functional.max_pool2d(y, 2).flatten(2).transpose(1, 2)
        a, _ = self.att(t, t, t, need_weights=False)
        z = torch.nn.functional.gelu(a.mean(1))
        return torch.softmax(self.ln(self.fc(z)), -1)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_pytorch_export_matches_onnxruntime_and_differentiates(exporter):
    torch.manual_seed(0)
    net = _Net().eval()
    x = torch.randn(2, 3, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":        # the torch.export-based exporter needs onnxscript
            pytest.importorskip("onnxscript")
            data = torch.onnx.export(net, (x,), dynamo=True, verbose=False) \
                .model_proto.SerializeToString()
        else:
            buf = io.BytesIO()
            torch.onnx.export(net, (x,), buf, dynamo=False, opset_version=17)
            data = buf.getvalue()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    model = plait.onnx.load(data)
    got = plait.jit(model)(model.params, x.numpy())
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    loss = lambda p: pnp.sum(model(p, x.numpy())[:, 0])   # noqa: E731
    g = plait.jit(plait.grad(loss))(model.params)
    g_eager = plait.grad(loss)(model.params)
    for k in model.params:
        np.testing.assert_allclose(np.asarray(g[k]), np.asarray(g_eager[k]), rtol=1e-4, atol=1e-6)
