"""NumPy reference convnet layers with hand-written backward passes (NHWC, HWIO).

The op-by-op NumPy peer of W4 and W5: convolution by im2col and one BLAS matmul,
2x2 max pooling, ReLU, dense layers, global average pooling and softmax
cross-entropy; each ``*_fwd`` returns the output and what its ``*_bwd`` needs.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def same_pads(n: int, k: int, s: int) -> tuple[int, int]:
    """XLA/JAX ``SAME`` padding ``(low, high)`` for size ``n``, kernel ``k``, stride ``s``."""
    out = -(-n // s)
    total = max((out - 1) * s + k - n, 0)
    return total // 2, total - total // 2


def conv_fwd(x, w, b, stride: int = 1, padding: str = "SAME"):
    """``conv(x, w) + b``; ``x`` NHWC, ``w`` HWIO."""
    kh, kw, cin, cout = w.shape
    n, h, wd, _ = x.shape
    if padding == "SAME":
        ph, pw = same_pads(h, kh, stride), same_pads(wd, kw, stride)
    else:
        ph, pw = (0, 0), (0, 0)
    xp = np.pad(x, ((0, 0), ph, pw, (0, 0))) if any(ph + pw) else x
    win = sliding_window_view(xp, (kh, kw), axis=(1, 2))[:, ::stride, ::stride]
    ho, wo = win.shape[1], win.shape[2]
    cols = win.transpose(0, 1, 2, 4, 5, 3).reshape(n * ho * wo, kh * kw * cin)
    y = (cols @ w.reshape(-1, cout)).reshape(n, ho, wo, cout) + b
    return y, (cols, xp.shape, ph, pw, w, stride)


def conv_bwd(gy, cache):
    """``(gx, gw, gb)`` for ``conv_fwd``."""
    cols, xp_shape, ph, pw, w, s = cache
    kh, kw, cin, cout = w.shape
    n, ho, wo, _ = gy.shape
    g2 = gy.reshape(-1, cout)
    gw = (cols.T @ g2).reshape(w.shape)
    gb = g2.sum(axis=0)
    gcols = (g2 @ w.reshape(-1, cout).T).reshape(n, ho, wo, kh, kw, cin)
    gxp = np.zeros(xp_shape, gy.dtype)
    for i in range(kh):
        for j in range(kw):
            gxp[:, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s] += gcols[:, :, :, i, j]
    gx = gxp[:, ph[0]:xp_shape[1] - ph[1], pw[0]:xp_shape[2] - pw[1]]
    return gx, gw, gb


def relu_fwd(x):
    return np.maximum(x, 0), x


def relu_bwd(gy, x):
    return gy * (x > 0)


def maxpool_fwd(x):
    """2x2 max pooling, stride 2 (even sizes)."""
    n, h, w, c = x.shape
    r = x.reshape(n, h // 2, 2, w // 2, 2, c)
    y = r.max(axis=(2, 4))
    return y, (r, y)


def maxpool_bwd(gy, cache):
    r, y = cache
    mask = r == y[:, :, None, :, None, :]
    g = mask * gy[:, :, None, :, None, :]
    n, a, _, bb, _, c = r.shape
    return g.reshape(n, 2 * a, 2 * bb, c)


def dense_fwd(x, w, b):
    return x @ w + b, (x, w)


def dense_bwd(gy, cache):
    x, w = cache
    return gy @ w.T, x.T @ gy, gy.sum(axis=0)


def softmax_xent(logits, labels_onehot):
    """Mean softmax cross-entropy and its gradient with respect to the logits."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=-1, keepdims=True)
    n = logits.shape[0]
    loss = -np.sum(labels_onehot * (z - np.log(s))) / n
    return loss, (e / s - labels_onehot) / np.float32(n)


# -- sequential models described by a layer spec -----------------------------------------
# A spec is a list of ("conv", stride, padding) | ("relu",) | ("pool",) | ("flatten",) |
# ("dense",) | ("gap",); params is a list aligned with it ((W, b) or None).

