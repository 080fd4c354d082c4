"""User errors under differentiation (each a plait error naming the user's line),
zero tangents of non-differentiable outputs, stop_gradient, and complex numbers."""
import numpy as np
import pytest

import plait
from plait import lax
from plait.errors import PlaitTypeError, UnexpectedTracerError


def test_grad_of_non_scalar_output():
    with pytest.raises(PlaitTypeError, match=r"scalar output.*f64\[3\]") as e:
        plait.grad(lax.sin)(np.ones(3))
    assert "test_ad_errors_complex.py" in str(e.value)


def test_grad_with_respect_to_an_integer_names_the_argument():
    def f(x, count):
        return lax.mul(x, lax.convert_element_type(count, np.float64))
    with pytest.raises(PlaitTypeError, match="'count'.*int64") as e:
        plait.grad(f, argnums=1)(1.0, np.int64(3))
    assert "test_ad_errors_complex.py" in str(e.value)
    g = plait.grad(f, argnums=(0, 1), allow_int=True)(1.5, np.int64(3))
    assert float(g[0]) == 3.0 and int(g[1]) == 0


def test_leaked_tracer_from_grad():
    leaked = []

    def f(x):
        leaked.append(x)
        return lax.mul(x, x)
    plait.grad(f)(1.0)
    with pytest.raises(UnexpectedTracerError, match="leaked") as e:
        lax.add(leaked[0], 1.0)
    assert "test_ad_errors_complex.py" in str(e.value)


def test_non_differentiable_outputs_have_zero_tangents():
    x = np.array([0.3, 2.0, -1.0])
    _, t = plait.jvp(lambda x: lax.argmax(x, 0), (x,), (np.ones(3),))
    assert int(t) == 0
    _, t = plait.jvp(lambda x: lax.gt(x, 0.5), (x,), (np.ones(3),))
    assert not np.any(np.asarray(t))
    g = plait.grad(lambda x: lax.reduce_sum(lax.mul(lax.stop_gradient(x), x), (0,)))(x)
    np.testing.assert_allclose(np.asarray(g), x)
    g = plait.grad(lambda x: lax.reduce_sum(lax.floor(x), (0,)))(x)
    np.testing.assert_allclose(np.asarray(g), 0.0)


def test_has_aux_and_argnums_tuple():
    def f(x, y):
        return lax.mul(x, y), {"aux": lax.sin(x)}
    (v, aux), (gx, gy) = plait.value_and_grad(f, argnums=(0, 1), has_aux=True)(2.0, 3.0)
    assert float(v) == 6.0 and float(gx) == 3.0 and float(gy) == 2.0
    np.testing.assert_allclose(float(aux["aux"]), np.sin(2.0))


def test_grad_of_real_function_of_complex_input_is_conjugate():
    """JAX's convention: grad f(z) = df/dx - i df/dy = conj(2 df/dz̄)."""
    z = np.array([1.0 + 2.0j, -0.5 + 0.3j])

    def abs2(z):
        return lax.reduce_sum(lax.real(lax.mul(z, lax.conj(z))), (0,))
    np.testing.assert_allclose(np.asarray(plait.grad(abs2)(z)), 2 * np.conj(z))

    def re_sq(z):   # f = x^2 - y^2 + 3y
        r = lax.real(lax.mul(z, z))
        return lax.reduce_sum(lax.add(r, lax.mul(lax.imag(z), 3.0)), (0,))
    x, y = z.real, z.imag
    np.testing.assert_allclose(np.asarray(plait.grad(re_sq)(z)), 2 * x - 1j * (-2 * y + 3))


def test_holomorphic_derivatives():
    z = np.complex128(0.3 + 0.7j)
    f = lambda z: lax.mul(lax.sin(z), z)  # noqa: E731
    want = np.cos(z) * z + np.sin(z)
    np.testing.assert_allclose(complex(plait.grad(f, holomorphic=True)(z)), want)
    zs = np.array([0.3 + 0.7j, -1.0 + 0.1j])
    np.testing.assert_allclose(np.asarray(plait.jacfwd(f, holomorphic=True)(zs)),
                               np.diag(np.cos(zs) * zs + np.sin(zs)))
    np.testing.assert_allclose(np.asarray(plait.jacrev(f, holomorphic=True)(zs)),
                               np.diag(np.cos(zs) * zs + np.sin(zs)))
    with pytest.raises(PlaitTypeError, match="holomorphic=True"):
        plait.grad(f)(z)
    with pytest.raises(PlaitTypeError, match="complex inputs"):
        plait.grad(lambda x: lax.complex(x, x), holomorphic=True)(1.0)


def test_jacobians_over_pytrees_have_out_plus_in_shapes():
    def f(p):
        s = lax.broadcast_in_dim(lax.reduce_sum(p["b"], (0,)), (2, 3), ())
        return {"y": lax.mul(p["a"], s)}
    p = {"a": np.ones((2, 3)), "b": np.arange(4.0)}
    for jac in (plait.jacfwd, plait.jacrev):
        j = jac(f)(p)
        assert np.asarray(j["y"]["a"]).shape == (2, 3, 2, 3)
        assert np.asarray(j["y"]["b"]).shape == (2, 3, 4)
        np.testing.assert_allclose(np.asarray(j["y"]["b"]), np.ones((2, 3, 4)))
