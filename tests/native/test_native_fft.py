"""The ``fft`` primitive on the native backend: routed transforms (``ROUTED``: float32
rfft over the last one or two axes, power-of-two lengths up to 512) call plait's own FFT
library; everything else stays a host step on SciPy/NumPy's pocketfft.

Oracle: ``numpy.fft`` in float64 on the same float32 inputs. Tolerance: a radix-2/4 FFT's
rounding error grows like ``eps * log2(N)`` relative to the transform's scale (each of
the ``log2 N`` butterfly stages adds at most a few ulps, plus the twiddles' rounding and
the real post-twiddle), so every result is checked to ``4 * log2(N) * eps32 * max|X|``
with ``N`` the number of points transformed per array (measured errors are 30-60x
smaller: ~1.5e-7 of ``max|X|`` at 512 x 512).
"""
import math

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.backends.native.fft import ROUTED
from plait.errors import PlaitValueError
from plait.lax.fft import FftType
from plait.test_util import check_grads

EPS32 = float(np.finfo(np.float32).eps)


@pytest.fixture(autouse=True)
def _native():
    from plait.codegen.toolchain import find_toolchain
    if find_toolchain() is None:
        pytest.skip("no C compiler: the native backend is unavailable")


def _compiled(f, *args):
    """``(outputs, kinds)``: ``f`` compiled by the native backend and run on ``args``,
    with what each step of its plan computes."""
    exe = plait.jit(f, backend="native").lower(*args).compile().executable
    return [np.asarray(o) for o in exe(*args)], [st.what for st in exe.plan.steps]


def _close(got, ref, points: int):
    """``got`` within the FFT's float32 error bound of the float64 ``ref``."""
    assert got.shape == ref.shape
    scale = max(np.abs(ref).max(), 1e-30)
    err = np.abs(got.astype(np.complex128) - ref).max() / scale
    assert err <= 4 * max(math.log2(points), 1) * EPS32, err


def test_routed_table_is_float32_rfft():
    assert set(ROUTED) == {(FftType.RFFT, np.dtype(np.float32), 1),
                           (FftType.RFFT, np.dtype(np.float32), 2)}


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("n", [2, 4, 8, 16, 32, 64, 128, 256, 512])
def test_rfft_every_routed_length(n, norm):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((19, n)).astype(np.float32)    # 19 lines: one partial block
    (got,), kinds = _compiled(lambda v: pnp.fft.rfft(v, norm=norm), x)
    assert "native fft" in kinds
    _close(got, np.fft.rfft(x.astype(np.float64), norm=norm), n)


@pytest.mark.parametrize("shape,axis", [((3, 2, 64), -1), ((64, 5), 0), ((1, 128), -1),
                                        ((7, 16, 3), 1)])
def test_rfft_batches_and_axes(shape, axis):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    (got,), kinds = _compiled(lambda v: pnp.fft.rfft(v, axis=axis), x)
    assert "native fft" in kinds
    _close(got, np.fft.rfft(x.astype(np.float64), axis=axis), shape[axis])


@pytest.mark.parametrize("shape,axes", [((512, 512), (-2, -1)), ((8, 512), (-2, -1)),
                                        ((512, 4), (-2, -1)), ((2, 64, 32), (-2, -1)),
                                        ((16, 2, 8), (0, 2)), ((3, 2, 2), (1, 2))])
@pytest.mark.parametrize("norm", [None, "ortho"])
def test_rfft2_routed(shape, axes, norm):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    (got,), kinds = _compiled(lambda v: pnp.fft.rfft2(v, axes=axes, norm=norm), x)
    assert "native fft" in kinds
    ref = np.fft.rfft2(x.astype(np.float64), axes=axes, norm=norm)
    _close(got, ref, shape[axes[0]] * shape[axes[1]])


def test_rfft2_irfft2_pair():
    x = np.random.default_rng(3).standard_normal((4, 32, 64)).astype(np.float32)
    (spec, back), kinds = _compiled(
        lambda v: (pnp.fft.rfft2(v), pnp.fft.irfft2(pnp.fft.rfft2(v), s=v.shape[-2:])), x)
    assert "native fft" in kinds
    _close(spec, np.fft.rfft2(x.astype(np.float64)), 32 * 64)
    _close(back, x.astype(np.float64), 32 * 64)


def test_gradient_of_routed_rfft2_against_numpy():
    """``f(x) = sum(Re(rfft2(x)) * a + Im(rfft2(x)) * b)`` is linear, so its gradient's
    entry ``i`` is ``f(e_i)``, computed exactly enough by NumPy in float64."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    a = rng.standard_normal((8, 9)).astype(np.float32)
    b = rng.standard_normal((8, 9)).astype(np.float32)

    def f(v):
        z = pnp.fft.rfft2(v)
        return pnp.sum(pnp.real(z) * a + pnp.imag(z) * b)

    def f_np(v):
        z = np.fft.rfft2(v)
        return np.sum(z.real * a + z.imag * b)
    (val, g), kinds = _compiled(plait.value_and_grad(f), x)
    assert "native fft" in kinds
    eye = np.eye(x.size).reshape((x.size,) + x.shape)
    want = np.array([f_np(e) for e in eye]).reshape(x.shape)
    np.testing.assert_allclose(val, f_np(x.astype(np.float64)), rtol=1e-5)
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_check_grads_through_native_rfft():
    x = np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32)
    w = np.random.default_rng(6).standard_normal((4, 5)).astype(np.float32)
    f = plait.jit(lambda v: pnp.real(pnp.fft.rfft(v)) * w + pnp.imag(pnp.fft.rfft(v)),
                  backend="native")
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("make", [
    lambda r: (np.fft.rfft, pnp.fft.rfft, r.standard_normal((5, 6)).astype(np.float32)),
    lambda r: (np.fft.rfft, pnp.fft.rfft, r.standard_normal((2, 1024)).astype(np.float32)),
    lambda r: (np.fft.rfft, pnp.fft.rfft, r.standard_normal((3, 64))),
    lambda r: (np.fft.fft, pnp.fft.fft, (r.standard_normal((3, 64))
                                        + 1j * r.standard_normal((3, 64))).astype(np.complex64)),
    lambda r: (np.fft.irfft, pnp.fft.irfft, (r.standard_normal((3, 33))
                                            + 1j * r.standard_normal((3, 33))).astype(np.complex64)),
], ids=["length6", "length1024", "float64", "complex", "irfft"])
def test_not_routed_stay_host_steps(make):
    np_fn, pnp_fn, x = make(np.random.default_rng(7))
    (got,), kinds = _compiled(pnp_fn, x)
    assert "native fft" not in kinds and "fft" in kinds
    ref = np_fn(x.astype(np.complex128 if np.iscomplexobj(x) else np.float64))
    _close(got, ref, max(x.shape[-1], 2))


def test_export_c_refuses_the_fft_library():
    with pytest.raises(PlaitValueError, match="'fft'.*FFT library"):
        plait.export(pnp.fft.rfft2, format="c")(np.ones((8, 8), np.float32))
