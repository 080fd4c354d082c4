"""Contractions: ``dot_general`` and ``conv_general_dilated`` (XLA semantics).

``dot_general`` contracts the given dimension pairs and keeps batch dimensions:
the result has the batch dimensions, then ``lhs``'s free dimensions, then
``rhs``'s free dimensions. The NumPy impl transposes and reshapes both operands
to ``(batch, m, k) @ (batch, k, n)`` so ``np.matmul`` (BLAS for floats) does the
work.

``conv_general_dilated`` is XLA's convolution: window strides, explicit
``(low, high)`` padding per spatial dimension (negative crops), lhs (input)
dilation, rhs (kernel) dilation, feature groups and batch groups, and any
layout through :class:`ConvDimensionNumbers`. Groups are *major*: with ``G``
feature groups, input channel ``c = g * (C // G) + i`` and output feature
``o = g * (O // G) + j``; with ``B`` batch groups, input batch
``n = g * (N // B) + n'`` meets output features ``g * (O // B) ...``. The impl
pads and dilates the input, takes windows with ``sliding_window_view`` (im2col)
and contracts each group with one batched ``np.matmul``.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from plait.core import dtypes
from plait.core.aval import ShapedArray
from plait.core.trace import get_aval
from plait.lax._base import standard_primitive, check_dtype, check_same_dtypes, as_operand, ALL
from plait.lax._ad_helpers import defjvp, zeros, is_undefined_primal, aval_of_operand
from plait.errors import PlaitTypeError, PlaitValueError
from plait.lax.reductions import accum_dtype
from plait.lax.precision import check_precision
from plait.lax._batch_helpers import move_batch_dim, shift_axes, batch_size
from plait.lax._windows import (window_out_size, pad_and_dilate, window_view, static_seq,
                                resolve_padding)


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def _check_preferred(name: str, in_dt: np.dtype, preferred) -> np.dtype:
    if preferred is None:
        return in_dt
    if dtypes.is_complex(in_dt) and not dtypes.is_complex(preferred):
        raise PlaitTypeError(f"{name}: preferred_element_type {preferred} would drop the "
                             f"imaginary part of {in_dt} operands")
    if dtypes.is_bool(preferred) and not dtypes.is_bool(in_dt):
        raise PlaitTypeError(f"{name}: preferred_element_type bool needs bool operands, "
                             f"got {in_dt}")
    return preferred


# --- dot_general -------------------------------------------------------------------
def _dims_ok(name, side, dims, ndim):
    if any(not 0 <= d < ndim for d in dims) or len(set(dims)) != len(dims):
        raise PlaitTypeError(f"dot_general: {name} dimensions {tuple(dims)} must be distinct "
                             f"and in range for the {side} operand of rank {ndim}")


def _dot_abstract(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers,
                  preferred_element_type) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    check_same_dtypes("dot_general", (lhs, rhs))
    check_dtype("dot_general", lhs, ALL)
    out_dt = _check_preferred("dot_general", lhs.dtype, preferred_element_type)
    if len(lc) != len(rc):
        raise PlaitTypeError(f"dot_general: lhs has {len(lc)} contracting dimensions but rhs "
                             f"has {len(rc)}: they must be paired one to one")
    if len(lb) != len(rb):
        raise PlaitTypeError(f"dot_general: lhs has {len(lb)} batch dimensions but rhs has "
                             f"{len(rb)}: they must be paired one to one")
    _dims_ok("contracting", "lhs", lc, lhs.ndim)
    _dims_ok("contracting", "rhs", rc, rhs.ndim)
    _dims_ok("batch", "lhs", lb, lhs.ndim)
    _dims_ok("batch", "rhs", rb, rhs.ndim)
    for side, c, b in (("lhs", lc, lb), ("rhs", rc, rb)):
        if set(c) & set(b):
            raise PlaitTypeError(f"dot_general: {side} dimensions {sorted(set(c) & set(b))} "
                                 f"are both contracting and batch dimensions")
    for kind, ld, rd in (("contracting", lc, rc), ("batch", lb, rb)):
        for a, b in zip(ld, rd):
            if lhs.shape[a] != rhs.shape[b]:
                raise PlaitTypeError(
                    f"dot_general: {kind} dimensions must have the same size: lhs "
                    f"{lhs.shape[a]} vs rhs {rhs.shape[b]} (lhs dimension {a} of shape "
                    f"{lhs.shape}, rhs dimension {b} of shape {rhs.shape})")
    lfree = [d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb]
    rfree = [d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb]
    shape = [lhs.shape[d] for d in lb] + lfree + rfree
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(shape, out_dt, weak)


def _dot_impl(lhs, rhs, *, dimension_numbers, preferred_element_type):
    (lc, rc), (lb, rb) = dimension_numbers
    out_dt = lhs.dtype if preferred_element_type is None else preferred_element_type
    cdt = accum_dtype(out_dt)
    lfree = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    bshape = [lhs.shape[d] for d in lb]
    lf_shape = [lhs.shape[d] for d in lfree]
    rf_shape = [rhs.shape[d] for d in rfree]
    b, m, n = _prod(bshape), _prod(lf_shape), _prod(rf_shape)
    k = _prod(lhs.shape[d] for d in lc)
    a = np.transpose(lhs, list(lb) + lfree + list(lc)).astype(cdt, copy=False).reshape(b, m, k)
    c = np.transpose(rhs, list(rb) + list(rc) + rfree).astype(cdt, copy=False).reshape(b, k, n)
    with np.errstate(all="ignore"):
        out = np.matmul(a, c)
    return out.reshape(bshape + lf_shape + rf_shape).astype(out_dt, copy=False)


dot_general_p = standard_primitive("dot_general", _dot_abstract, _dot_impl)


def _ct_as(ct, like):
    """A cotangent in the dtype of the operand it flows to (for preferred_element_type)."""
    from plait.lax.elementwise import convert_element_type
    return convert_element_type(ct, aval_of_operand(like).dtype)


def _dot_transpose_lhs(ct, x, y, *, dimension_numbers, preferred_element_type):
    """ct (batch, x-free, y-free) . y over y's free dims, then permuted to x's layout."""
    from plait.lax.shape_ops import transpose
    (xc, yc), (xb, yb) = dimension_numbers
    xa, ya = aval_of_operand(x), aval_of_operand(y)
    x_free = [d for d in range(xa.ndim) if d not in xc and d not in xb]
    y_free = [d for d in range(ya.ndim) if d not in yc and d not in yb]
    nb, nxf = len(xb), len(x_free)
    ct_y_free = tuple(range(nb + nxf, nb + nxf + len(y_free)))
    r = dot_general_p.bind(_ct_as(ct, y), y,
                           dimension_numbers=((ct_y_free, tuple(y_free)),
                                              (tuple(range(nb)), tuple(yb))),
                           preferred_element_type=None)
    # r's dims are x's: batch, x-free, then x's contracting dims in y's order
    layout = list(xb) + x_free + [xc[k] for k in np.argsort(yc)]
    return transpose(r, tuple(int(i) for i in np.argsort(layout)))


def _dot_transpose_rhs(ct, x, y, *, dimension_numbers, preferred_element_type):
    """x . ct over x's free dims, then permuted to y's layout."""
    from plait.lax.shape_ops import transpose
    (xc, yc), (xb, yb) = dimension_numbers
    xa, ya = aval_of_operand(x), aval_of_operand(y)
    x_free = [d for d in range(xa.ndim) if d not in xc and d not in xb]
    y_free = [d for d in range(ya.ndim) if d not in yc and d not in yb]
    nb = len(xb)
    ct_x_free = tuple(range(nb, nb + len(x_free)))
    r = dot_general_p.bind(x, _ct_as(ct, x),
                           dimension_numbers=((tuple(x_free), ct_x_free),
                                              (tuple(xb), tuple(range(nb)))),
                           preferred_element_type=None)
    # r's dims are y's: batch, y's contracting dims in x's order, then y-free
    layout = list(yb) + [yc[k] for k in np.argsort(xc)] + y_free
    return transpose(r, tuple(int(i) for i in np.argsort(layout)))


def _dot_transpose(ct, x, y, **params):
    return [_dot_transpose_lhs(ct, x, y, **params) if is_undefined_primal(x) else None,
            _dot_transpose_rhs(ct, x, y, **params) if is_undefined_primal(y) else None]


defjvp(dot_general_p,
       lambda g, ans, x, y, **params: dot_general_p.bind(g, y, **params),
       lambda g, ans, x, y, **params: dot_general_p.bind(x, g, **params))
dot_general_p.def_rule("transpose", _dot_transpose)


def _dot_batch(vals, dims, *, dimension_numbers, preferred_element_type):
    """Both batched: a new leading batch dimension. One batched: a free dimension of
    that operand, whose place in the result follows from XLA's output order."""
    (lhs, rhs), (ld, rd) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    lc, lb, rc, rb = shift_axes(lc, ld), shift_axes(lb, ld), shift_axes(rc, rd), shift_axes(rb, rd)
    if ld is not None and rd is not None:
        dn = ((lc, rc), ((ld,) + lb, (rd,) + rb))
        out_dim = 0
    else:
        dn = ((lc, rc), (lb, rb))
        l_free = [i for i in range(get_aval(lhs).ndim) if i not in lc and i not in lb]
        if ld is not None:
            out_dim = len(lb) + l_free.index(ld)
        else:
            r_free = [i for i in range(get_aval(rhs).ndim) if i not in rc and i not in rb]
            out_dim = len(lb) + len(l_free) + r_free.index(rd)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                              preferred_element_type=preferred_element_type), out_dim


