"""The native convolution library cut into pieces of plait's pool: forward convolutions
over many row chunks and weight gradients whose im2col columns are split into one
range per thread (each summed into its own temporary), against NumPy in float64."""
import numpy as np
import pytest

import plait
from plait import lax

_DN = ("NHWC", "HWIO", "NHWC")


def _np_conv(x, w):
    """SAME 3x3 stride-1 NHWC/HWIO convolution in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    n, h, wd, _ = x.shape
    out = np.zeros((n, h, wd, w.shape[3]))
    for kh in range(3):
        for kw in range(3):
            out += xp[:, kh:kh + h, kw:kw + wd, :] @ w[kh, kw].astype(np.float64)
    return out


def _np_weight_grad(x, g):
    """d(sum(conv(x, w) * g))/dw of the SAME 3x3 convolution, in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    n, h, wd, c = x.shape
    gw = np.zeros((3, 3, c, g.shape[3]))
    for kh in range(3):
        for kw in range(3):
            gw[kh, kw] = np.einsum("nhwc,nhwo->co", xp[:, kh:kh + h, kw:kw + wd, :],
                                   g.astype(np.float64))
    return gw


def _conv(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=_DN)


def _conv_nchw_out(x, w):
    """:func:`_conv` writing NCHW: output channels not contiguous, so im2col chunks
    (contiguous ones run the direct path: tests/native/test_native_conv_direct.py)."""
    return lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                    dimension_numbers=("NHWC", "HWIO", "NCHW"))


@pytest.mark.parametrize("shape", [(8, 16, 16, 64, 48), (2, 9, 7, 24, 40)])
def test_weight_gradient_matches_numpy(shape):
    """Weight gradients large enough to split their columns over threads (and a small
    one that does not), against the float64 sum over images and pixels."""
    n, h, w_, c, o = shape
    rng = np.random.default_rng(21)
    x = rng.standard_normal((n, h, w_, c)).astype(np.float32)
    w = rng.standard_normal((3, 3, c, o)).astype(np.float32)
    g = rng.standard_normal((n, h, w_, o)).astype(np.float32)
    f = plait.jit(lambda x, g: plait.vjp(lambda w: _conv(x, w), w)[1](g)[0], backend="native")
    assert "native conv_general_dilated" in f.lower(x, g).compile().as_text("kernels")
    want = _np_weight_grad(x, g)
    bound = 1e-5 * np.sqrt(n * h * w_) * np.abs(x).max() * np.abs(g).max()
    np.testing.assert_allclose(np.asarray(f(x, g)), want, rtol=0, atol=bound)


@pytest.mark.parametrize("shape", [(1, 40, 40, 64, 64), (3, 5, 6, 16, 24)])
def test_forward_over_row_pieces_matches_numpy(shape):
    """A convolution cut into a few row chunks per thread (and one too small to cut),
    twice in a row (the per-thread im2col buffer is reused), against NumPy."""
    n, h, w_, c, o = shape
    rng = np.random.default_rng(22)
    x = rng.standard_normal((n, h, w_, c)).astype(np.float32)
    w = rng.standard_normal((3, 3, c, o)).astype(np.float32)
    f = plait.jit(_conv_nchw_out, backend="native")
    want = _np_conv(x, w).transpose(0, 3, 1, 2)
    bound = 1e-5 * np.sqrt(9 * c) * np.abs(x).max() * np.abs(w).max()
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=0, atol=bound)


@pytest.mark.parametrize("shape", [(1, 7, 7, 256, 256), (2, 6, 5, 160, 100)])
def test_deep_channels_over_few_rows_match_numpy(shape):
    """Few output rows and a deep kernel (VGG's and All-CNN-C's late layers): the kernel
    is packed, and each chunk gathered, on every thread before the GEMM; an output
    channel count that is not a panel multiple pads the last panel. Against NumPy."""
    n, h, w_, c, o = shape
    rng = np.random.default_rng(23)
    x = rng.standard_normal((n, h, w_, c)).astype(np.float32)
    w = rng.standard_normal((3, 3, c, o)).astype(np.float32)
    f = plait.jit(_conv_nchw_out, backend="native")
    assert "native conv_general_dilated" in f.lower(x, w).compile().as_text("kernels")
    want = _np_conv(x, w).transpose(0, 3, 1, 2)
    bound = 1e-5 * np.sqrt(9 * c) * np.abs(x).max() * np.abs(w).max()
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=0, atol=bound)


def test_input_gradient_of_a_deep_strided_convolution_matches_numpy():
    """The input gradient of a stride-2 convolution (input-dilated phases, each packing
    its taps of a deep kernel) against NumPy's transposed convolution in float64."""
    rng = np.random.default_rng(24)
    x = rng.standard_normal((1, 8, 8, 192)).astype(np.float32)
    w = rng.standard_normal((3, 3, 192, 160)).astype(np.float32)
    conv = lambda x: lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (1, 1)),  # noqa: E731
                                              dimension_numbers=_DN)
    g = rng.standard_normal((1, 4, 4, 160)).astype(np.float32)
    f = plait.jit(lambda g: plait.vjp(conv, x)[1](g)[0], backend="native")
    want = np.zeros((1, 10, 10, 192))      # padded input, then cropped
    for i in range(4):
        for j in range(4):
            for kh in range(3):
                for kw in range(3):
                    want[0, 2 * i + kh, 2 * j + kw] += w[kh, kw].astype(np.float64) @ g[0, i, j]
    want = want[:, 1:9, 1:9]
    bound = 1e-5 * np.sqrt(9 * 160) * np.abs(w).max() * np.abs(g).max()
    np.testing.assert_allclose(np.asarray(f(g)), want, rtol=0, atol=bound)
