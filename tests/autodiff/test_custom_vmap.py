"""custom_vmap / sequential_vmap, and custom_jvp / custom_vjp under vmap with some
arguments batched and others not (values against NumPy and finite-difference-free
closed forms)."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import PlaitTypeError

X = np.array([0.3, 1.1, -0.7])
Y = np.float64(2.5)


def _custom_sin_times():
    calls = []

    @plait.custom_vmap
    def f(x, y):
        return pnp.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        calls.append((axis_size, list(in_batched)))
        xb, yb = in_batched
        y = y if not yb else y            # batched arguments arrive with the batch at 0
        return pnp.sin(x) * y, True
    return f, calls


def test_custom_vmap_rule_is_used_eager_and_jit():
    f, calls = _custom_sin_times()
    assert float(f(X[0], Y)) == pytest.approx(np.sin(X[0]) * Y)
    assert calls == []                                # no vmap: no rule
    for wrap in (lambda g: g, plait.jit):
        out = wrap(plait.vmap(f, in_axes=(0, None)))(X, Y)
        np.testing.assert_allclose(np.asarray(out), np.sin(X) * Y)
    assert calls == [(3, [True, False])] * 2
    calls.clear()
    out = plait.vmap(f, in_axes=(None, 0))(X[0], np.array([1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(out), np.sin(X[0]) * np.array([1.0, 2.0]))
    assert calls == [(2, [False, True])]


def test_custom_vmap_nested_and_grad():
    f, calls = _custom_sin_times()
    xs = np.stack([X, 2 * X])
    out = plait.vmap(plait.vmap(f, in_axes=(0, None)), in_axes=(0, None))(xs, Y)
    np.testing.assert_allclose(np.asarray(out), np.sin(xs) * Y)
    # the innermost vmap calls the rule; outer vmaps batch the rule's operations
    assert calls == [(3, [True, False])]
    g = plait.grad(lambda x: pnp.sum(plait.vmap(f, in_axes=(0, None))(x, Y)))(X)
    np.testing.assert_allclose(np.asarray(g), np.cos(X) * Y, rtol=1e-12)
    g2 = plait.vmap(plait.grad(f), in_axes=(0, None))(X, Y)
    np.testing.assert_allclose(np.asarray(g2), np.cos(X) * Y, rtol=1e-12)


def test_custom_vmap_errors():
    @plait.custom_vmap
    def f(x):
        return x * 2

    @f.def_vmap
    def rule(n, in_batched, x):
        return x[0], True                             # wrong shape for a batched output
    with pytest.raises(PlaitTypeError, match="vmap rule of f returned shape"):
        plait.vmap(f)(X)

    @plait.custom_vmap
    def h(x):
        return x

    with pytest.raises(plait.errors.PlaitError, match="def_vmap"):
        plait.vmap(h)(X)


def test_sequential_vmap_calls_per_element(capsys):
    @plait.custom_batching.sequential_vmap
    def f(x):
        plait.debug.print("elem {}", x)
        return pnp.sum(x) + 1
    out = plait.vmap(f)(np.arange(6.0).reshape(3, 2))
    np.testing.assert_allclose(np.asarray(out), [2.0, 6.0, 10.0])
    assert capsys.readouterr().out.split("\n")[:3] == ["elem [0. 1.]", "elem [2. 3.]",
                                                        "elem [4. 5.]"]


# --- custom_jvp / custom_vjp under vmap, per-argument batching ---------------------

@plait.custom_jvp
def scaled_exp(x, s):
    return pnp.exp(x) * s


@scaled_exp.defjvp
def _scaled_exp_jvp(primals, tangents):
    x, s = primals
    tx, ts = tangents
    y = pnp.exp(x) * s
    return y, y * tx + pnp.exp(x) * ts


@plait.custom_vjp
def clip_grad_mul(x, w):
    return x * w


def _cgm_fwd(x, w):
    return x * w, (x, w)


def _cgm_bwd(res, ct):
    x, w = res
    return pnp.clip(ct * w, -1.0, 1.0), ct * x       # clipped cotangent for x


clip_grad_mul.defvjp(_cgm_fwd, _cgm_bwd)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
def test_custom_jvp_vmap_per_argument(in_axes):
    xs = X if in_axes[0] == 0 else X[0]
    ss = np.array([1.0, 2.0, 3.0]) if in_axes[1] == 0 else np.float64(2.0)
    ex, es = np.broadcast_arrays(xs, ss)
    out = plait.vmap(scaled_exp, in_axes=in_axes)(xs, ss)
    np.testing.assert_allclose(np.asarray(out), np.exp(ex) * es)
    gx, gs = plait.vmap(plait.grad(scaled_exp, argnums=(0, 1)), in_axes=in_axes)(xs, ss)
    np.testing.assert_allclose(np.asarray(gx), np.exp(ex) * es)
    np.testing.assert_allclose(np.asarray(gs), np.exp(ex))
    # grad of a vmapped sum: an unbatched argument's gradient sums over the batch
    g = plait.grad(lambda a, b: pnp.sum(plait.vmap(scaled_exp, in_axes=in_axes)(a, b)),
                   argnums=(0, 1))(xs, ss)
    np.testing.assert_allclose(np.asarray(g[1]), np.exp(ex).sum() if in_axes[1] is None
                               else np.exp(ex))


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0)])
def test_custom_vjp_vmap_per_argument(in_axes):
    xs = np.array([0.5, 3.0, -2.0]) if in_axes[0] == 0 else np.float64(0.5)
    ws = np.array([4.0, 0.1, -3.0]) if in_axes[1] == 0 else np.float64(4.0)
    ex, ew = np.broadcast_arrays(xs, ws)
    loss = lambda a, b: pnp.sum(plait.vmap(clip_grad_mul, in_axes=in_axes)(a, b))  # noqa
    gx, gw = plait.jit(plait.grad(loss, argnums=(0, 1)))(xs, ws)
    cx, cw = np.clip(ew, -1, 1), ex
    np.testing.assert_allclose(np.asarray(gx), cx if in_axes[0] == 0 else cx.sum())
    np.testing.assert_allclose(np.asarray(gw), cw if in_axes[1] == 0 else cw.sum())
    per = plait.vmap(plait.grad(clip_grad_mul, argnums=(0, 1)), in_axes=in_axes)(xs, ws)
    np.testing.assert_allclose(np.asarray(per[0]), cx)
    np.testing.assert_allclose(np.asarray(per[1]), cw)