dot_general_p.def_rule("batch", _dot_batch)


def _dims_tuple(xs) -> tuple:
    return tuple(int(x) for x in xs)


def dot_general(lhs, rhs, dimension_numbers, preferred_element_type=None, *, precision=None):
    """General dot product (XLA ``DotGeneral``).

    ``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``.
    The result has the batch dimensions, then the free dimensions of ``lhs``,
    then those of ``rhs``. Operands must have the same dtype; the result has
    that dtype unless ``preferred_element_type`` is given. ``precision`` is
    accepted as in JAX (plait.lax.precision: products are in the operands' dtype).
    """
    check_precision(precision, "dot_general")
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        dn = ((_dims_tuple(lc), _dims_tuple(rc)), (_dims_tuple(lb), _dims_tuple(rb)))
    except (TypeError, ValueError):
        raise PlaitTypeError(f"dot_general: dimension_numbers must be ((lhs_contracting, "
                             f"rhs_contracting), (lhs_batch, rhs_batch)) tuples of ints, got "
                             f"{dimension_numbers!r}") from None
    pet = None if preferred_element_type is None else dtypes.canonical_dtype(preferred_element_type)
    return dot_general_p.bind(as_operand(lhs), as_operand(rhs), dimension_numbers=dn,
                              preferred_element_type=pet)


