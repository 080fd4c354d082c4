"""plait.numpy.fft vs numpy.fft, and the ``fft`` primitive's transforms.

Every transform is compared with NumPy (values, shapes and NumPy 2's result dtypes)
over shapes, dtypes, ``n``/``s`` padding and truncation, ``axis``/``axes`` and all
norms, eagerly and compiled by the native backend (all cases of a group in one jit).
The primitive's transposes are checked by the dot-product identity
``Re<y, A x> == Re<A^T y, x>`` (JAX's bilinear pairing), derivatives by finite
differences at order 2, ``vmap`` against a loop, and the primitive inside compiled
``scan``/``fori_loop`` bodies.
"""
import itertools

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import lax
from plait.errors import PlaitTypeError, PlaitValueError
from plait.test_util import check_grads

from extra_helpers import assert_same, rand

NORMS = (None, "backward", "ortho", "forward")
REAL = (np.float16, np.float32, np.float64, np.int32, np.bool_)
ANY = REAL + (np.complex64, np.complex128)


def _cases_1d():
    """(name, shape, dtype, kwargs) for the 1-D transforms."""
    out = []
    geoms = [((8,), {}), ((7,), {}), ((1,), {}), ((3, 5), {"axis": 0}), ((3, 5), {"n": 3}),
             ((3, 5), {"n": 9}), ((2, 3, 4), {"axis": 1, "n": 6}), ((2, 6), {"axis": -2}),
             ((0, 4), {})]
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
        dts = REAL if name in ("rfft", "ihfft") else ANY
        for k, ((shape, kw), dt) in enumerate(itertools.product(geoms, dts)):
            if name in ("irfft", "hfft") and shape == (1,) and "n" not in kw:
                kw = dict(kw, n=1)          # the default 2*(1-1) points is an error
            out.append((name, shape, dt, dict(kw, norm=NORMS[k % len(NORMS)])))
    return out


def _cases_nd():
    out = []
    geoms = [((4, 6), {}), ((3, 5), {"s": (4, 3)}), ((2, 3, 5), {}),
             ((2, 3, 5), {"axes": (0, 2)}), ((2, 3, 5), {"s": (6, 4), "axes": (2, 0)}),
             ((2, 3, 4), {"s": (5, 7)}), ((3, 4), {"axes": (1,)}),
             ((2, 3, 4), {"s": (-1, 6), "axes": (1, 2)}), ((3, 4), {"axes": (0, 0)}),
             ((1, 1), {}), ((5, 2, 3), {"axes": (-1, -2)})]
    for name in ("fftn", "ifftn", "rfftn", "irfftn"):
        dts = REAL if name == "rfftn" else ANY
        for k, ((shape, kw), dt) in enumerate(itertools.product(geoms, dts)):
            if name == "irfftn" and shape == (1, 1):
                kw = {"s": (1, 1)}
            out.append((name, shape, dt, dict(kw, norm=NORMS[k % len(NORMS)])))
    for name in ("fft2", "ifft2", "rfft2", "irfft2"):
        dts = (np.float32, np.float64) if name == "rfft2" else (np.float32, np.complex128)
        for (shape, kw), dt, norm in itertools.product(
                [((4, 6), {}), ((2, 3, 5), {"s": (4, 4)}), ((3, 4, 2), {"axes": (0, 1)})],
                dts, ("ortho", "forward")):
            out.append((name, shape, dt, dict(kw, norm=norm)))
    return out


CASES_1D, CASES_ND = _cases_1d(), _cases_nd()


def _run(cases, seed):
    args = [rand(shape, dt, seed + i) for i, (_, shape, dt, _) in enumerate(cases)]
    # float16 is computed in float32 by both; NumPy also rounds its norm factor to float16
    # (a 2e-4 relative error) where plait scales in float32, so the oracle gets float32
    want = [getattr(np.fft, name)(a.astype(np.float32) if a.dtype == np.float16 else a, **kw)
            for a, (name, _, _, kw) in zip(args, cases)]
    return args, want


def _check_all(cases, got, want):
    for c, g, w in zip(cases, got, want):
        try:
            assert_same(g, w, rtol=1e-4 if np.asarray(w).dtype.itemsize <= 8 else 1e-11)
        except AssertionError as e:
            raise AssertionError(f"{c}: {e}") from None


def _batched(cases):
    def f(*xs):
        return [getattr(pnp.fft, name)(x, **kw) for x, (name, _, _, kw) in zip(xs, cases)]
    return f


@pytest.mark.filterwarnings("ignore:`axes` should not be `None`:DeprecationWarning")  # NumPy's
@pytest.mark.parametrize("group", ["1d", "nd"])
def test_against_numpy_eager_and_native_jit(group):
    cases = CASES_1D if group == "1d" else CASES_ND
    args, want = _run(cases, 0)
    f = _batched(cases)
    _check_all(cases, f(*args), want)
    _check_all(cases, plait.jit(f, backend="native")(*args), want)


