"""``conv_general_dilated`` as a call into plait's GEMM library.

A convolution with one or two spatial dimensions and one batch group, in any layout,
calls ``plait_conv_<s|d>`` (source: :mod:`plait.codegen.c_gemm`). With output features
contiguous (NHWC) it is direct: tiles of output pixels run the GEMM's register tile,
reading the input in place (or from a zero-padded copy) at each kernel tap, against the
kernel packed once per convolution into the GEMM's column panels. Otherwise rows
``(batch, out spatial)`` are gathered in L2-sized chunks with columns ``(kh, kw, in
feature)`` (im2col) and each chunk is one GEMM with the packed kernel. The descriptor of sizes and strides is a static array in the call step, so a
new convolution shape compiles only its few-line call. The backward convolutions are
convolutions too (``contractions.py``'s transpose rules) and take the same path: an
input-dilated one (the input gradient of a strided convolution) runs by output phase
without the zero-interleaved copy, and feature groups (the per-example kernel
gradients of ``vmap(grad)``) are a loop of group convolutions.
"""
from __future__ import annotations

import math

import numpy as np

from plait.backends.native import gemm
from plait.lax.contractions import conv_general_dilated_p
from plait.stripe.targets import Target


def row_major_strides(shape) -> list[int]:
    """Element strides of a C-contiguous array of ``shape``."""
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return out[::-1]


def conv_view(eqn) -> tuple | None:
    """``(dtype, descriptor, macs)`` of a convolution the library computes, else None.
    The descriptor is ``plait_conv``'s 30 sizes and strides (see its C comment); macs
    counts only products with real input elements."""
    if eqn.prim is not conv_general_dilated_p:
        return None
    p = eqn.params
    lhs, rhs, out = eqn.inputs[0].aval, eqn.inputs[1].aval, eqn.outputs[0].aval
    dt = np.dtype(lhs.dtype)
    if (dt not in (np.dtype(np.float32), np.dtype(np.float64))
            or np.dtype(rhs.dtype) != dt or np.dtype(out.dtype) != dt):
        return None
    nsp = lhs.ndim - 2
    if nsp not in (1, 2) or p["batch_group_count"] != 1:
        return None
    if 0 in lhs.shape or 0 in rhs.shape or 0 in out.shape:
        return None
    ls, rs, os_ = p["dimension_numbers"]
    xs, ws, ys = row_major_strides(lhs.shape), row_major_strides(rhs.shape), row_major_strides(out.shape)

    def spatial(spec, shape, strides):
        """(sizes, strides) of the two spatial dims, a unit one first for 1-d."""
        dims = list(spec[2:])
        sizes = [shape[d] for d in dims]
        st = [strides[d] for d in dims]
        return ([1] + sizes, [0] + st) if nsp == 1 else (sizes, st)
    (H, W), (sxh, sxw) = spatial(ls, lhs.shape, xs)
    (KH, KW), (swh, sww) = spatial(rs, rhs.shape, ws)
    (OH, OW), (syh, syw) = spatial(os_, out.shape, ys)
    ws_ = list(p["window_strides"])
    pads = [lo for lo, _ in p["padding"]]
    dil = list(p["rhs_dilation"])
    ldil = list(p["lhs_dilation"])
    if nsp == 1:
        ws_, pads, dil, ldil = [1] + ws_, [0] + pads, [1] + dil, [1] + ldil
    # a unit kernel dimension's stride is free: make it one the kernel read in place
    if KW == 1:
        sww = ws[rs[1]] * rhs.shape[rs[1]]
    if KH == 1:
        swh = sww * KW
    d = [lhs.shape[ls[0]], lhs.shape[ls[1]], H, W, xs[ls[0]], xs[ls[1]], sxh, sxw,
         rhs.shape[rs[0]], KH, KW, ws[rs[0]], ws[rs[1]], swh, sww,
         OH, OW, ys[os_[0]], ys[os_[1]], syh, syw,
         ws_[0], ws_[1], pads[0], pads[1], dil[0], dil[1], ldil[0], ldil[1],
         p["feature_group_count"]]
    macs = math.prod(out.shape) * KH * KW * rhs.shape[rs[1]] // (ldil[0] * ldil[1])
    return dt, d, macs


def routes(eqn, target: Target) -> bool:
    """Whether ``eqn`` leaves the fused kernels to call the library's convolution (CPU
    targets only)."""
    if target.kind != "cpu":
        return False
    v = conv_view(eqn)
    if v is None:
        return False
    # a group is a convolution of its own (its GEMMs pay packing and a call): many small
    # ones (vmap's per-example kernel gradients) ran faster as one fused kernel
    groups = eqn.params["feature_group_count"]
    return v[2] >= gemm.route_macs(target) * (1 if groups == 1 else 16 * groups)


def _conv(cp, eqn, name: str) -> bool:
    """The ``native`` rule: a call of ``plait_conv`` (False if it does not qualify)."""
    v = conv_view(eqn)
    if v is None:
        return False
    dt, d, _ = v
    gemm.declare(cp, dt)
    cp.parts.append(
        f"int64_t {name}(void **bufs) {{\n"
        f"  static const int64_t d[{len(d)}] = {{{', '.join(str(int(x)) for x in d)}}};\n"
        f"  return ((plait_conv_t)plait_gemm_fn[{gemm.entry_index('conv', dt)}])"
        f"(d, bufs[0], bufs[1], bufs[2]);\n}}")
    isz = dt.itemsize
    k = d[9] * d[10] * (d[1] // d[29])
    main, narrow = next(p for p in gemm.blockings(cp.target) if p[0].size == isz)
    rows = min(d[0] * d[15] * d[16], max(gemm.im2col_bytes(cp.target) // isz // k, 8 * main.mr))
    # the kernel packed once in the GEMM's column panels (out features rounded up to them)
    width = narrow.nr if d[8] <= main.nr // 2 else main.nr
    packed = k * -(-d[8] // width) * width * isz
    # im2col chunk, packed kernel, scattered output chunk; or (the direct path) the
    # zero-padded input copy of a run of images and the packed kernel
    hp, wp = (d[15] - 1) * d[21] + (d[9] - 1) * d[25] + 1, (d[16] - 1) * d[22] + (d[10] - 1) * d[26] + 1
    image = hp * wp * (d[1] // d[29]) * isz
    padded = min(d[0] * image, max(gemm.direct_pad_bytes(cp.target), image))
    cp.scratch[name] = max(rows * k * isz + rows * d[8] * isz, padded) + packed
    return True


conv_general_dilated_p.def_rule("native", _conv)
# its call steps run in the GEMM library's convolutions, not the program's C
conv_general_dilated_p.def_rule("native_library", True)
