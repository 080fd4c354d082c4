"""NumPy oracles for the ``plait.lax`` primitives the fuzzer calls directly.

Each is written from the primitive's documented semantics (XLA's), independently of
plait's own ``impl`` rules: integer remainder truncates, shifts by a negative or
too-large amount give 0 (or the sign for arithmetic right shifts), population count
counts the two's-complement bits, ``cummax``/``cummin`` propagate NaN, and windows
outside the padded operand hold the reduction's identity.
"""
from __future__ import annotations

import numpy as np


def rem(x, y):
    """``lax.rem``: C's ``%``/``fmod`` (sign of the dividend); integer ``x % 0`` is 0, as
    plait documents it (NumPy's ``fmod``; it keeps ``x == y * div(x, y) + rem(x, y)``
    false only where ``div`` is also defined as 0)."""
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind == "f":
        with np.errstate(all="ignore"):
            return np.fmod(x, y)
    out = np.zeros(np.broadcast(x, y).shape, x.dtype)
    xb, yb = np.broadcast_arrays(x, y)
    for k in np.ndindex(*out.shape):
        a, b = int(xb[k]), int(yb[k])
        if b == 0:
            r = 0
        else:
            q = abs(a) // abs(b)
            q = q if (a >= 0) == (b >= 0) else -q
            r = a - b * q
        out[k] = _wrap(r, x.dtype)
    return out


def floor_divide(x, y):
    """``floor_divide`` with the Array API standard's infinite cases, which plait follows
    where NumPy's ``divmod`` gives NaN: ``floor(x / y)`` when an operand is infinite
    (``-inf // 1`` is ``-inf``, ``-1 // inf`` is ``-0.0``)."""
    with np.errstate(all="ignore"):
        out = np.floor_divide(x, y)            # the operands as given: Python scalars stay weak
        if np.asarray(out).dtype.kind != "f":
            return out
        inf = np.isinf(x) | np.isinf(y)
        return np.where(inf & (np.asarray(y) != 0), np.floor(np.true_divide(x, y)),
                        out).astype(np.asarray(out).dtype)


def _wrap(v: int, dt: np.dtype) -> int:
    bits = dt.itemsize * 8
    v &= (1 << bits) - 1
    if dt.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _shift(x, y, kind):
    x, y = np.asarray(x), np.asarray(y)
    dt = x.dtype
    bits = dt.itemsize * 8
    out = np.zeros(np.broadcast(x, y).shape, dt)
    xb, yb = np.broadcast_arrays(x, y)
    for k in np.ndindex(*out.shape):
        a, b = int(xb[k]), int(yb[k])
        if dt.kind == "u":
            b &= (1 << bits) - 1
        else:
            b = b & ((1 << bits) - 1)   # the shift amount read as unsigned
        if kind == "left":
            r = _wrap(a << b, dt) if b < bits else 0
        elif kind == "arith":
            r = a >> b if b < bits else (-1 if a < 0 else 0)
        else:
            ua = a & ((1 << bits) - 1)
            r = _wrap(ua >> b, dt) if b < bits else 0
        out[k] = r
    return out


def shift_left(x, y):
    return _shift(x, y, "left")


def shift_right_arithmetic(x, y):
    return _shift(x, y, "arith")


def shift_right_logical(x, y):
    return _shift(x, y, "logical")


def population_count(x):
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    flat = [bin(int(v) & ((1 << bits) - 1)).count("1") for v in x.ravel().tolist()]
    return np.array(flat, np.int64).reshape(x.shape).astype(x.dtype)


