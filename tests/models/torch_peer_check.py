"""The benchmark suite's PyTorch peer (benchmarks/torch_peer.py) computes the workloads'
numbers: its convnets against the NumPy reference layers, gradients included, and the
suite's W2 row with torch and torch.compile columns.

Not collected by the suite (the file name does not start with ``test_``): CI fails on a
skipped test and deliberately does not install torch (large). Run it by hand with torch
installed::

    python -m pytest tests/models/torch_peer_check.py -q -n 0
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import np_convnet as npc

torch = pytest.importorskip("torch")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env():
    path = os.pathsep.join([os.path.join(ROOT, "src"), ROOT, os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, PYTHONPATH=path)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _convnet_case(which):
    if which == "w4":
        from benchmarks import w4_allcnn as w
        sp, shape, widths = w.spec(), (2, 32, 32, 3), w.widths()
    else:
        from benchmarks import w5_vgg19 as w
        sp, shape, widths = w.spec(), (2, 64, 64, 3), w.widths(16, 10)   # 2x2 at flatten
    params = npc.init_params(sp, shape, seed=0, out_channels=widths)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    return sp, params, x


@pytest.mark.parametrize("which", ["w4", "w5"])
def test_torch_convnet_matches_numpy_layers(which):
    """All-CNN-C (strided SAME convolutions with uneven padding, VALID, global average
    pooling) and VGG19 (pooling, NHWC flattening, dense layers): forward and parameter
    gradients of ``sum(out)`` against NumPy's hand-written layers, in float64."""
    from benchmarks import torch_peer
    sp, params, x = _convnet_case(which)
    p64 = [None if p is None else (p[0].astype(np.float64), p[1].astype(np.float64))
           for p in params]
    want, caches = npc.forward(sp, p64, x.astype(np.float64))
    want_grads = npc.backward(sp, caches, np.ones_like(want))
    flat = torch_peer.convnet_params(torch, sp, params, requires_grad=True)
    flat = [t.detach().double().requires_grad_(True) for t in flat]
    tx = torch_peer.images(torch, x).double()
    got = torch_peer.convnet_forward(torch, sp, flat, tx)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-9, atol=1e-9)
    g = torch_peer.grad_fn(torch, lambda p, x: torch.sum(
        torch_peer.convnet_forward(torch, sp, p, x)), lambda f: f)(flat, tx)
    got_grads = torch_peer.convnet_to_spec(sp, g)
    for a, b in zip(got_grads, want_grads, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a[0], b[0], rtol=1e-8, atol=1e-8)
            np.testing.assert_allclose(a[1], b[1], rtol=1e-8, atol=1e-8)


def test_benchmark_runner_with_torch():
    """With torch installed, W2 has torch (eager) and torch.compile columns, checked
    against the NumPy reference like every system (torch is optional: not in CI)."""
    r = subprocess.run([sys.executable, "-m", "benchmarks", "--smoke", "--backend", "interp",
                        "--only", "w2"], cwd=ROOT, env=_env(), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "threads, as plait)" in r.stdout
    head = _cells(next(line for line in r.stdout.splitlines() if line.startswith("| workload")))
    row = dict(zip(head, _cells(next(line for line in r.stdout.splitlines()
                                     if line.startswith("| W2")))))
    assert row["torch"].endswith("x)") and row["check"].startswith("rtol"), row
    # torch.compile is timed, or its failure is named in the note (never a failed row)
    assert row.get("torch.compile", "-").endswith("x)") or "torch.compile failed" in row["note"]
