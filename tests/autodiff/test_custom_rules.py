"""custom_jvp / custom_vjp: the user's rules are used, compose with jit and higher
order, and give finite gradients where the naive formula overflows."""
import functools

import numpy as np
import pytest

import plait
from plait import lax
from plait.errors import PlaitError


def _bcast(v, shape):
    return lax.broadcast_in_dim(v, shape, ())


def _make_logsumexp(calls):
    @plait.custom_jvp
    def logsumexp(x):
        m = lax.stop_gradient(lax.reduce_max(x, (0,)))
        return lax.add(m, lax.log(lax.reduce_sum(lax.exp(lax.sub(x, _bcast(m, x.shape))),
                                                 (0,))))

    @logsumexp.defjvp
    def _jvp(primals, tangents):
        calls.append("jvp")
        (x,), (t,) = primals, tangents
        ans = logsumexp(x)
        return ans, lax.reduce_sum(lax.mul(lax.exp(lax.sub(x, _bcast(ans, x.shape))), t),
                                   (0,))
    return logsumexp


def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_custom_jvp_rule_is_used_and_stable():
    calls = []
    lse = _make_logsumexp(calls)
    x = np.array([1000.0, 1001.0, 999.0])
    for g in (plait.grad(lse), plait.jit(plait.grad(lse)), plait.grad(plait.jit(lse))):
        n = len(calls)
        out = np.asarray(g(x))
        assert np.all(np.isfinite(out))
        np.testing.assert_allclose(out, _softmax(x), rtol=1e-12)
        assert len(calls) > n
    naive = plait.grad(lambda x: lax.log(lax.reduce_sum(lax.exp(x), (0,))))(x)
    assert not np.all(np.isfinite(np.asarray(naive)))


def test_custom_jvp_higher_order_and_forward():
    lse = _make_logsumexp([])
    x = np.array([0.3, -0.2, 0.5])
    p = _softmax(x)
    np.testing.assert_allclose(np.asarray(plait.hessian(lse)(x)), np.diag(p) - np.outer(p, p),
                               rtol=1e-10, atol=1e-12)
    _, t = plait.jvp(lse, (x,), (np.ones(3),))
    np.testing.assert_allclose(float(t), 1.0, rtol=1e-12)


def test_custom_jvp_nondiff_argnums():
    @functools.partial(plait.custom_jvp, nondiff_argnums=(0,))
    def scale(k, x):
        return lax.mul(x, float(k))

    @scale.defjvp
    def _jvp(k, primals, tangents):
        return scale(k, primals[0]), lax.mul(tangents[0], 10.0 * k)
    assert float(plait.grad(lambda x: scale(2, x), )(1.5)) == 20.0


def test_custom_vjp_rule_is_used_under_all_compositions():
    calls = []

    @plait.custom_vjp
    def clip_grad(x):
        return lax.sin(x)

    def fwd(x):
        return lax.sin(x), (lax.cos(x),)

    def bwd(res, g):
        calls.append("bwd")
        return (lax.clamp(-0.5, lax.mul(res[0], g), 0.5),)
    clip_grad.defvjp(fwd, bwd)

    for g in (plait.grad(clip_grad), plait.jit(plait.grad(clip_grad)),
              plait.grad(plait.jit(clip_grad))):
        n = len(calls)
        assert float(g(0.1)) == 0.5          # clipped: the user's rule ran
        assert float(g(1.4)) == pytest.approx(np.cos(1.4))
        assert len(calls) > n
    assert float(plait.grad(plait.grad(clip_grad))(1.4)) == pytest.approx(-np.sin(1.4))


def test_custom_vjp_nondiff_argnums_and_pytrees():
    @functools.partial(plait.custom_vjp, nondiff_argnums=(0,))
    def f(n, xs):
        return lax.mul(xs["a"], xs["b"])

    def fwd(n, xs):
        return f(n, xs), (xs["a"], xs["b"])

    def bwd(n, res, g):
        a, b = res
        return ({"a": lax.mul(lax.mul(g, b), float(n)), "b": lax.mul(g, a)},)
    f.defvjp(fwd, bwd)
    g = plait.grad(lambda xs: f(3, xs))({"a": 2.0, "b": 5.0})
    assert float(g["a"]) == 15.0 and float(g["b"]) == 2.0


def test_forward_mode_through_custom_vjp_is_a_clear_error():
    @plait.custom_vjp
    def f(x):
        return lax.sin(x)
    f.defvjp(lambda x: (lax.sin(x), (x,)), lambda res, g: (g,))
    with pytest.raises(PlaitError, match="custom_vjp"):
        plait.jvp(f, (0.3,), (1.0,))


def test_custom_rule_missing_is_a_clear_error():
    f = plait.custom_jvp(lambda x: x)
    with pytest.raises(PlaitError, match="defjvp"):
        plait.grad(f)(1.0)
