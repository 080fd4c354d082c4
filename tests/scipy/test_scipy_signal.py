"""plait.scipy.signal and plait.scipy.ndimage against scipy.signal / scipy.ndimage."""
import numpy as np
import pytest
import scipy.ndimage as snd
import scipy.signal as ssg

import plait
import plait.scipy.ndimage as pnd
import plait.scipy.signal as psg
from plait.errors import PlaitValueError

RNG = np.random.default_rng(0)
SHAPES = [((9,), (4,)), ((4,), (9,)), ((9, 6), (3, 4)), ((3, 4), (9, 6)), ((5, 4, 3), (2, 3, 2))]


def _pairs():
    out = []
    for sa, sb in SHAPES:
        a, b = RNG.normal(size=sa), RNG.normal(size=sb)
        for mode in ("full", "same", "valid"):
            if mode == "valid" and not (all(x >= y for x, y in zip(sa, sb))
                                        or all(x <= y for x, y in zip(sa, sb))):
                continue
            out.append((a, b, mode))
    return out


@pytest.mark.parametrize("method", ["direct", "fft"])
def test_convolve_correlate_all_modes(method):
    cases = _pairs()
    got = plait.jit(lambda ab: [(psg.convolve(a, b, m, method), psg.correlate(a, b, m, method))
                                for (a, b), (_, _, m) in zip(ab, cases)])([(a, b) for a, b, _ in cases])
    for (conv, corr), (a, b, m) in zip(got, cases):
        np.testing.assert_allclose(np.asarray(conv), ssg.convolve(a, b, m, method=method),
                                   atol=1e-12, err_msg=f"convolve {a.shape} {b.shape} {m}")
        np.testing.assert_allclose(np.asarray(corr), ssg.correlate(a, b, m, method=method),
                                   atol=1e-12, err_msg=f"correlate {a.shape} {b.shape} {m}")


def test_2d_forms_float32_and_errors():
    a = RNG.normal(size=(8, 7)).astype(np.float32)
    k = RNG.normal(size=(3, 3)).astype(np.float32)
    for m in ("full", "same", "valid"):
        got = psg.convolve2d(a, k, m)
        assert np.asarray(got).dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), ssg.convolve2d(a, k, m), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(psg.correlate2d(a, k, m)), ssg.correlate2d(a, k, m),
                                   rtol=1e-5, atol=1e-5)
    with pytest.raises(PlaitValueError, match="valid"):
        psg.convolve(np.ones((3, 5)), np.ones((5, 3)), "valid")
    with pytest.raises(PlaitValueError, match="mode"):
        psg.convolve(np.ones(3), np.ones(2), "circular")
    with pytest.raises(PlaitValueError, match="boundary"):
        psg.convolve2d(a, k, boundary="wrap")


MODES = [("nearest", "nearest"), ("wrap", "grid-wrap"), ("mirror", "mirror"),
         ("reflect", "reflect"), ("constant", "grid-constant")]


@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_modes(order):
    img = RNG.normal(size=(5, 7))
    coords = np.stack([RNG.uniform(-6, 11, 80), RNG.uniform(-6, 13, 80)])
    coords[:, :5] = [[0, 4, 2, 1.5, 4.5], [0, 6, 3, 2.5, 6.5]]     # grid points and halves
    got = plait.jit(lambda im, c: [pnd.map_coordinates(im, [c[0], c[1]], order, mode=m, cval=0.5)
                                   for m, _ in MODES])(img, coords)
    for g, (m, sm) in zip(got, MODES):
        want = snd.map_coordinates(img, coords, order=order, mode=sm, cval=0.5)
        np.testing.assert_allclose(np.asarray(g), want, atol=1e-13, err_msg=m)


def test_map_coordinates_grad_and_errors():
    img = RNG.normal(size=(6,))
    f = plait.grad(lambda c: pnd.map_coordinates(img, [c], 1, mode="nearest").sum())
    c = np.array([0.3, 2.6, 4.1])
    want = img[np.floor(c).astype(int) + 1] - img[np.floor(c).astype(int)]
    np.testing.assert_allclose(np.asarray(f(c)), want, rtol=1e-13)
    with pytest.raises(PlaitValueError, match="order"):
        pnd.map_coordinates(img, [c], 3)
    with pytest.raises(PlaitValueError, match="coordinate arrays"):
        pnd.map_coordinates(img, [c, c], 1)
