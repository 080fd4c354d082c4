"""Faster NumPy evaluations of a few primitives, for the interp tier of tiered execution.

The reference ``impl`` of ``conv_general_dilated`` builds the whole im2col patch matrix
through a strided 2k-dimensional transpose, which NumPy copies slowly (measured on
All-CNN-C's training step: 2.5 of its 2.9 s on the interpreter). :func:`conv` computes
the same convolution channels-last as a sum of BLAS matrix products, one per kernel
offset (or, when the output has fewer positions than the kernel, as in weight
gradients, one per output position), each reading a strided slice of the padded
input. The products accumulate in the output dtype, so the result differs from the
reference (and from native code) only by the order of the sum: floating-point
reassociation. Cases it does not cover (feature or batch groups, non-float dtypes,
mixed dtypes) run the reference ``impl``. :func:`dot` does outer products (contracted
length 1) as a broadcast multiply, exactly equal to the reference. Both make their BLAS
products on the cores plait's running compiler processes leave free
(:func:`plait.runtime.blas.beside_builds`: the native build runs beside this tier).

:class:`FastTier` runs an interpreter executable's steps with these swapped in.
"""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from plait.lax.contractions import conv_general_dilated_p, dot_general_p
from plait.runtime.blas import beside_builds


def conv(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
         dimension_numbers, feature_group_count, batch_group_count,
         preferred_element_type, _reference=None):
    """``conv_general_dilated`` as BLAS products over kernel offsets (see the module)."""
    ls, rs, os_ = dimension_numbers
    dt = np.result_type(lhs.dtype, rhs.dtype)
    if (feature_group_count != 1 or batch_group_count != 1 or dt.kind != "f"
            or dt.itemsize < 4 or lhs.dtype != rhs.dtype
            or (preferred_element_type is not None and np.dtype(preferred_element_type) != dt)):
        return _reference(lhs, rhs, window_strides=window_strides, padding=padding,
                          lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                          dimension_numbers=dimension_numbers,
                          feature_group_count=feature_group_count,
                          batch_group_count=batch_group_count,
                          preferred_element_type=preferred_element_type)
    nsp = len(ls) - 2
    x = np.transpose(lhs, (ls[0],) + tuple(ls[2:]) + (ls[1],))      # N, spatial..., C
    # k..., I, O, contiguous: a flipped or transposed kernel (the gradients') has
    # strides NumPy's matmul cannot pass to BLAS, and its fallback loop is ~50x slower
    w = np.ascontiguousarray(np.transpose(rhs, tuple(rs[2:]) + (rs[1], rs[0])))
    ksp, (n, c), o = w.shape[:nsp], (x.shape[0], x.shape[-1]), w.shape[-1]
    xp = _dilate_and_pad(x, lhs_dilation, padding)
    out_sp = tuple(max((p - (k - 1) * r - 1) // s + 1, 0) for p, k, r, s in
                   zip(xp.shape[1:-1], ksp, rhs_dilation, window_strides))
    res = np.zeros((n,) + out_sp + (o,), dt)
    if res.size and c and all(ksp):
        with np.errstate(all="ignore"), beside_builds():
            if np.prod(out_sp) >= np.prod(ksp):
                flat = res.reshape(-1, o)
                for k in itertools.product(*map(range, ksp)):
                    sl = tuple(slice(ki * r, ki * r + (m - 1) * s + 1, s) for ki, r, m, s in
                               zip(k, rhs_dilation, out_sp, window_strides))
                    flat += xp[(slice(None),) + sl].reshape(-1, c) @ w[k]
            else:
                wk = w.reshape(-1, o)
                for p in itertools.product(*map(range, out_sp)):
                    sl = tuple(slice(pi * s, pi * s + (k - 1) * r + 1, r) for pi, s, k, r in
                               zip(p, window_strides, ksp, rhs_dilation))
                    res[(slice(None),) + p] = xp[(slice(None),) + sl].reshape(n, -1) @ wk
    logical = np.moveaxis(res, -1, 1)                                 # N, O, spatial...
    inv = [0] * len(os_)
    for j, d in enumerate(os_):
        inv[d] = j
    return np.ascontiguousarray(np.transpose(logical, inv))


def _dilate_and_pad(x, dilation, padding):
    """Channels-last ``x`` with its spatial axes dilated (zeros between elements) and
    padded (negative padding crops)."""
    sp = x.shape[1:-1]
    if any(d != 1 for d in dilation):
        xd = np.zeros((x.shape[0],) + tuple((m - 1) * d + 1 if m else 0
                                            for m, d in zip(sp, dilation)) + x.shape[-1:],
                      x.dtype)
        xd[(slice(None),) + tuple(slice(None, None, d) for d in dilation)] = x
        x, sp = xd, xd.shape[1:-1]
    x = x[(slice(None),) + tuple(slice(max(-lo, 0), m - max(-hi, 0))
                                 for m, (lo, hi) in zip(sp, padding))]
    if all(lo <= 0 and hi <= 0 for lo, hi in padding):
        return x
    xp = np.zeros((x.shape[0],) + tuple(m + max(lo, 0) + max(hi, 0) for m, (lo, hi) in
                                        zip(x.shape[1:-1], padding)) + x.shape[-1:], x.dtype)
    xp[(slice(None),) + tuple(slice(max(lo, 0), max(lo, 0) + m)
                              for m, (lo, _) in zip(x.shape[1:-1], padding))] = x
    return xp


def dot(lhs, rhs, *, dimension_numbers, preferred_element_type, _reference=None):
    """``dot_general``; an outer product (no batch dimensions, contracted length 1, as
    in a batch-1 dense layer's weight gradient) as a broadcast multiply: NumPy's matmul
    takes seconds over a 25088 x 1 x 4096 product that a multiply does in a fraction."""
    (lc, rc), (lb, rb) = dimension_numbers
    if (lb or rb or any(lhs.shape[d] != 1 for d in lc) or lhs.dtype != rhs.dtype
            or lhs.dtype.kind != "f" or lhs.dtype.itemsize < 4
            or (preferred_element_type is not None
                and np.dtype(preferred_element_type) != lhs.dtype)):
        with beside_builds():
            return _reference(lhs, rhs, dimension_numbers=dimension_numbers,
                              preferred_element_type=preferred_element_type)
    with np.errstate(all="ignore"):
        return np.multiply.outer(np.squeeze(lhs, tuple(lc)), np.squeeze(rhs, tuple(rc)))


class FastTier:
    """An interpreter executable's steps, with the faster evaluations swapped in and
    each intermediate dropped after its last use (the reference keeps every one until
    the call returns), so the fast tier's peak memory stays near the native code's."""

    def __init__(self, exe):
        faster = {conv_general_dilated_p.rule("impl"): conv, dot_general_p.rule("impl"): dot}
        self.exe = exe
        self.steps = [replace(st, params=dict(st.params, _reference=st.impl),
                              impl=faster[st.impl]) if st.impl in faster else st
                      for st in exe.steps]
        last: dict[int, int] = {}
        for i, st in enumerate(self.steps):
            for s in st.reads:
                last[s] = i
        made = {s for st in self.steps for s in st.writes} - set(exe.out)
        self.frees = [[] for _ in self.steps]
        for s, i in last.items():
            if s in made:
                self.frees[i].append(s)

    def __call__(self, *args) -> list:
        return self.exe.run(args, self.steps, self.frees)
