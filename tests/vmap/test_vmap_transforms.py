"""vmap beyond single primitives: pytrees and axes, nesting, composition with grad,
jit, custom derivatives and autograph, control flow with batched predicates and
carries, and per-lane indices. The oracle is always a Python loop over the lanes."""
from __future__ import annotations

import numpy as np
import pytest

import plait
import plait.lax as lax
import plait.numpy as pnp
from plait import vmap, grad, jit
from plait.errors import PlaitValueError, MissingRuleError


def loop(f, *args, in_axes=0, out_axis=0):
    """``stack([f(*lane_args) for each lane])`` with NumPy, the vmap oracle."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, axes)])
            for k in range(n)]
    if isinstance(outs[0], (tuple, list)):
        return tuple(np.stack([np.asarray(o[i]) for o in outs], out_axis)
                     for i in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs], out_axis)


def close(got, want, tol=1e-12):
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w, tol)
        return
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


rng = np.random.default_rng(0)


# --- per-example gradients --------------------------------------------------------
def mlp_loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = pnp.tanh(h @ w + b)
    w, b = params[-1]
    out = h @ w + b
    return pnp.mean((out - y) ** 2)


def _mlp_params(sizes):
    return [(rng.normal(size=(m, n)) / np.sqrt(m), rng.normal(size=n) * 0.1)
            for m, n in zip(sizes[:-1], sizes[1:])]


def test_per_example_gradients_of_mlp():
    params = _mlp_params([4, 8, 8, 2])
    xs, ys = rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    per_ex = vmap(grad(mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    for k in range(5):
        g = grad(mlp_loss)(params, xs[k], ys[k])
        for (gw, gb), (pw, pb) in zip(g, per_ex):
            close(pw[k], np.asarray(gw))
            close(pb[k], np.asarray(gb))


def test_jit_of_vmap_of_grad():
    params = _mlp_params([3, 5, 1])
    xs, ys = rng.normal(size=(4, 3)), rng.normal(size=(4, 1))
    f = jit(vmap(grad(mlp_loss), in_axes=(None, 0, 0)))
    got = f(params, xs, ys)
    want = vmap(grad(mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    for (gw, gb), (ww, wb) in zip(got, want):
        close(gw, np.asarray(ww))
        close(gb, np.asarray(wb))


def test_grad_of_vmap_equals_sum_of_grads():
    w = rng.normal(size=3)
    xs = rng.normal(size=(6, 3))

    def total(w):
        return pnp.sum(vmap(lambda x: pnp.sin(x @ w) ** 2)(xs))
    want = sum(np.asarray(grad(lambda w, x: pnp.sin(x @ w) ** 2)(w, x)) for x in xs)
    close(grad(total)(w), want)
    close(jit(grad(total))(w), want)


def test_vmap_of_jvp_and_jit():
    xs = rng.normal(size=(4, 3))
    f = lambda x: pnp.sum(pnp.exp(x) * x)
    got = vmap(lambda x: plait.jvp(f, (x,), (pnp.ones_like(x),))[1])(xs)
    close(got, loop(lambda x: np.sum(np.exp(x) * (x + 1)), xs))
    close(vmap(jit(f))(xs), loop(lambda x: np.sum(np.exp(x) * x), xs))


# --- axes, pytrees, nesting -----------------------------------------------------------
def test_nested_vmap_with_different_axes():
    a, b = rng.normal(size=(3, 4, 5)), rng.normal(size=(5, 4))
    f = lambda x, y: pnp.dot(x, y)          # (5,) . (5,)
    inner = vmap(f, in_axes=(0, 1))          # over the 4 axis: x (4,5) at 0, y (5,4) at 1
    outer = vmap(inner, in_axes=(0, None), out_axes=1)   # over the 3 axis of a
    got = outer(a, b)
    want = np.einsum("ijk,kj->ji", a, b)     # (4, 3)
    close(got, want)


@pytest.mark.parametrize("out_axes", [0, 1, 2, -1, -3])
def test_out_axes(out_axes):
    x = rng.normal(size=(2, 3, 4))
    got = vmap(lambda v: v * 2, in_axes=1, out_axes=out_axes)(x)
    want = np.moveaxis(np.moveaxis(x, 1, 0) * 2, 0, out_axes)
    close(got, want)


def test_pytree_in_and_out_axes():
    d = {"a": rng.normal(size=(3, 2)), "b": rng.normal(size=(2, 3))}
    c = rng.normal(size=2)

    def f(tree, c):
        return {"s": tree["a"] + tree["b"] + c, "t": pnp.sum(c)}
    got = vmap(f, in_axes=({"a": 0, "b": 1}, None), out_axes={"s": 1, "t": None})(d, c)
    close(got["s"], (d["a"] + d["b"].T + c).T)
    close(got["t"], np.asarray(np.sum(c)))


def test_unbatched_output_is_broadcast_and_axis_size():
    got = vmap(lambda x: pnp.float32(1.0) + 0 * 3, axis_size=4, in_axes=None)(np.ones(2))
    close(got, np.ones(4, np.float32))


def test_vmap_errors():
    with pytest.raises(PlaitValueError, match="inconsistent sizes"):
        vmap(lambda x, y: x + y)(np.ones(3), np.ones(4))
    with pytest.raises(PlaitValueError, match="out of range"):
        vmap(lambda x: x, in_axes=2)(np.ones((2, 2)))
    with pytest.raises(PlaitValueError, match="out_axes=None"):
        vmap(lambda x: x, out_axes=None)(np.ones(3))
    with pytest.raises(PlaitValueError, match="in_axes has 1 entries"):
        vmap(lambda x, y: x, in_axes=(0,))(np.ones(3), np.ones(3))
    with pytest.raises(PlaitValueError, match="at least one mapped"):
        vmap(lambda x: x, in_axes=None)(np.ones(3))


def test_missing_batch_rule_names_the_primitive():
    from plait.core.primitive import Primitive
    p = Primitive("no_batch_rule_demo")
    p.def_abstract_eval(lambda x: x)
    p.def_impl(lambda x: x.copy())
    with pytest.raises(MissingRuleError, match="no_batch_rule_demo"):
        vmap(p.bind)(np.ones(3))


# --- control flow -----------------------------------------------------------------------
def newton_sqrt(a):
    def cond(c):
        return pnp.abs(c[0] * c[0] - a) > 1e-12 * a

    def body(c):
        return 0.5 * (c[0] + a / c[0]), c[1] + 1
    return lax.while_loop(cond, body, (a, 0))


def test_while_with_per_lane_trip_counts():
    a = np.array([1.0, 4.0, 2.0, 1e6, 0.25])
    y, n = vmap(newton_sqrt)(a)
    close(y, np.sqrt(a))
    want_n = [int(newton_sqrt(v)[1]) for v in a]
    np.testing.assert_array_equal(np.asarray(n), want_n)
    assert len(set(want_n)) > 2
    y2, n2 = jit(vmap(newton_sqrt))(a)
    close(y2, np.sqrt(a))
    np.testing.assert_array_equal(np.asarray(n2), want_n)


def test_while_with_unbatched_predicate_and_batched_carry():
    def f(x):       # the counter (and so the predicate) is the same in every lane
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2 + c[0]),
                              (0, x))[1]
    xs = rng.normal(size=4)
    want = loop(lambda x: np.asarray(f(x)), xs)
    close(vmap(f)(xs), want)
    close(jit(vmap(f))(xs), want)
    graph = plait.make_graph(vmap(f))(xs).graph
    loops = [e for e in graph.eqns if e.prim.name == "while"]
    assert len(loops) == 1 and loops[0].params["body_graph"].in_avals[-2].shape == ()

    def g(x, n):    # traced bound: a while loop, not a scan
        return lax.fori_loop(0, n, lambda i, c: c * 2 + i, x)
    close(jit(vmap(g, in_axes=(0, None)))(xs, 5), want)


def test_while_with_batched_consts_and_forward_mode():
    def f(x, lim):
        return lax.while_loop(lambda c: c < lim, lambda c: c * 1.5 + x, x)
    xs, lims = np.array([0.5, 1.0, 2.0]), np.array([3.0, 10.0, 100.0])
    close(vmap(f)(xs, lims), loop(lambda x, l: np.asarray(f(x, l)), xs, lims))
    df = vmap(lambda x, l: plait.jvp(lambda x: f(x, l), (x,), (1.0,))[1])(xs, lims)
    want = loop(lambda x, l: np.asarray(plait.jvp(lambda x: f(x, l), (x,), (1.0,))[1]), xs, lims)
    close(df, want)


def piecewise(p, x):
    return lax.cond(p > 0, lambda x: pnp.sin(x) * 2, lambda x: x - 1, x)


def test_cond_with_batched_predicate():
    ps, xs = np.array([1.0, -1.0, 2.0, -3.0]), rng.normal(size=4)
    want = loop(lambda p, x: np.asarray(piecewise(p, x)), ps, xs)
    close(vmap(piecewise)(ps, xs), want)
    close(jit(vmap(piecewise))(ps, xs), want)
    g = vmap(grad(piecewise, 1))(ps, xs)
    close(g, np.where(ps > 0, 2 * np.cos(xs), 1.0))
    close(jit(vmap(grad(piecewise, 1)))(ps, xs), np.where(ps > 0, 2 * np.cos(xs), 1.0))


def test_cond_with_unbatched_predicate_inside_jit():
    xs = rng.normal(size=(3, 2))
    f = jit(lambda p, x: piecewise(p, x))
    close(vmap(f, in_axes=(None, 0))(1.0, xs), 2 * np.sin(xs))
    close(vmap(f, in_axes=(None, 0))(-1.0, xs), xs - 1)


def test_switch_with_batched_index():
    branches = [lambda x: x + 1, lambda x: x * 10, lambda x: -x]
    idx, xs = np.array([0, 2, 1, 5, -1]), rng.normal(size=5)
    f = lambda i, x: lax.switch(i, branches, x)
    want = loop(lambda i, x: np.asarray(branches[min(max(i, 0), 2)](x)), idx, xs)
    close(jit(vmap(f))(idx, xs), want)


def cumulative(c, xs):
    return lax.scan(lambda c, x: (c * 0.5 + x, c * x), c, xs)


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 1), (0, None), (0, 1)])
def test_scan(in_axes):
    """Batched or unbatched carry and xs (the carry becomes batched when xs is)."""
    c = rng.normal(size=3)
    xs = rng.normal(size=(3, 4)) if in_axes[1] == 0 else rng.normal(size=(4, 3))
    if in_axes[0] is None:
        c = np.float64(0.3)
    if in_axes[1] is None:
        xs = rng.normal(size=4)
    want = loop(lambda c, x: tuple(np.asarray(v) for v in cumulative(c, x)), c, xs,
                in_axes=in_axes)
    close(vmap(cumulative, in_axes=in_axes)(c, xs), want)
    close(jit(vmap(cumulative, in_axes=in_axes))(c, xs), want)


def test_reverse_scan_with_batched_consts():
    w = rng.normal(size=3)
    xs = rng.normal(size=(4, 2))
    f = lambda w, xs: lax.scan(lambda c, x: (c * w + x, c), pnp.zeros(2), xs, reverse=True)
    want = loop(lambda w: tuple(np.asarray(v) for v in f(w, xs)), w)
    close(vmap(f, in_axes=(0, None))(w, xs), want)


def test_grad_of_vmapped_scan_and_vmap_of_grad():
    xs = rng.normal(size=(3, 5))

    def loss(c, x):
        cf, ys = cumulative(c, x)
        return cf + pnp.sum(ys ** 2)
    cs = rng.normal(size=3)
    want = loop(lambda c, x: np.asarray(grad(loss)(c, x)), cs, xs)
    close(vmap(grad(loss))(cs, xs), want)
    close(grad(lambda cs: pnp.sum(vmap(loss)(cs, xs)))(cs), want)


def test_vmap_of_autograph_if():
    @plait.autograph
    def f(x):
        if pnp.sum(x) > 0:
            y = x * 2
        else:
            y = -x
        return y
    xs = rng.normal(size=(6, 3))
    want = np.stack([x * 2 if x.sum() > 0 else -x for x in xs])
    close(vmap(f)(xs), want)
    close(jit(vmap(f))(xs), want)


# --- per-lane indices ---------------------------------------------------------------------
def test_dynamic_slice_and_update_with_per_lane_starts():
    x = rng.normal(size=(4, 7))
    starts = np.array([0, 3, 6, -2])
    f = lambda x, s: lax.dynamic_slice(x, (s,), (3,))
    want = np.stack([x[k, min(max(s, 0), 4):min(max(s, 0), 4) + 3] for k, s in enumerate(starts)])
    close(vmap(f)(x, starts), want)
    u = rng.normal(size=(4, 2))
    g = lambda x, u, s: lax.dynamic_update_slice(x, u, (s,))
    want = x.copy()
    for k, s in enumerate(starts):
        s = min(max(s, 0), 5)
        want[k, s:s + 2] = u[k]
    close(vmap(g)(x, u, starts), want)
    close(jit(vmap(g, in_axes=(None, 0, 0)))(x[0], u, starts),
          loop(lambda u, s: np.asarray(g(x[0], u, s)), u, starts))


def test_numpy_indexing_with_per_lane_indices():
    x = rng.normal(size=(3, 5))
    idx = np.array([[0, 4], [2, 2], [1, 3]])
    close(vmap(lambda v, i: v[i])(x, idx), np.take_along_axis(x, idx, 1))
    close(vmap(lambda v, i: v.at[i].add(1.0))(x, idx),
          loop(lambda v, i: np.asarray(pnp.asarray(v).at[i].add(1.0)), x, idx))
    xp = pnp.asarray(x)
    close(vmap(lambda i: xp[:, i], out_axes=1)(idx[:, 0]), x[:, idx[:, 0]])


# --- custom derivatives and jit_call -------------------------------------------------------
@plait.custom_jvp
def softclip(x):
    return pnp.log1p(pnp.exp(x))


@softclip.defjvp
def _softclip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softclip(x), t * 0.25      # deliberately not the true derivative


@plait.custom_vjp
def scaled(x, w):
    return x * w


def _scaled_fwd(x, w):
    return x * w, (x, w)


def _scaled_bwd(res, ct):
    x, w = res
    return ct * w * 3.0, pnp.sum(ct * x) * 0.0 + ct * x     # custom: 3x the x-gradient


scaled.defvjp(_scaled_fwd, _scaled_bwd)


def test_custom_jvp_under_vmap_keeps_its_rule():
    xs = rng.normal(size=(4, 3))
    close(vmap(softclip)(xs), np.log1p(np.exp(xs)))
    f = lambda x: pnp.sum(softclip(x))
    close(vmap(grad(f))(xs), np.full_like(xs, 0.25))
    close(grad(lambda xs: pnp.sum(vmap(softclip)(xs)))(xs), np.full_like(xs, 0.25))
    close(jit(grad(lambda xs: pnp.sum(vmap(softclip)(xs))))(xs), np.full_like(xs, 0.25))


def test_custom_vjp_under_vmap_keeps_its_rule():
    xs, w = rng.normal(size=(4, 3)), rng.normal(size=3)
    close(vmap(scaled, in_axes=(0, None))(xs, w), xs * w)
    f = lambda x, w: pnp.sum(scaled(x, w))
    close(vmap(grad(f), in_axes=(0, None))(xs, w), np.broadcast_to(3 * w, xs.shape))
    total = lambda xs, w: pnp.sum(vmap(scaled, in_axes=(0, None))(xs, w))
    gx, gw = grad(total, (0, 1))(xs, w)
    close(gx, np.broadcast_to(3 * w, xs.shape))
    close(gw, xs.sum(0))


def test_vmap_of_jit_is_one_batched_call():
    f = jit(lambda x, y: pnp.tanh(x @ y))
    xs, y = rng.normal(size=(5, 3)), rng.normal(size=(3, 2))
    close(vmap(f, in_axes=(0, None))(xs, y), np.tanh(xs @ y))
    graph = plait.make_graph(vmap(f, in_axes=(0, None)))(xs, y)
    text = str(graph)
    assert text.count("jit_call") == 1, text


def test_vmap_of_lazy_arrays():
    xs = plait.lazy.asarray(rng.normal(size=(4, 3)))
    got = vmap(lambda x: pnp.sum(pnp.sin(x)))(xs)
    close(np.asarray(got), np.sin(np.asarray(xs)).sum(1))


def test_grad_of_vmapped_cond_with_batched_predicate():
    ps, xs = np.array([1.0, -1.0, 2.0]), rng.normal(size=3)
    total = lambda xs: pnp.sum(vmap(piecewise)(ps, xs))
    want = np.where(ps > 0, 2 * np.cos(xs), 1.0)
    close(grad(total)(xs), want)
    close(jit(grad(total))(xs), want)


def test_jacobians_map_the_linear_function_over_the_basis():
    """jacfwd/jacrev trace the linear function once, whatever the input size."""
    f = lambda x: pnp.sin(x) * pnp.sum(x ** 2)
    for jac in (plait.jacfwd, plait.jacrev):
        sizes = [len(plait.make_graph(jac(f))(np.ones(n)).graph.eqns) for n in (2, 30)]
        assert sizes[0] == sizes[1], (jac.__name__, sizes)
    x = rng.normal(size=4)
    want = np.diag(np.cos(x) * np.sum(x ** 2)) + np.outer(np.sin(x), 2 * x)
    close(plait.jacfwd(f)(x), want)
    close(plait.jacrev(f)(x), want)


def test_vmap_of_jit_reuses_the_batched_graph():
    f = jit(lambda x: pnp.cos(x) * 2)
    g = vmap(f)
    xs = rng.normal(size=(3, 2))
    close(g(xs), np.cos(xs) * 2)
    before = plait.metrics.get("compiles")
    close(g(xs + 1), np.cos(xs + 1) * 2)
    assert plait.metrics.get("compiles") == before


def test_keyword_arguments_are_mapped_along_axis_0():
    xs, ys = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    close(vmap(lambda x, y=None: x * y, in_axes=(1,))(xs.T, y=ys), xs * ys)