def init_params(spec, in_shape, seed: int = 0, out_channels=None):
    """He-normal weights (``normal * sqrt(2 / fan_in)``) and zero biases, float32.

    ``out_channels`` lists each conv/dense layer's width in order."""
    rng = np.random.default_rng(seed)
    widths = iter(out_channels)
    shape = tuple(in_shape)
    params = []
    for layer in spec:
        kind = layer[0]
        if kind == "conv":
            k, s, pad = layer[3], layer[1], layer[2]
            cout = next(widths)
            fan_in = k * k * shape[-1]
            w = (rng.standard_normal((k, k, shape[-1], cout)) * np.sqrt(2 / fan_in))
            params.append((w.astype(np.float32), np.zeros(cout, np.float32)))
            h = -(-shape[1] // s) if pad == "SAME" else (shape[1] - k) // s + 1
            shape = (shape[0], h, h, cout)
        elif kind == "dense":
            cout = next(widths)
            w = rng.standard_normal((shape[-1], cout)) * np.sqrt(2 / shape[-1])
            params.append((w.astype(np.float32), np.zeros(cout, np.float32)))
            shape = (shape[0], cout)
        else:
            params.append(None)
            if kind == "pool":
                shape = (shape[0], shape[1] // 2, shape[2] // 2, shape[3])
            elif kind == "flatten":
                shape = (shape[0], int(np.prod(shape[1:])))
            elif kind == "gap":
                shape = (shape[0], shape[3])
    return params


def forward(spec, params, x):
    """Output and the per-layer caches for ``backward``."""
    caches = []
    for layer, p in zip(spec, params):
        kind = layer[0]
        if kind == "conv":
            x, c = conv_fwd(x, p[0], p[1], layer[1], layer[2])
        elif kind == "relu":
            x, c = relu_fwd(x)
        elif kind == "pool":
            x, c = maxpool_fwd(x)
        elif kind == "flatten":
            c = x.shape
            x = x.reshape(x.shape[0], -1)
        elif kind == "dense":
            x, c = dense_fwd(x, p[0], p[1])
        else:
            c = x.shape
            x = x.mean(axis=(1, 2))
        caches.append(c)
    return x, caches


def backward(spec, caches, gy):
    """Parameter gradients (aligned with the spec; None for parameterless layers)."""
    grads = [None] * len(spec)
    for i in range(len(spec) - 1, -1, -1):
        kind, c = spec[i][0], caches[i]
        if kind == "conv":
            gy, gw, gb = conv_bwd(gy, c)
            grads[i] = (gw, gb)
        elif kind == "relu":
            gy = relu_bwd(gy, c)
        elif kind == "pool":
            gy = maxpool_bwd(gy, c)
        elif kind == "flatten":
            gy = gy.reshape(c)
        elif kind == "dense":
            gy, gw, gb = dense_bwd(gy, c)
            grads[i] = (gw, gb)
        else:
            n, h, w, ch = c
            gy = np.broadcast_to(gy[:, None, None, :] / np.float32(h * w), c)
    return grads


def jax_forward(jax, spec, params, x):
    """The same network with ``jax.lax`` (NHWC, HWIO)."""
    jnp = jax.numpy
    for layer, p in zip(spec, params):
        kind = layer[0]
        if kind == "conv":
            x = jax.lax.conv_general_dilated(x, p[0], (layer[1],) * 2, layer[2],
                                             dimension_numbers=("NHWC", "HWIO", "NHWC")) + p[1]
        elif kind == "relu":
            x = jnp.maximum(x, 0)
        elif kind == "pool":
            x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                      "VALID")
        elif kind == "flatten":
            x = x.reshape(x.shape[0], -1)
        elif kind == "dense":
            x = x @ p[0] + p[1]
        else:
            x = x.mean(axis=(1, 2))
    return x


def to_stax(spec, params):
    """The same parameters in ``plait.example_libraries.stax`` layout (conv biases 4-D)."""
    out = []
    for layer, p in zip(spec, params):
        if layer[0] == "conv":
            out.append((p[0], p[1].reshape(1, 1, 1, -1)))
        elif layer[0] == "dense":
            out.append(p)
        else:
            out.append(())
    return out


def from_stax(spec, grads):
    """Gradients in stax layout back to the spec layout."""
    return [(g[0], g[1].reshape(-1)) if layer[0] == "conv" else tuple(g) if layer[0] == "dense"
            else None for layer, g in zip(spec, grads)]
