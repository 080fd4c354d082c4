"""Naive, loop-based reference implementations (test oracles) for the structured
primitives: convolution, windowed reductions, gather, scatter, sort.

They follow the XLA definitions element by element, sharing no code with plait.
"""
from __future__ import annotations

import itertools
import math

import numpy as np


def _inverse(spec):
    inv = [0] * len(spec)
    for j, d in enumerate(spec):
        inv[d] = j
    return inv


def naive_conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, fgc=1, bgc=1, out_dtype=None):
    """Direct convolution by explicit loops over every output and kernel element.

    ``dn`` is a (lhs_spec, rhs_spec, out_spec) triple of index tuples.
    """
    ls, rs, os_ = dn
    x = np.transpose(lhs, ls)   # N C S...
    w = np.transpose(rhs, rs)   # O I K...
    N, C = x.shape[:2]
    O, I = w.shape[:2]
    sp, ks = x.shape[2:], w.shape[2:]
    acc_dt = np.result_type(x.dtype, np.float64) if x.dtype.kind in "fc" else np.int64
    # value of the dilated + padded input at a position (0 in holes and padding)
    def at(n, c, pos):
        src = []
        for p, d, (lo, _), size in zip(pos, lhs_dil, padding, sp):
            q = p - lo
            if q < 0 or q % d or q // d >= size:
                return 0
            src.append(q // d)
        return x[(n, c) + tuple(src)]
    dil = [(n - 1) * d + 1 if n else 0 for n, d in zip(sp, lhs_dil)]
    full = [lo + hi + n for n, (lo, hi) in zip(dil, padding)]
    kd = [(k - 1) * d + 1 for k, d in zip(ks, rhs_dil)]
    out_sp = [(f - k) // s + 1 if f >= k else 0 for f, k, s in zip(full, kd, strides)]
    Nb = N // bgc
    out = np.zeros((Nb, O) + tuple(out_sp), dtype=acc_dt)
    og_f, og_b = O // fgc, O // bgc
    for n in range(Nb):
        for o in range(O):
            g, b = o // og_f, o // og_b      # feature group, batch group
            for opos in itertools.product(*[range(p) for p in out_sp]):
                acc = 0
                for i in range(I):
                    for kpos in itertools.product(*[range(k) for k in ks]):
                        src = [op * s + kp * d for op, s, kp, d in zip(opos, strides, kpos, rhs_dil)]
                        acc = acc + at(b * Nb + n, g * I + i, src) * w[(o, i) + kpos]
                out[(n, o) + opos] = acc
    res = np.transpose(out, _inverse(os_))
    return res.astype(out_dtype or lhs.dtype)


def naive_reduce_window(x, op, init, window, strides, padding, base_dil, win_dil):
    """XLA ReduceWindow by loops; holes and padding hold ``init``."""
    def at(pos):
        src = []
        for p, d, (lo, _), size in zip(pos, base_dil, padding, x.shape):
            q = p - lo
            if q < 0 or q % d or q // d >= size:
                return init
            src.append(q // d)
        return x[tuple(src)]
    dil = [(n - 1) * d + 1 if n else 0 for n, d in zip(x.shape, base_dil)]
    full = [lo + hi + n for n, (lo, hi) in zip(dil, padding)]
    kd = [(k - 1) * d + 1 for k, d in zip(window, win_dil)]
    out_sp = [(f - k) // s + 1 if f >= k else 0 for f, k, s in zip(full, kd, strides)]
    out = np.empty(out_sp, dtype=object)
    for opos in itertools.product(*[range(p) for p in out_sp]):
        acc = init
        for kpos in itertools.product(*[range(k) for k in window]):
            acc = op(acc, at([o * s + k * d for o, s, k, d in zip(opos, strides, kpos, win_dil)]))
        out[opos] = acc
    return out


def naive_gather(x, idx, offset_dims, collapsed, start_map, slice_sizes, mode="clip",
                 fill=None):
    """XLA gather, one output element at a time."""
    batch_shape = idx.shape[:-1]
    kept = [s for d, s in enumerate(slice_sizes) if d not in collapsed]
    out_rank = len(batch_shape) + len(kept)
    shape, bi, oi = [], 0, 0
    for j in range(out_rank):
        if j in offset_dims:
            shape.append(kept[oi]); oi += 1
        else:
            shape.append(batch_shape[bi]); bi += 1
    out = np.zeros(shape, x.dtype)
    kept_dims = [d for d in range(x.ndim) if d not in collapsed]
    for o in np.ndindex(*shape):
        b = tuple(o[j] for j in range(out_rank) if j not in offset_dims)
        off = [o[j] for j in offset_dims]
        start = [0] * x.ndim
        inb = True
        for k, d in enumerate(start_map):
            s = int(idx[b + (k,)])
            if not 0 <= s <= x.shape[d] - slice_sizes[d]:
                inb = False
            start[d] = min(max(s, 0), x.shape[d] - slice_sizes[d])
        full = list(start)
        for d, v in zip(kept_dims, off):
            full[d] += v
        out[o] = x[tuple(full)] if (inb or mode == "clip") else fill
    return out


def naive_scatter(x, idx, upd, window_dims, inserted, to_operand, combine, mode="drop"):
    """XLA scatter, one update element at a time; out-of-bounds windows dropped whole."""
    out = x.copy()
    free = [d for d in range(x.ndim) if d not in inserted]
    wsize = [1] * x.ndim
    for w, d in zip(window_dims, free):
        wsize[d] = upd.shape[w]
    scatter_dims = [i for i in range(upd.ndim) if i not in window_dims]
    for u in np.ndindex(*upd.shape):
        b = tuple(u[i] for i in scatter_dims)
        start = [0] * x.ndim
        inb = True
        for k, d in enumerate(to_operand):
            s = int(idx[b + (k,)])
            if not 0 <= s <= x.shape[d] - wsize[d]:
                inb = False
            start[d] = min(max(s, 0), x.shape[d] - wsize[d])
        if not inb and mode == "drop":
            continue
        for w, d in zip(window_dims, free):
            start[d] += u[w]
        t = tuple(start)
        out[t] = combine(out[t], upd[u])
    return out


def _sort_key(v):
    if isinstance(v, complex) or np.iscomplexobj(v):
        v = complex(v)
        return (math.isnan(v.real) or math.isnan(v.imag), v.real, v.imag)
    v = float(v) if not isinstance(v, (bool, np.bool_)) else int(v)
    return (math.isnan(v), 0.0 if math.isnan(v) else v)


def naive_sort(operands, dimension, num_keys):
    """Stable lexicographic sort of every 1-d lane, keyed by the first ``num_keys``."""
    outs = [np.array(o, copy=True) for o in operands]
    moved = [np.moveaxis(o, dimension, -1) for o in operands]
    res = [np.moveaxis(o, dimension, -1) for o in outs]
    for lane in np.ndindex(*moved[0].shape[:-1]):
        n = moved[0].shape[-1]
        order = sorted(range(n), key=lambda i: tuple(_sort_key(m[lane + (i,)])
                                                     for m in moved[:num_keys]))
        for m, r in zip(moved, res):
            r[lane] = m[lane][order]
    return outs