def integer_pow(x, y):
    """``x ** y`` by repeated multiplication in the operand's dtype (wrapping for ints)."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if y == 0:
            return np.ones_like(x)
        acc = x.copy()
        for _ in range(abs(y) - 1):
            acc = (acc * x).astype(x.dtype)
        return (np.ones((), x.dtype) / acc).astype(x.dtype) if y < 0 else acc


def logistic(x):
    """``1 / (1 + exp(-x))`` in double width; where the real part is very negative,
    ``exp(-x)`` overflows even there, so the limit 0 is taken as ``exp(x) / (1 + exp(x))``."""
    x = np.asarray(x)
    w = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    with np.errstate(all="ignore"):
        direct = 1.0 / (1.0 + np.exp(-w))
        e = np.exp(w)
        return np.where(np.real(w) < -700, e / (1.0 + e), direct).astype(x.dtype)


def rsqrt(x):
    x = np.asarray(x)
    wide = np.complex128 if x.dtype.kind == "c" else np.float64
    with np.errstate(all="ignore"):
        return (1.0 / np.sqrt(x.astype(wide))).astype(x.dtype)


def _cum(x, axis, reverse, pick):
    x = np.asarray(x)
    xm = np.moveaxis(x, axis, -1)
    out = np.empty_like(xm)
    for o in np.ndindex(*xm.shape[:-1]):
        lane = xm[o]
        order = range(lane.shape[0] - 1, -1, -1) if reverse else range(lane.shape[0])
        acc = None
        for i in order:
            v = lane[i]
            if acc is None or (v != v) or (acc == acc and pick(v, acc)):
                acc = v
            out[o + (i,)] = acc
    return np.moveaxis(out, -1, axis)


def cummax(x, axis, reverse):
    return _cum(x, axis, reverse, lambda v, acc: v > acc)


def cummin(x, axis, reverse):
    return _cum(x, axis, reverse, lambda v, acc: v < acc)


def _identity(kind: str, dt: np.dtype):
    if kind == "sum":
        return dt.type(0)
    if dt == np.bool_:
        return kind == "min"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.min if kind == "max" else info.max
    return dt.type(-np.inf if kind == "max" else np.inf)


def reduce_window(x, kind, window, strides, padding):
    """Windows over the operand padded with the reduction's identity (no dilation)."""
    x = np.asarray(x)
    ident = _identity(kind, x.dtype)
    xp = np.pad(x, padding, constant_values=ident)
    out_shape = tuple(max((n - w) // s + 1, 0) for n, w, s in zip(xp.shape, window, strides))
    out = np.empty(out_shape, x.dtype)
    with np.errstate(all="ignore"):
        for o in np.ndindex(*out_shape):
            sl = tuple(slice(i * s, i * s + w) for i, s, w in zip(o, strides, window))
            win = xp[sl]
            if kind == "sum":
                out[o] = np.sum(win, dtype=x.dtype)
            elif kind == "max":
                out[o] = np.nan if (x.dtype.kind == "f" and np.isnan(win).any()) else win.max()
            else:
                out[o] = np.nan if (x.dtype.kind == "f" and np.isnan(win).any()) else win.min()
    return out


def dynamic_slice(x, starts, sizes):
    """``lax.dynamic_slice``: starts clamped so the window fits."""
    x = np.asarray(x)
    st = [min(max(int(s), 0), n - z) for s, n, z in zip(starts, x.shape, sizes)]
    return x[tuple(slice(a, a + z) for a, z in zip(st, sizes))].copy()


def dynamic_update_slice(x, u, starts):
    x = np.asarray(x).copy()
    st = [min(max(int(s), 0), n - z) for s, n, z in zip(starts, x.shape, u.shape)]
    x[tuple(slice(a, a + z) for a, z in zip(st, u.shape))] = u
    return x


def at(x, idx, method, value):
    """``x.at[idx].method(value)`` on a copy, duplicates accumulating (``np.<ufunc>.at``)."""
    x = np.asarray(x).copy()
    v = np.asarray(value).astype(x.dtype) if not isinstance(value, np.ndarray) else value
    if method == "set":
        x[idx] = v
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[method].at(x, idx, v)
    return x


def reduce_xor(x, axes):
    x = np.asarray(x)
    return np.logical_xor.reduce(x, axis=tuple(axes)) if x.dtype == np.bool_ else \
        np.bitwise_xor.reduce(x, axis=tuple(axes))


def conv1d(x, k):
    """Cross-correlation of a 1-D signal with kernel ``k`` ('VALID'), as ``lax.conv``."""
    x, k = np.asarray(x), np.asarray(k)
    n = x.shape[0] - k.shape[0] + 1
    out = np.zeros(max(n, 0), np.result_type(x, k))
    for i in range(max(n, 0)):
        out[i] = np.sum(x[i:i + k.shape[0]] * k, dtype=out.dtype)
    return out


def scan_cum(x):
    """``scan`` with carry ``c + v`` emitting ``c * v`` (carry starts at 0)."""
    x = np.asarray(x)
    c = np.zeros(x.shape[1:], x.dtype)
    ys = []
    for v in x:
        ys.append(c * v)
        c = c + v
    return np.stack(ys).astype(x.dtype) if ys else np.zeros(x.shape, x.dtype)


def fori(x):
    x = np.asarray(x)
    for _ in range(3):
        x = x * x.dtype.type(0.5) + x.dtype.type(1)
    return x


def sigmoid(x):
    """``logistic``: ``1 / (1 + exp(-x))`` overflowed to 0 below -709.78, where float64's
    subnormals still hold the value (``sigmoid(-729)`` is 2.5e-317)."""
    return logistic(x)


def softplus(x):
    x = np.asarray(x)
    return np.logaddexp(x.astype(np.float64), 0.0).astype(x.dtype)


def logsumexp(x, axis):
    x = np.asarray(x)
    w = x.astype(np.float64)
    m = np.max(w, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    return (np.log(np.sum(np.exp(w - m), axis=axis)) + np.squeeze(m, axis=axis)).astype(x.dtype)


def softmax(x, axis):
    x = np.asarray(x)
    w = x.astype(np.float64)
    e = np.exp(w - np.max(w, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype)


def log_softmax(x, axis):
    x = np.asarray(x)
    w = x.astype(np.float64)
    s = w - np.max(w, axis=axis, keepdims=True)
    return (s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))).astype(x.dtype)


def silu(x):
    x = np.asarray(x)
    w = x.astype(np.float64)
    return (w / (1 + np.exp(-w))).astype(x.dtype)
