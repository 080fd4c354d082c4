"""checkpoint/remat: gradients equal the plain ones, policies decide the residuals,
recomputation survives jit's CSE (prevent_cse), checkpoint_name, static_argnums, vmap."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import checkpoint_policies as cp
from plait.ad_checkpoint import checkpoint_name

R = np.random.RandomState(0)
W1, W2 = R.randn(4, 4), R.randn(4, 4)
X = R.randn(3, 4)


def block(x):
    return pnp.sin(pnp.dot(pnp.tanh(pnp.dot(x, W1)), W2))


def plain(x):
    return pnp.sum(block(block(x)))


def remat_fn(policy=None, prevent_cse=True):
    b = plait.checkpoint(block, policy=policy, prevent_cse=prevent_cse)
    return lambda x: pnp.sum(b(b(x)))


def numpy_grad(x):
    """Hand-written backward pass of ``plain`` (the oracle)."""
    def fwd(x):
        a = x @ W1
        h = np.tanh(a)
        b = h @ W2
        return (a, h, b), np.sin(b)
    c1, y1 = fwd(x)
    c2, y2 = fwd(y1)

    def bwd(c, g):
        a, h, b = c
        gb = g * np.cos(b)
        gh = gb @ W2.T
        ga = gh * (1 - h ** 2)
        return ga @ W1.T
    return bwd(c1, bwd(c2, np.ones_like(y2)))


POLICIES = [None, cp.nothing_saveable, cp.everything_saveable, cp.dots_saveable,
            cp.checkpoint_dots, cp.dots_with_no_batch_dims_saveable]


@pytest.mark.parametrize("policy", POLICIES)
def test_grad_matches_plain_exactly(policy):
    ref = np.asarray(plait.grad(plain)(X))
    np.testing.assert_allclose(ref, numpy_grad(X), rtol=1e-12, atol=1e-12)
    got = np.asarray(plait.grad(remat_fn(policy))(X))
    np.testing.assert_array_equal(got, ref)


def test_jit_grad_all_policies_in_one_compile():
    def many(x):
        return [plait.grad(remat_fn(p))(x) for p in POLICIES] + [plait.grad(plain)(x)]
    outs = [np.asarray(o) for o in plait.jit(many)(X)]
    for o in outs:
        np.testing.assert_allclose(o, numpy_grad(X), rtol=1e-12, atol=1e-12)


def _kinds(f):
    return [r.primitive for r in plait.ad_residuals(f, X)]


def test_residuals_follow_the_policy():
    # every policy keeps the weights (closed-over constants)
    nothing = _kinds(remat_fn(cp.nothing_saveable))
    assert nothing.count("dot_general") == 0
    # the first block's input (argument x) and the second block's input (sin output)
    assert [k for k in nothing if k is not None] == ["sin"]
    assert sum(r.source == "argument x" for r in plait.ad_residuals(remat_fn(), X)) == 1
    dots = _kinds(remat_fn(cp.dots_saveable))
    assert dots.count("dot_general") == 4 and set(dots) == {None, "dot_general"}
    every = _kinds(remat_fn(cp.everything_saveable))
    assert sorted(k for k in every if k) == sorted(k for k in _kinds(plain) if k)
    assert all(r.shape == (3, 4) and r.dtype == np.float64
               for r in plait.ad_residuals(remat_fn(cp.dots_saveable), X) if r.primitive)


def test_residual_source_is_the_users_line():
    rs = [r for r in plait.ad_residuals(remat_fn(cp.dots_saveable), X) if r.primitive]
    assert all("test_core_remat.py" in r.source and "in block" in r.source for r in rs)


def test_no_batch_dims_policy():
    def bmm(a):
        return pnp.sin(pnp.einsum("bij,bjk->bik", a, a))
    a = R.randn(2, 3, 3)
    f = plait.checkpoint(bmm, policy=cp.dots_with_no_batch_dims_saveable)
    g = plait.checkpoint(bmm, policy=cp.dots_saveable)
    kf = [r.primitive for r in plait.ad_residuals(lambda a: pnp.sum(f(a)), a)]
    kg = [r.primitive for r in plait.ad_residuals(lambda a: pnp.sum(g(a)), a)]
    assert "dot_general" not in kf and "dot_general" in kg


def test_names_policies():
    def blk(x):
        h = checkpoint_name(pnp.tanh(pnp.dot(x, W1)), "hidden")
        return pnp.sin(checkpoint_name(pnp.dot(h, W2), "pre"))

    def kinds(policy):
        f = plait.checkpoint(blk, policy=policy)
        rs = plait.ad_residuals(lambda x: pnp.sum(f(x)), X)
        return [r.primitive for r in rs if r.primitive]
    assert kinds(cp.save_only_these_names("hidden")) == ["checkpoint_name"]
    # with "pre" saved, the backward pass needs neither "hidden" nor anything before it
    # but tanh's output, which is recomputed from x: one residual again
    assert kinds(cp.save_only_these_names("hidden", "pre")) == ["checkpoint_name"]
    assert kinds(cp.save_only_these_names("other")) == []
    assert kinds(cp.save_any_names_but_these("hidden")) == ["checkpoint_name"]
    assert kinds(cp.nothing_saveable) == []
    f = plait.checkpoint(blk, policy=cp.save_only_these_names("hidden"))
    g_ref = plait.grad(lambda x: pnp.sum(blk(x)))(X)
    np.testing.assert_array_equal(np.asarray(plait.grad(lambda x: pnp.sum(f(x)))(X)),
                                  np.asarray(g_ref))
    # checkpoint_name alone is an identity (also under jit, where it is erased)
    np.testing.assert_array_equal(np.asarray(plait.jit(lambda x: checkpoint_name(x * 2, "a"))(X)),
                                  X * 2)


def _count(txt, prim):
    return sum(1 for line in txt.splitlines() if f"= {prim}" in line or f" {prim}[" in line
               or f" {prim}(" in line or f"{prim} " in line.split("=")[-1][:len(prim) + 2])


def test_recomputation_survives_cse():
    def block1(x):
        return pnp.tanh(pnp.dot(x, W1))

    def vg(prevent):
        f = plait.checkpoint(block1, prevent_cse=prevent)
        return plait.value_and_grad(lambda x: pnp.sum(f(x)))

    kept = plait.jit(vg(True)).lower(X).as_text()
    merged = plait.jit(vg(False)).lower(X).as_text()
    ref = plait.jit(plait.value_and_grad(lambda x: pnp.sum(block1(x)))).lower(X).as_text()
    assert kept.count("tanh") == 2 and kept.count("dot_general") == 3
    assert merged.count("tanh") == 1 and ref.count("tanh") == 1
    assert kept.count("optimization_barrier") == 1 and "optimization_barrier" not in merged
    v, g = plait.jit(vg(True))(X)
    h = np.tanh(X @ W1)
    np.testing.assert_allclose(v, h.sum(), rtol=1e-12)
    np.testing.assert_allclose(g, (1 - h ** 2) @ W1.T, rtol=1e-12)


def test_static_argnums_and_kwargs():
    def f(x, n, scale=1.0):
        for _ in range(n):
            x = pnp.sin(x) * scale
        return x
    c = plait.checkpoint(f, static_argnums=1)
    g = plait.grad(lambda x: pnp.sum(c(x, 3, scale=2.0)))(X)
    ref = plait.grad(lambda x: pnp.sum(f(x, 3, scale=2.0)))(X)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(ref))
    with pytest.raises(plait.errors.TracerIntegerConversionError, match="static_argnums"):
        plait.checkpoint(f)(X, 3)      # n traced: as in JAX, it must be static
    with pytest.raises(plait.errors.PlaitTypeError, match="static_argnums"):
        plait.checkpoint(lambda x, s: x * len(s))(X, "ab")


def test_vmap_and_jvp_of_remat_and_higher_order():
    c = plait.checkpoint(lambda x: pnp.sin(x) * x)
    xs = R.randn(5)
    np.testing.assert_allclose(np.asarray(plait.vmap(c)(xs)), np.sin(xs) * xs, rtol=1e-14)
    gs = plait.vmap(plait.grad(c))(xs)
    np.testing.assert_allclose(np.asarray(gs), np.cos(xs) * xs + np.sin(xs), rtol=1e-13)
    _, t = plait.jvp(c, (xs,), (np.ones(5),))
    np.testing.assert_allclose(np.asarray(t), np.cos(xs) * xs + np.sin(xs), rtol=1e-13)
    g2 = plait.grad(plait.grad(c))(0.7)
    np.testing.assert_allclose(g2, 2 * np.cos(0.7) - 0.7 * np.sin(0.7), rtol=1e-12)


def test_decorator_form_and_alias():
    @plait.remat(policy=cp.dots_saveable)
    def f(x):
        return pnp.tanh(pnp.dot(x, W1))
    assert plait.remat is plait.checkpoint
    np.testing.assert_allclose(np.asarray(f(X)), np.tanh(X @ W1), rtol=1e-14)


def test_optimization_barrier_is_a_differentiable_identity():
    from plait.core.remat import optimization_barrier_p

    def f(x, y):
        a, b = optimization_barrier_p.bind(x, y)
        return pnp.sum(pnp.sin(a) * b)
    x, y = R.randn(3), R.randn(3)
    gx, gy = plait.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.asarray(gx), np.cos(x) * y, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(gy), np.sin(x), rtol=1e-14)
    v = plait.vmap(lambda x: optimization_barrier_p.bind(x, 2.0 * x)[1])(x)
    np.testing.assert_allclose(np.asarray(v), 2 * x, rtol=1e-15)


def test_checkpoint_lowers_peak_temporaries_native():
    """The recomputation runs after the barrier (a kernel boundary), so the forward
    pass's intermediates are freed before the backward pass: lower peak temporaries."""
    rng = np.random.RandomState(3)
    ws = [rng.randn(32, 32) / 6 for _ in range(8)]
    x = rng.randn(256, 32)

    def blk(h, w):
        return pnp.tanh(pnp.dot(h, w)) + h

    def loss(ws, x, wrap):
        for w in ws:
            x = wrap(blk)(x, w)
        return pnp.sum(x * x)

    peaks, grads = [], []
    for wrap in (lambda f: f, plait.checkpoint):
        g = plait.jit(plait.grad(lambda ws, x: loss(ws, x, wrap)), backend="native")
        peaks.append(g.lower(ws, x).compile().memory_analysis().temp_size_in_bytes)
        grads.append([np.asarray(a) for a in g(ws, x)])
    assert peaks[1] < 0.7 * peaks[0], peaks      # measured: 720896 vs 1179648 bytes
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_checkpointed_scan_body():
    def body(c, _):
        return pnp.tanh(pnp.dot(c, W1) / 2), None

    def f(c, wrap):
        return pnp.sum(plait.lax.scan(wrap(body), c, None, length=5)[0])
    x = R.randn(4)
    g0 = np.asarray(plait.grad(lambda c: f(c, lambda b: b))(x))
    np.testing.assert_array_equal(np.asarray(plait.grad(lambda c: f(c, plait.checkpoint))(x)), g0)
    eps = 1e-6
    fd = [(float(f(x + eps * e, lambda b: b)) - float(f(x - eps * e, lambda b: b))) / (2 * eps)
          for e in np.eye(4)]
    np.testing.assert_allclose(g0, fd, rtol=1e-6, atol=1e-8)
