"""The native convolution library's direct path (output channels contiguous, no im2col):
tiles of output pixels across rows and images, the input read in place or from a
zero-padded copy, strides, kernel dilation, any padding and input layout, a last panel
of output channels that is not full; against a float64 NumPy convolution."""
import ctypes
import dataclasses

import numpy as np
import pytest

import plait
from plait import lax
from plait.backends.native import conv, gemm
from plait.backends.native.target import host_target


def _np_conv(x, w, strides, padding, dilation):
    """NHWC x HWIO convolution in float64: taps of the padded input, each a product."""
    (sh, sw), (dh, dw) = strides, dilation
    (plo, phi), (qlo, qhi) = padding
    xp = x.astype(np.float64)
    # negative padding crops; positive pads with zeros
    xp = xp[:, max(-plo, 0):xp.shape[1] - max(-phi, 0), max(-qlo, 0):xp.shape[2] - max(-qhi, 0)]
    xp = np.pad(xp, ((0, 0), (max(plo, 0), max(phi, 0)), (max(qlo, 0), max(qhi, 0)), (0, 0)))
    kh_, kw_ = w.shape[:2]
    oh = (xp.shape[1] - (kh_ - 1) * dh - 1) // sh + 1
    ow = (xp.shape[2] - (kw_ - 1) * dw - 1) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for kh in range(kh_):
        for kw in range(kw_):
            win = xp[:, kh * dh:kh * dh + (oh - 1) * sh + 1:sh, kw * dw:kw * dw + (ow - 1) * sw + 1:sw]
            out += win @ w[kh, kw].astype(np.float64)
    return out


def _check(x, w, strides, padding, dilation=(1, 1), dn=("NHWC", "HWIO", "NHWC"),
           dtype=np.float32):
    """plait's native convolution (routed to the library) against the float64 oracle,
    twice (the library's buffers are reused); x and w are given NHWC and HWIO."""
    x, w = x.astype(dtype), w.astype(dtype)
    xin = np.ascontiguousarray(np.transpose(x, ["NHWC".index(c) for c in dn[0]]))
    win = np.ascontiguousarray(np.transpose(w, ["HWIO".index(c) for c in dn[1]]))
    f = plait.jit(lambda a, b: lax.conv_general_dilated(
        a, b, strides, padding, rhs_dilation=dilation, dimension_numbers=dn), backend="native")
    assert "native conv_general_dilated" in f.lower(xin, win).compile().as_text("kernels")
    want = _np_conv(x, w, strides, padding, dilation)
    want = np.transpose(want, ["NHWC".index(c) for c in dn[2]])
    eps = np.finfo(dtype).eps
    k = w.shape[0] * w.shape[1] * w.shape[2]
    bound = 8 * eps * np.sqrt(k) * np.abs(x).max() * np.abs(w).max()
    for _ in range(2):
        got = np.asarray(f(xin, win))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=bound)


def _data(seed, n, h, w_, c, kh, kw, o):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, h, w_, c)), rng.standard_normal((kh, kw, c, o)))


@pytest.mark.parametrize("shape", [
    (1, 14, 14, 64, 64),      # whole panels, tiles across output rows
    (3, 5, 9, 16, 100),       # tiles across images, a last panel of 36 of 64 columns
    (2, 7, 7, 3, 33),         # three input channels, one real column in the last panel
])
def test_same_convolutions_match_numpy(shape):
    n, h, w_, c, o = shape
    x, w = _data(31, n, h, w_, c, 3, 3, o)
    _check(x, w, (1, 1), ((1, 1), (1, 1)))


def test_valid_convolution_reads_the_input_in_place():
    """No padding and contiguous NHWC: the input is read where it is."""
    x, w = _data(32, 2, 11, 10, 24, 3, 2, 72)
    _check(x, w, (1, 1), ((0, 0), (0, 0)))


@pytest.mark.parametrize("strides,padding,dilation", [
    ((2, 2), ((1, 1), (1, 1)), (1, 1)),     # All-CNN-C's strided layers
    ((2, 1), ((0, 2), (1, 0)), (1, 1)),     # uneven strides and padding
    ((1, 1), ((2, 2), (2, 2)), (2, 2)),     # a dilated kernel
    ((1, 2), ((-1, 1), (1, -1)), (1, 1)),   # negative padding crops the input
    ((1, 1), ((1, -1), (1, -1)), (1, 1)),   # shifted: padded although no larger
])
def test_strides_padding_and_dilation_match_numpy(strides, padding, dilation):
    x, w = _data(33, 2, 12, 13, 20, 3, 3, 48)
    _check(x, w, strides, padding, dilation)


def test_an_nchw_input_is_copied_into_the_padded_layout():
    x, w = _data(34, 2, 9, 8, 40, 3, 3, 64)
    _check(x, w, (1, 1), ((1, 1), (1, 1)), dn=("NCHW", "OIHW", "NHWC"))


def test_float64_matches_numpy():
    x, w = _data(35, 1, 10, 10, 32, 3, 3, 40)
    _check(x, w, (1, 1), ((1, 1), (1, 1)), dtype=np.float64)


