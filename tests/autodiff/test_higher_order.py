"""Higher-order derivatives against closed forms, and compositions of transformations."""
import numpy as np
import pytest

import plait
from plait import lax
from plait.test_util import check_grads


def test_fourth_derivative_of_tanh():
    d = lax.tanh
    for _ in range(4):
        d = plait.grad(d)
    for x in (-1.3, 0.2, 0.7):
        t = np.tanh(x)
        np.testing.assert_allclose(float(d(x)), 8 * t * (1 - t * t) * (2 - 3 * t * t),
                                   rtol=1e-12, atol=1e-12)


def test_fourth_derivative_of_sin_exp_all_modes():
    f = lambda x: lax.mul(lax.sin(x), lax.exp(x))  # noqa: E731
    x = 0.6
    want = -4 * np.exp(x) * np.sin(x)
    rev4 = plait.grad(plait.grad(plait.grad(plait.grad(f))))
    fwd4 = plait.jacfwd(plait.jacfwd(plait.jacfwd(plait.jacfwd(f))))
    mixed = plait.jacfwd(plait.grad(plait.jacrev(plait.grad(f))))
    jitted = plait.jit(plait.grad(plait.jit(plait.grad(plait.grad(plait.jit(plait.grad(f)))))))
    for d in (rev4, fwd4, mixed, jitted):
        np.testing.assert_allclose(float(d(x)), want, rtol=1e-12)


def test_hessian_of_quadratic_form_is_a_plus_a_transpose():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4))
    x = rng.standard_normal(4)

    def quad(x):
        return lax.reduce_sum(lax.mul(x, lax.dot(a, x)), (0,))
    h = plait.hessian(quad)(x)
    np.testing.assert_allclose(np.asarray(h), a + a.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(plait.jit(plait.hessian(quad))(x)), a + a.T,
                               rtol=1e-12, atol=1e-12)


def test_jvp_of_grad_is_a_hessian_vector_product():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3))
    a = a @ a.T
    x, v = rng.standard_normal(3), rng.standard_normal(3)

    def f(x):
        return lax.mul(0.5, lax.reduce_sum(lax.mul(x, lax.dot(a, x)), (0,)))
    hvp = plait.jit(lambda x, v: plait.jvp(plait.grad(f), (x,), (v,))[1])
    np.testing.assert_allclose(np.asarray(hvp(x, v)), a @ v, rtol=1e-12)


def _mlp_params(rng, sizes):
    return [(rng.standard_normal((m, n)) * 0.5, rng.standard_normal(n) * 0.1)
            for m, n in zip(sizes[:-1], sizes[1:])]


def _loss(params, x, y):
    for w, b in params[:-1]:
        x = lax.tanh(lax.add(lax.dot(x, w), lax.broadcast_in_dim(b, (x.shape[0], b.shape[0]),
                                                                 (1,))))
    w, b = params[-1]
    out = lax.add(lax.dot(x, w), lax.broadcast_in_dim(b, (x.shape[0], b.shape[0]), (1,)))
    d = lax.sub(out, y)
    return lax.reduce_sum(lax.mul(d, d), (0, 1))


def _flat(tree):
    return np.concatenate([np.ravel(np.asarray(v)) for v in plait.tree_util.tree_leaves(tree)])


def test_composition_matrix_on_an_mlp_loss():
    rng = np.random.default_rng(2)
    params = _mlp_params(rng, [3, 4, 2])
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    ref = _flat(plait.grad(_loss)(params, x, y))
    f_p = lambda p: _loss(p, x, y)  # noqa: E731
    variants = {
        "jit(grad)": plait.jit(plait.grad(_loss))(params, x, y),
        "grad(jit)": plait.grad(plait.jit(_loss))(params, x, y),
        "jit(grad(jit))": plait.jit(plait.grad(plait.jit(_loss)))(params, x, y),
        "vjp": plait.vjp(f_p, params)[1](1.0)[0],
        "jacrev": plait.jacrev(_loss)(params, x, y),
        "jacfwd": plait.jacfwd(_loss)(params, x, y),
        "jit(jacfwd)": plait.jit(plait.jacfwd(_loss))(params, x, y),
        "value_and_grad": plait.value_and_grad(_loss)(params, x, y)[1],
    }
    for name, g in variants.items():
        np.testing.assert_allclose(_flat(g), ref, rtol=1e-10, atol=1e-12, err_msg=name)
    # forward mode along the gradient direction equals |grad|^2
    _, t = plait.jvp(f_p, (params,), (plait.grad(_loss)(params, x, y),))
    np.testing.assert_allclose(float(t), ref @ ref, rtol=1e-10)
    _, lin = plait.linearize(f_p, params)
    np.testing.assert_allclose(float(lin(plait.grad(_loss)(params, x, y))), ref @ ref,
                               rtol=1e-10)


def test_mlp_loss_check_grads_order2():
    rng = np.random.default_rng(3)
    params = _mlp_params(rng, [3, 4, 2])
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    check_grads(lambda p: _loss(p, x, y), (params,), order=2)


def test_check_grads_catches_a_wrong_second_derivative():
    @plait.custom_jvp
    def f(x):
        return lax.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), lax.mul(t, lax.stop_gradient(lax.cos(x)))

    check_grads(f, (np.array([0.3, 1.1]),), order=1)
    with pytest.raises(AssertionError):
        check_grads(f, (np.array([0.3, 1.1]),), order=2)


def test_grad_of_jit_does_not_retrace_on_repeated_calls():
    f = plait.jit(lambda x: lax.reduce_sum(lax.mul(lax.sin(x), x), (0,)))
    g = plait.grad(f)
    x = np.linspace(0.1, 1.0, 4)
    first = np.asarray(g(x))
    traces, compiles = plait.metrics.get("traces"), plait.metrics.get("compiles")
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(g(x)), first)
    assert plait.metrics.get("traces") == traces
    assert plait.metrics.get("compiles") == compiles
    np.testing.assert_allclose(first, np.sin(x) + x * np.cos(x), rtol=1e-12)