def dot(lhs, rhs, preferred_element_type=None, *, precision=None):
    """Vector/matrix products of rank-1 and rank-2 operands (``jax.lax.dot``)."""
    check_precision(precision, "dot")
    la, ra = get_aval(lhs), get_aval(rhs)
    if not (1 <= la.ndim <= 2 and 1 <= ra.ndim <= 2):
        raise PlaitTypeError(f"dot: operands must have rank 1 or 2, got shapes {la.shape} "
                             f"and {ra.shape} (use dot_general for other ranks)")
    return dot_general(lhs, rhs, (((la.ndim - 1,), (0,)), ((), ())), preferred_element_type)


# --- conv_general_dilated ------------------------------------------------------------
class ConvDimensionNumbers(NamedTuple):
    """Layout of a convolution: each spec lists dimension indices.

    ``lhs_spec = (batch, feature, spatial...)``, ``rhs_spec = (out feature, in
    feature, spatial...)``, ``out_spec = (batch, feature, spatial...)``.
    """
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def _spec_from_string(spec: str, first: str, second: str, spatial: str, what: str) -> tuple:
    if sorted(spec) != sorted(first + second + spatial) or len(set(spec)) != len(spec):
        raise PlaitValueError(f"conv: {what} layout {spec!r} must use the letters "
                              f"{first}, {second} and the spatial letters {spatial!r} once each")
    return (spec.index(first), spec.index(second)) + tuple(spec.index(c) for c in spatial)


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers) -> ConvDimensionNumbers:
    """Normalize a convolution layout to :class:`ConvDimensionNumbers`.

    Accepts ``None`` (NCHW / OIHW / NCHW), a ``ConvDimensionNumbers`` or a
    triple of index tuples, or a triple of strings like ``("NHWC", "HWIO",
    "NHWC")``; spatial letters are matched by name, in the kernel's order.
    """
    nd = len(lhs_shape)
    if len(rhs_shape) != nd:
        raise PlaitTypeError(f"conv: lhs and rhs must have the same rank, got shapes "
                             f"{tuple(lhs_shape)} and {tuple(rhs_shape)}")
    if nd < 2:
        raise PlaitTypeError(f"conv: operands need rank >= 2 (batch and feature dimensions), "
                             f"got shape {tuple(lhs_shape)}")
    if dimension_numbers is None:
        d = tuple(range(nd))
        return ConvDimensionNumbers(d, d, d)
    try:
        lhs_s, rhs_s, out_s = dimension_numbers
    except (TypeError, ValueError):
        raise PlaitTypeError(f"conv: dimension_numbers must be a triple (lhs, rhs, out), got "
                             f"{dimension_numbers!r}") from None
    if all(isinstance(s, str) for s in (lhs_s, rhs_s, out_s)):
        if not len(lhs_s) == len(rhs_s) == len(out_s) == nd:
            raise PlaitValueError(f"conv: layouts {dimension_numbers} must each have {nd} "
                                  f"letters for operands of rank {nd}")
        spatial = "".join(c for c in rhs_s if c not in "OI")
        return ConvDimensionNumbers(_spec_from_string(lhs_s, "N", "C", spatial, "lhs"),
                                    _spec_from_string(rhs_s, "O", "I", spatial, "rhs"),
                                    _spec_from_string(out_s, "N", "C", spatial, "out"))
    specs = tuple(tuple(int(i) for i in s) for s in (lhs_s, rhs_s, out_s))
    for s, what in zip(specs, ("lhs", "rhs", "out")):
        if sorted(s) != list(range(nd)):
            raise PlaitValueError(f"conv: {what}_spec {s} must be a permutation of "
                                  f"range({nd})")
    return ConvDimensionNumbers(*specs)