def test_input_gradient_of_a_stride_one_convolution_matches_numpy():
    """The input gradient of a SAME stride-1 convolution is a convolution with the
    flipped, transposed kernel: the direct path with a kernel read through strides."""
    rng = np.random.default_rng(36)
    x = rng.standard_normal((2, 9, 9, 48)).astype(np.float32)
    w = rng.standard_normal((3, 3, 48, 80)).astype(np.float32)
    g = rng.standard_normal((2, 9, 9, 80)).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    conv = lambda x: lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),  # noqa: E731
                                              dimension_numbers=dn)
    f = plait.jit(lambda g: plait.vjp(conv, x)[1](g)[0], backend="native")
    assert "native conv_general_dilated" in f.lower(g).compile().as_text("kernels")
    wt = np.transpose(w[::-1, ::-1], (0, 1, 3, 2))      # flipped, in/out swapped
    want = _np_conv(g, wt, (1, 1), ((1, 1), (1, 1)), (1, 1))
    bound = 8 * np.finfo(np.float32).eps * np.sqrt(9 * 80) * np.abs(w).max() * np.abs(g).max()
    np.testing.assert_allclose(np.asarray(f(g)), want, rtol=0, atol=bound)


def _np_input_grad(x_shape, w, g, strides, padding, dilation):
    """d(sum(conv(x, w) * g))/dx in float64: every output pixel's kernel product scattered
    back onto the input pixels its taps read."""
    n, h, w_, c = x_shape
    (sh, sw), (dh, dw) = strides, dilation
    (plo, _), (qlo, _) = padding
    out = np.zeros(x_shape)
    w64, g64 = w.astype(np.float64), g.astype(np.float64)
    for oh in range(g.shape[1]):
        for ow in range(g.shape[2]):
            for kh in range(w.shape[0]):
                for kw in range(w.shape[1]):
                    ih, iw = oh * sh - plo + kh * dh, ow * sw - qlo + kw * dw
                    if 0 <= ih < h and 0 <= iw < w_:
                        out[:, ih, iw] += g64[:, oh, ow] @ w64[kh, kw].T
    return out


@pytest.mark.parametrize("shape,kernel,strides,padding,dilation", [
    ((2, 8, 8, 96), (3, 3, 96, 48), (2, 2), ((1, 1), (1, 1)), (1, 1)),   # All-CNN-C's
    ((1, 11, 9, 40), (3, 2, 40, 48), (3, 2), ((1, 0), (0, 1)), (1, 1)),  # uneven
    ((1, 10, 10, 64), (3, 3, 64, 48), (2, 2), ((2, 2), (2, 2)), (2, 2)),  # dilated kernel
    ((2, 9, 9, 48), (1, 1, 48, 64), (2, 2), ((0, 0), (0, 0)), (1, 1)),   # phases without taps
])
def test_input_gradient_of_a_strided_convolution_matches_numpy(shape, kernel, strides,
                                                              padding, dilation):
    """A strided convolution's input gradient is an input-dilated convolution: with more
    than half a panel of input channels its output phases run direct over one padded copy
    of the gradient; against a float64 scatter."""
    rng = np.random.default_rng(37)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(kernel).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    conv = lambda x: lax.conv_general_dilated(x, w, strides, padding,  # noqa: E731
                                              rhs_dilation=dilation, dimension_numbers=dn)
    y = np.asarray(plait.jit(conv, backend="interp")(x))
    g = rng.standard_normal(y.shape).astype(np.float32)
    f = plait.jit(lambda g: plait.vjp(conv, x)[1](g)[0], backend="native")
    assert "native conv_general_dilated" in f.lower(g).compile().as_text("kernels")
    want = _np_input_grad(shape, w, g, strides, padding, dilation)
    k = kernel[0] * kernel[1] * kernel[3]
    bound = 8 * np.finfo(np.float32).eps * np.sqrt(k) * np.abs(w).max() * np.abs(g).max()
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(f(g)), want, rtol=0, atol=bound)


def _library_conv(target, d, x, w, shape):
    """``plait_conv_s`` of the library built for ``target``, on descriptor ``d``."""
    fn = gemm.library("s", target).plait_conv_s
    fn.restype = ctypes.c_int64
    fn.argtypes = [ctypes.c_void_p] * 4
    desc = np.asarray(d, np.int64)
    y = np.full(shape, np.nan, np.float32)
    assert fn(desc.ctypes.data, x.ctypes.data, w.ctypes.data, y.ctypes.data) == 0
    return y


@pytest.mark.parametrize("lhs_dilation", [(1, 1), (2, 2)])
def test_a_large_batch_is_padded_a_few_images_at_a_time(lhs_dilation):
    """With an L3 of 1 MiB the padded copy holds two of the five images, so the direct
    path (and, input-dilated, its phases) pads and runs them in three runs: the same
    sums in the same order as one copy of all five (bitwise), and interp's values."""
    rng = np.random.default_rng(38)
    x = rng.standard_normal((5, 40, 40, 64)).astype(np.float32)
    w = rng.standard_normal((3, 3, 64, 48)).astype(np.float32)

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), lhs_dilation=lhs_dilation,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    (eqn,) = [e for e in plait.make_graph(f)(x, w).graph.eqns
              if e.prim.name == "conv_general_dilated"]
    _, d, _ = conv.conv_view(eqn)
    small = dataclasses.replace(host_target(), l3_bytes=1 << 20)
    assert 42 * 42 * 64 * 4 * 2 <= gemm.direct_pad_bytes(small) < 42 * 42 * 64 * 4 * 3
    want = np.asarray(plait.jit(f, backend="interp")(x, w))
    got = _library_conv(small, d, x, w, want.shape)
    np.testing.assert_array_equal(got, _library_conv(host_target(), d, x, w, want.shape))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
