"""PyTorch as a peer (docs/workloads.md, issue 20): eager and ``torch.compile``.

torch stays optional: :func:`torch_module` is None when it is not installed, and the
workloads then have no torch columns. It sets torch's intra-op thread count to the
number of threads plait's OpenMP loops use, so both systems get the same cores, and
gives torch's OpenMP runtime plait's wait policy.

Every torch program takes the same NumPy weights and inputs as the other systems
(float32). Convolutions run in NCHW logical order with the ``channels_last`` memory
format, i.e. NHWC in memory as the workloads specify; flattening before the dense
layers reads NHWC order so the dense weights are the NumPy ones. A ``torch.compile``
candidate that fails to compile or run does not fail its row: :func:`pair` marks it
:class:`MayFail`, and :func:`benchmarks.common.first_outputs` reports the error in the
row's note instead of timing it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from benchmarks import np_convnet as npc
from benchmarks.common import MayFail
from benchmarks.harness import optional_import


def torch_module():
    """``torch`` with as many intra-op threads as plait uses, or None when not installed.

    torch's OpenMP runtime gets plait's wait policy when torch is first imported here
    (threads that spin briefly, then sleep: :func:`plait.config.set_openmp_wait_defaults`);
    with libgomp's default long spin, W1's eager step took 0.2-0.45 s instead of 8-20 ms
    on 2 cores under load 11."""
    from plait.config import set_openmp_wait_defaults
    set_openmp_wait_defaults()
    torch = optional_import("torch")
    if torch is not None:
        from plait.backends.native.openmp import omp_threads
        torch.set_num_threads(omp_threads())
    return torch


def pair(torch, build: Callable[[Callable], Callable], *args) -> dict:
    """``{"torch": ..., "torch.compile": ...}`` candidates calling ``build(wrap)(*args)``,
    where ``build`` makes the program with ``wrap`` applied to its compiled part
    (the identity for eager, ``torch.compile`` for the other)."""
    eager = build(lambda f: f)
    compiled = build(torch.compile)
    return {"torch": lambda: eager(*args), "torch.compile": MayFail(lambda: compiled(*args))}


def grad_fn(torch, loss: Callable, wrap: Callable) -> Callable:
    """``g(params, *rest)``: the gradients of ``wrap(loss)`` with respect to the flat
    list of tensors ``params`` (``torch.autograd.grad``; the backward pass of a compiled
    loss is compiled too)."""
    f = wrap(loss)

    def g(params, *rest):
        return list(torch.autograd.grad(f(params, *rest), params))
    return g


def tensors(torch, arrays, requires_grad: bool = False) -> list:
    """NumPy arrays as float32 tensors (leaves of autograd when ``requires_grad``)."""
    return [torch.tensor(np.asarray(a, np.float32)).requires_grad_(requires_grad)
            for a in arrays]


def images(torch, x: np.ndarray):
    """An NHWC batch as an NCHW tensor in ``channels_last`` memory format (no copy)."""
    return torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)


# -- the convnets of W4 and W5 (a layer spec of benchmarks.np_convnet) --------------------

def convnet_params(torch, spec, params, requires_grad: bool = False) -> list:
    """The NumPy parameters (HWIO convolutions) as a flat list of tensors: convolution
    weights OIHW in ``channels_last`` format, the rest as they are."""
    out = []
    for layer, p in zip(spec, params):
        if p is None:
            continue
        w = torch.from_numpy(p[0])
        if layer[0] == "conv":
            w = w.permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last)
        else:
            w = w.clone()
        out += [w.requires_grad_(requires_grad),
                torch.from_numpy(p[1]).clone().requires_grad_(requires_grad)]
    return out


def convnet_forward(torch, spec, flat: list, x):
    """The network of ``spec`` on an NCHW (channels_last) batch."""
    F = torch.nn.functional
    it = iter(flat)
    for layer in spec:
        kind = layer[0]
        if kind == "conv":
            w, b = next(it), next(it)
            s, k = layer[1], layer[3]
            if layer[2] == "SAME":
                (t, bo), (le, r) = (npc.same_pads(n, k, s) for n in x.shape[2:])
                if (t, le) != (bo, r):
                    x, pad = F.pad(x, (le, r, t, bo)), (0, 0)
                else:
                    pad = (t, le)
            else:
                pad = (0, 0)
            x = F.conv2d(x, w, b, stride=s, padding=pad)
        elif kind == "relu":
            x = F.relu(x)
        elif kind == "pool":
            x = F.max_pool2d(x, 2)
        elif kind == "flatten":
            x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)   # NHWC order, as NumPy's
        elif kind == "dense":
            w, b = next(it), next(it)
            x = torch.addmm(b, x, w)
        else:
            x = x.mean(dim=(2, 3))
    return x


def convnet_to_spec(spec, flat) -> list:
    """A flat list of parameter-shaped tensors back to the spec's NumPy layout (HWIO)."""
    it = iter(flat)
    out = []
    for layer in spec:
        if layer[0] not in ("conv", "dense"):
            out.append(None)
            continue
        w, b = (np.asarray(next(it).detach()), np.asarray(next(it).detach()))
        out.append((w.transpose(2, 3, 1, 0) if layer[0] == "conv" else w, b))
    return out