def _conv_abstract(lhs: ShapedArray, rhs: ShapedArray, *, window_strides, padding,
                   lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                   batch_group_count, preferred_element_type) -> ShapedArray:
    check_same_dtypes("conv_general_dilated", (lhs, rhs))
    check_dtype("conv_general_dilated", lhs, ALL)
    out_dt = _check_preferred("conv_general_dilated", lhs.dtype, preferred_element_type)
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise PlaitTypeError(f"conv_general_dilated: lhs and rhs must have the same rank >= 2, "
                             f"got shapes {lhs.shape} and {rhs.shape}")
    ls, rs, os_ = dimension_numbers
    nsp = lhs.ndim - 2
    for name, v in (("window_strides", window_strides), ("padding", padding),
                    ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(v) != nsp:
            raise PlaitTypeError(f"conv_general_dilated: {name} needs {nsp} entries (one per "
                                 f"spatial dimension), got {v}")
    for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if any(s < 1 for s in v):
            raise PlaitValueError(f"conv_general_dilated: {name} must be positive, got {v}")
    G, B = feature_group_count, batch_group_count
    if G < 1 or B < 1 or (G > 1 and B > 1):
        raise PlaitValueError(f"conv_general_dilated: feature_group_count ({G}) and "
                              f"batch_group_count ({B}) must be >= 1, and one of them 1")
    n, c = lhs.shape[ls[0]], lhs.shape[ls[1]]
    o, i = rhs.shape[rs[0]], rhs.shape[rs[1]]
    if c % G or c // G != i:
        raise PlaitTypeError(
            f"conv_general_dilated: lhs feature dimension ({c}) must equal the rhs input "
            f"feature dimension ({i}) times feature_group_count ({G}); shapes {lhs.shape} "
            f"and {rhs.shape}")
    if o % G or o % B:
        raise PlaitTypeError(f"conv_general_dilated: rhs output feature dimension ({o}) must "
                             f"be a multiple of feature_group_count ({G}) and "
                             f"batch_group_count ({B})")
    if n % B:
        raise PlaitTypeError(f"conv_general_dilated: lhs batch dimension ({n}) must be a "
                             f"multiple of batch_group_count ({B})")
    ksp = [rhs.shape[d] for d in rs[2:]]
    if any(k < 1 for k in ksp):
        raise PlaitTypeError(f"conv_general_dilated: kernel spatial dimensions must be "
                             f"positive, got rhs shape {rhs.shape}")
    spatial = [window_out_size(lhs.shape[d], k, s, lo, hi, ld, rd)
               for d, k, s, (lo, hi), ld, rd in zip(ls[2:], ksp, window_strides, padding,
                                                    lhs_dilation, rhs_dilation)]
    logical = [n // B, o] + spatial
    shape = [0] * lhs.ndim
    for j, d in enumerate(os_):
        shape[d] = logical[j]
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(shape, out_dt, weak)


def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count,
               preferred_element_type):
    ls, rs, os_ = dimension_numbers
    out_dt = lhs.dtype if preferred_element_type is None else preferred_element_type
    cdt = accum_dtype(out_dt)
    x = np.transpose(lhs, ls).astype(cdt, copy=False)      # N, C, spatial...
    w = np.transpose(rhs, rs).astype(cdt, copy=False)      # O, I, k...
    G, B = feature_group_count, batch_group_count
    N, C = x.shape[:2]
    O, I = w.shape[:2]
    ksp = w.shape[2:]
    nsp = len(ksp)
    out_sp = [window_out_size(d, k, s, lo, hi, ld, rd) for d, k, s, (lo, hi), ld, rd in
              zip(x.shape[2:], ksp, window_strides, padding, lhs_dilation, rhs_dilation)]
    logical = [N // B, O] + out_sp
    if _prod(logical) == 0 or _prod(ksp) * I == 0:
        res = np.zeros(logical, cdt)
    else:
        xp = pad_and_dilate(x, ((0, 0), (0, 0)) + tuple(padding), (1, 1) + tuple(lhs_dilation), 0)
        win = window_view(xp, range(2, 2 + nsp), ksp, window_strides, rhs_dilation,
                          out_sp)                              # N, C, P..., K...
        ng = G * B
        P, K = _prod(out_sp), _prod(ksp)
        # patches: (B, N/B, G, I, P..., K...) -> (B*G, N/B * P, I * K)
        pt = win.reshape((B, N // B, G, I) + tuple(out_sp) + tuple(ksp))
        perm = ((0, 2, 1) + tuple(range(4, 4 + nsp)) + (3,)
                + tuple(range(4 + nsp, 4 + 2 * nsp)))
        pt = np.transpose(pt, perm).reshape(ng, (N // B) * P, I * K)
        wk = w.reshape(ng, O // ng, I * K).transpose(0, 2, 1)  # (groups, I*K, O/groups)
        with np.errstate(all="ignore"):
            r = np.matmul(pt, wk)                              # (groups, N/B * P, O/groups)
        r = r.reshape((ng, N // B) + tuple(out_sp) + (O // ng,))
        perm = (1, 0, 2 + nsp) + tuple(range(2, 2 + nsp))
        res = np.transpose(r, perm).reshape(logical)
    inv = [0] * len(os_)
    for j, d in enumerate(os_):
        inv[d] = j
    return np.ascontiguousarray(np.transpose(res, inv)).astype(out_dt, copy=False)


conv_general_dilated_p = standard_primitive("conv_general_dilated", _conv_abstract, _conv_impl)


# conv autodiff rules: the transposes are convolutions themselves (the input
# cotangent convolves the output cotangent with the flipped kernel, the kernel
# cotangent correlates the input with the output cotangent); groups move between
# the feature and batch dimensions.
def _dilated(n: int, d: int) -> int:
    return 0 if n == 0 else 1 + d * (n - 1)


def _split_axis(x, axis: int, n: int):
    from plait.lax.shape_ops import reshape
    shape = list(get_aval(x).shape)
    shape[axis:axis + 1] = [n, shape[axis] // n]
    return reshape(x, shape)


def _merge_axis(x, src: int, dst: int):
    """Merge axis ``src`` (major) into axis ``dst`` (numbered with ``src`` removed)."""
    from plait.lax.shape_ops import reshape, transpose
    shape = get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new = [shape[i] for i in range(len(shape)) if i != src]
    new[dst] *= shape[src]
    return reshape(transpose(x, tuple(perm)), new)


def _swap01(spec) -> tuple:
    return (spec[1], spec[0]) + tuple(spec[2:])


def _conv_transpose_lhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, preferred_element_type):
    from plait.lax.shape_ops import rev
    ls, rs, os_ = dimension_numbers
    la = aval_of_operand(lhs)
    groups = max(feature_group_count, batch_group_count)
    w = rhs
    if groups > 1:
        w = _merge_axis(_split_axis(w, rs[0], groups), rs[0], rs[1])
    ksp = [get_aval(w).shape[d] for d in rs[2:]]
    osp = [get_aval(ct).shape[d] for d in os_[2:]]
    pads = []
    for n, k, o, s, (lo, _), ld, rd in zip([la.shape[d] for d in ls[2:]], ksp, osp,
                                            window_strides, padding, lhs_dilation,
                                            rhs_dilation):
        before = _dilated(k, rd) - lo - 1
        pads.append((before, _dilated(n, ld) + _dilated(k, rd) - 1 - _dilated(o, s) - before))
    out = conv_general_dilated_p.bind(
        _ct_as(ct, lhs), rev(w, tuple(rs[2:])), window_strides=tuple(lhs_dilation),
        padding=tuple(pads), lhs_dilation=tuple(window_strides),
        rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(tuple(os_), _swap01(rs), tuple(ls)),
        feature_group_count=groups, batch_group_count=1, preferred_element_type=None)
    if batch_group_count > 1:
        out = _merge_axis(_split_axis(out, ls[1], batch_group_count), ls[1], ls[0])
    return out


def _conv_transpose_rhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, preferred_element_type):
    ls, rs, os_ = dimension_numbers
    la, ra = aval_of_operand(lhs), aval_of_operand(rhs)
    if get_aval(ct).size == 0:
        return zeros(ra.strip_weak())
    fg, bg = (batch_group_count, 1) if batch_group_count > 1 else (1, feature_group_count)
    pads = []
    for n, k, o, s, (lo, _), ld, rd in zip([la.shape[d] for d in ls[2:]],
                                            [ra.shape[d] for d in rs[2:]],
                                            [get_aval(ct).shape[d] for d in os_[2:]],
                                            window_strides, padding, lhs_dilation,
                                            rhs_dilation):
        pads.append((lo, _dilated(o, s) - _dilated(n, ld) + _dilated(k, rd) - lo - 1))
    return conv_general_dilated_p.bind(
        lhs, _ct_as(ct, rhs), window_strides=tuple(rhs_dilation), padding=tuple(pads),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=ConvDimensionNumbers(_swap01(ls), _swap01(os_), _swap01(rs)),
        feature_group_count=fg, batch_group_count=bg, preferred_element_type=None)


def _conv_transpose(ct, lhs, rhs, **params):
    return [_conv_transpose_lhs(ct, lhs, rhs, **params) if is_undefined_primal(lhs) else None,
            _conv_transpose_rhs(ct, lhs, rhs, **params) if is_undefined_primal(rhs) else None]


defjvp(conv_general_dilated_p,
       lambda g, ans, x, w, **params: conv_general_dilated_p.bind(g, w, **params),
       lambda g, ans, x, w, **params: conv_general_dilated_p.bind(x, g, **params))
conv_general_dilated_p.def_rule("transpose", _conv_transpose)


def _regroup(x, bdim: int, axis: int, groups: int):
    """Fold batch dim ``bdim`` into grouped ``axis`` (numbered without the batch dim)
    inside each group: index ``g * (B * n) + b * n + i`` for ``n = size // groups``."""
    x = move_batch_dim(x, bdim, 0, get_aval(x).shape[bdim])
    x = _split_axis(x, axis + 1, groups)          # (B, ..., groups, n, ...)
    x = _merge_axis(x, 0, axis + 1)                # (..., groups, B * n, ...)
    return _merge_axis(x, axis, axis)              # (..., groups * B * n, ...)


def _ungroup(out, axis: int, groups: int, size: int):
    """Inverse of :func:`_regroup` on a result: axis ``g * (B * n) + b * n + i`` becomes
    a batch dim at ``axis`` followed by ``g * n + i``."""
    from plait.lax.shape_ops import transpose
    out = _split_axis(out, axis, groups)           # groups, B * n
    out = _split_axis(out, axis + 1, size)         # groups, B, n
    nd = get_aval(out).ndim
    perm = list(range(nd))
    perm[axis], perm[axis + 1] = axis + 1, axis
    out = transpose(out, tuple(perm))              # B, groups, n
    return _merge_axis(out, axis + 1, axis + 1)    # B, groups * n


def _conv_batch(vals, dims, *, dimension_numbers, feature_group_count, batch_group_count,
                **params):
    """Fold the vmapped dim into the convolution's batch dimension (lhs), its output
    features (rhs), or both with feature/batch groups, then split it out again."""
    (lhs, rhs), (ld, rd) = vals, dims
    ls, rs, os_ = dimension_numbers
    G, Bg = feature_group_count, batch_group_count
    size = batch_size(vals, dims)

    def run(x, w, fgc, bgc):
        return conv_general_dilated_p.bind(x, w, dimension_numbers=dimension_numbers,
                                           feature_group_count=fgc, batch_group_count=bgc,
                                           **params)
    if ld is not None and rd is not None:
        w = _merge_axis(rhs, rd, rs[0])
        if Bg > 1:      # batch element b forms batch groups b * Bg + g
            out = run(_merge_axis(lhs, ld, ls[0]), w, G, Bg * size)
        else:           # batch element b forms feature groups b * G + g
            out = run(_merge_axis(lhs, ld, ls[1]), w, G * size, Bg)
        return _split_axis(out, os_[1], size), os_[1]
    if ld is not None:
        if Bg > 1:
            out = run(_regroup(lhs, ld, ls[0], Bg), rhs, G, Bg)
        else:
            out = run(_merge_axis(lhs, ld, ls[0]), rhs, G, Bg)
        return _split_axis(out, os_[0], size), os_[0]
    groups = max(G, Bg)
    if groups > 1:
        out = run(lhs, _regroup(rhs, rd, rs[0], groups), G, Bg)
        return _ungroup(out, os_[1], groups, size), os_[1]
    out = run(lhs, _merge_axis(rhs, rd, rs[0]), G, Bg)
    return _split_axis(out, os_[1], size), os_[1]


conv_general_dilated_p.def_rule("batch", _conv_batch)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count: int = 1,
                         batch_group_count: int = 1, preferred_element_type=None, *,
                         precision=None):
    """General N-d convolution (XLA ``ConvGeneralDilated``; ``precision`` as in
    :func:`dot_general`).

    ``padding`` is ``"SAME"``, ``"VALID"`` or ``(low, high)`` pairs per spatial
    dimension (negative values crop). ``SAME`` is resolved against the dilated
    input size ``(n - 1) * lhs_dilation + 1`` and the dilated kernel extent, so
    the output has ``ceil(dilated_n / stride)`` elements (identical to JAX when
    ``lhs_dilation`` is 1). ``dimension_numbers`` is ``None`` (NCHW, OIHW, NCHW),
    a :class:`ConvDimensionNumbers`, or layout strings like
    ``("NHWC", "HWIO", "NHWC")``.
    """
    check_precision(precision, "conv_general_dilated")
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    la, ra = get_aval(lhs), get_aval(rhs)
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    name = "conv_general_dilated"
    strides = static_seq(name, "window_strides", window_strides, nsp)
    ld = static_seq(name, "lhs_dilation", lhs_dilation, nsp)
    rd = static_seq(name, "rhs_dilation", rhs_dilation, nsp)
    pads = resolve_padding(name, padding, [la.shape[d] for d in dn.lhs_spec[2:]],
                           [ra.shape[d] for d in dn.rhs_spec[2:]], strides, ld, rd)
    pet = None if preferred_element_type is None else dtypes.canonical_dtype(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=ld, rhs_dilation=rd,
        dimension_numbers=dn, feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count), preferred_element_type=pet)


def conv(lhs, rhs, window_strides, padding, preferred_element_type=None):
    """Convolution in NCHW / OIHW layout with strides and padding (``jax.lax.conv``)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding,
                                preferred_element_type=preferred_element_type)