def test_numpy2_result_dtypes():
    for dt, c, r in [(np.float16, np.complex64, np.float32), (np.float32, np.complex64,
                                                               np.float32),
                     (np.int8, np.complex128, np.float64), (np.bool_, np.complex128, np.float64),
                     (np.complex64, np.complex64, np.float32)]:
        x = rand((4,), dt)
        assert pnp.fft.fft(x).dtype == c
        assert pnp.fft.irfft(x).dtype == r and pnp.fft.hfft(x).dtype == r
        if dt != np.complex64:
            assert pnp.fft.rfft(x).dtype == c


def test_freqs_and_shifts():
    for n, d in [(1, 1.0), (4, 0.1), (7, 2.5), (8, 1)]:
        assert_same(pnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
        assert_same(pnp.fft.rfftfreq(n, d=d), np.fft.rfftfreq(n, d))
    assert_same(pnp.fft.fftfreq(5, dtype=np.float32), np.fft.fftfreq(5).astype(np.float32))
    assert_same(pnp.fft.rfftfreq(6, 0.5, device="cpu"), np.fft.rfftfreq(6, 0.5))
    assert_same(plait.jit(lambda d: pnp.fft.fftfreq(6, d))(np.float64(0.25)),
                np.fft.fftfreq(6, 0.25))
    x = rand((4, 5, 3), np.int32)
    for axes in (None, 0, (1,), (0, 2), (-1, 1)):
        assert_same(pnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
        assert_same(pnp.fft.ifftshift(x, axes=axes), np.fft.ifftshift(x, axes=axes))
    assert_same(pnp.fft.ifftshift(pnp.fft.fftshift(x)), x)


# --- the primitive: adjoint identity, derivatives, vmap ---------------------------------
PRIM = [("FFT", (2, 5), (5,)), ("FFT", (3, 4), (3, 4)), ("IFFT", (2, 3, 4), (3, 4)),
        ("RFFT", (2, 6), (6,)), ("RFFT", (3, 5), (3, 5)), ("RFFT", (2, 2, 4), (2, 4)),
        ("IRFFT", (2, 4), (6,)), ("IRFFT", (2, 4), (7,)), ("IRFFT", (3, 3), (3, 4)),
        ("IRFFT", (1,), (1,)), ("RFFT", (1,), (1,))]


def _operand(fft_type, shape, dtype, seed):
    return rand(shape, dtype if fft_type == "RFFT" else
                {np.float32: np.complex64, np.float64: np.complex128}[dtype], seed)


@pytest.mark.parametrize("jit", [False, True])
def test_adjoint_identity(jit):
    """<ct, A x> == <A^T ct, x> (real part of the unconjugated sum) for every fft_type."""
    for fft_type, shape, lengths in PRIM:
        x = _operand(fft_type, shape, np.float64, 1)

        def pull(x, ct, _t=fft_type, _l=lengths):
            y, vjp = plait.vjp(lambda v: lax.fft(v, _t, _l), x)
            return y, vjp(ct)[0]
        y0 = np.asarray(lax.fft(x, fft_type, lengths))
        ct = rand(y0.shape, y0.dtype, 2)
        y, xt = (plait.jit(pull, backend="native") if jit else pull)(x, ct)
        lhs = np.real(np.sum(ct * np.asarray(y)))
        rhs = np.real(np.sum(np.asarray(xt) * x))
        assert np.asarray(xt).dtype == x.dtype
        np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12, err_msg=fft_type)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_primitive_grads_order2(dtype):
    for fft_type, shape, lengths in PRIM:
        x = _operand(fft_type, shape, dtype, 3)
        check_grads(lambda v, _t=fft_type, _l=lengths: lax.fft(v, _t, _l), (x,), order=2,
                    modes=("fwd", "rev"))


def test_numpy_grads_with_norms_and_padding():
    x = rand((3, 6), np.float64, 4)
    z = rand((3, 6), np.complex128, 5)
    fns = [lambda v: pnp.fft.rfft(v, n=8, norm="ortho"),
           lambda v: pnp.fft.irfft(v, n=5, axis=0, norm="forward"),
           lambda v: pnp.fft.fftn(v, s=(4, 4)),
           lambda v: pnp.fft.hfft(v, n=7),
           lambda v: pnp.fft.ihfft(v, norm="forward"),
           lambda v: pnp.fft.irfft2(v, s=(2, 9)),
           lambda v: pnp.sum(pnp.abs(pnp.fft.rfft2(v)) ** 2)]
    for f in fns:
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    check_grads(lambda v: pnp.fft.ifft2(v, norm="ortho"), (z,), order=1, modes=("fwd", "rev"))
    # Parseval: the gradient of sum |rfft2|^2 / N (with the Hermitian weights) is 2 x
    g = plait.grad(lambda v: pnp.sum(pnp.abs(pnp.fft.fft2(v)) ** 2) / v.size)(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-12, atol=1e-12)


def test_vmap_matches_loop():
    xs = rand((3, 4, 6), np.float32, 6)
    zs = rand((4, 3, 5), np.complex128, 7)
    fns = [(lambda v: pnp.fft.rfft2(v, s=(4, 8)), xs, 0),
           (lambda v: pnp.fft.irfft(v, n=6, axis=0), xs, 0),
           (lambda v: pnp.fft.fft(v, axis=0, norm="ortho"), zs, 1),
           (lambda v: pnp.fft.ifftn(v), zs, 2),
           (lambda v: lax.fft(v, "irfft", (8,)), zs, 1)]
    for f, stack, ax in fns:
        want = np.stack([np.asarray(f(np.take(stack, i, ax))) for i in range(stack.shape[ax])])
        assert_same(plait.vmap(f, in_axes=ax)(stack), want)
        assert_same(plait.jit(plait.vmap(f, in_axes=ax), backend="native")(stack), want)


def test_inside_compiled_loops_with_grad():
    """fft in fori_loop and scan bodies, compiled natively, differentiated through scan."""
    x = rand((6,), np.float64, 8)

    def smooth(v, steps):
        def body(i, v):
            return pnp.fft.irfft(pnp.fft.rfft(v) * pnp.array([1.0, 0.5, 0.25, 0.1]), n=6)
        return plait.lax.fori_loop(0, steps, body, v)
    want = x
    for _ in range(3):
        want = np.fft.irfft(np.fft.rfft(want) * np.array([1.0, 0.5, 0.25, 0.1]), n=6)
    assert_same(plait.jit(smooth, static_argnums=1, backend="native")(x, 3), want)
    assert_same(plait.jit(smooth, backend="native")(x, 3), want)   # a while loop

    def scanned(v):
        def step(c, _):
            c = pnp.real(pnp.fft.ifft(pnp.fft.fft(c) * pnp.exp(-0.1j * pnp.arange(6))))
            return c, pnp.sum(c * c)
        c, ys = plait.lax.scan(step, v, None, length=4)
        return pnp.sum(ys) + pnp.sum(c)
    got = plait.jit(scanned, backend="native")(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(scanned(x)), rtol=1e-12)
    check_grads(scanned, (x,), order=2, modes=("fwd", "rev"))
    g = plait.jit(plait.grad(scanned), backend="native")(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(plait.grad(scanned)(x)), rtol=1e-10)


# --- errors --------------------------------------------------------------------------
def test_errors_name_the_problem_and_the_line():
    x = np.ones((4, 6))
    bad = [(lambda: pnp.fft.fft(x, n=0), PlaitValueError, "number of FFT data points"),
           (lambda: pnp.fft.irfft(np.ones(1)), PlaitValueError, "number of FFT data points"),
           (lambda: pnp.fft.fft(x, norm="unit"), PlaitValueError, "invalid norm"),
           (lambda: pnp.fft.rfft(x + 1j), PlaitTypeError, "real input"),
           (lambda: pnp.fft.fftn(x, s=(3,), axes=(0, 1)), PlaitValueError, "different lengths"),
           (lambda: pnp.fft.fft(np.float64(1.0)), PlaitValueError, "0-d"),
           (lambda: pnp.fft.fft(x, axis=2), IndexError, "out of bounds"),
           (lambda: lax.fft(x, "fft", (6,)), PlaitTypeError, "complex64 or complex128"),
           (lambda: lax.fft(x + 0j, "rfft", (6,)), PlaitTypeError, "float32 or float64"),
           (lambda: lax.fft(x + 0j, "fft", (5,)), PlaitValueError, "trailing axes"),
           (lambda: lax.fft(x + 0j, "irfft", (6,)), PlaitValueError, "trailing axes"),
           (lambda: lax.fft(x + 0j, "dct", (6,)), PlaitValueError, "unknown fft_type"),
           (lambda: plait.jit(lambda v: lax.fft(v, "fft", (4, 6, 1)))(x + 0j), PlaitValueError,
            "fft_lengths")]
    for fn, exc, text in bad:
        with pytest.raises(exc, match=text) as info:
            fn()
        assert "test_extra_fft.py" in str(info.value), str(info.value)


def test_numpy_fallback_matches_scipy_impl(monkeypatch):
    """The impl without SciPy (numpy.fft axis by axis) agrees with the SciPy one."""
    import sys
    mod = sys.modules["plait.lax.fft"]   # the module (the attribute plait.lax.fft is the function)
    for fft_type, shape, lengths in PRIM + [("IFFT", (2, 3, 4, 5), (3, 4, 5)),
                                            ("RFFT", (2, 3, 4, 5), (3, 4, 5)),
                                            ("IRFFT", (2, 3, 4, 3), (3, 4, 5))]:
        for dt in (np.float32, np.float64):
            x = _operand(fft_type, shape, dt, 9)
            params = dict(fft_type=mod.FftType[fft_type], fft_lengths=lengths)
            with_default = mod.fft_p.impl(x, **params)
            monkeypatch.setattr(mod, "_scipy_fft", lambda: None)
            fallback = mod.fft_p.impl(x, **params)
            monkeypatch.undo()
            assert_same(fallback, with_default, rtol=1e-5 if dt == np.float32 else 1e-12)
