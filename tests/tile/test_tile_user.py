"""plait.tile for users: operations written as contractions, checked against NumPy,
check_grads (order 2, derived in Tile), vmap against a loop, on native and xla."""
from __future__ import annotations

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait.errors import TileSyntaxError
from plait.test_util import check_grads

T = plait.tile
L = 5   # attention length


@T.op
def maxplus(A, B):
    i, j, k = T.indices("i j k")
    return T.contract("max", A[i, k] + B[k, j], out=(i, j))


@T.op
def minplus(A, B):
    i, j, k = T.indices("i j k")
    return T.contract("min", A[i, k] + B[k, j], out=(i, j), name="D")


@T.op
def dilated_conv(I, K):          # O[x, o] = sum_{k, c} I[x + 2k, c] K[k, c, o]
    x, k, c, o = T.indices("x k c o")
    n, kw = I.shape[0], K.shape[0]
    return T.contract("sum", I[x + 2 * k, c] * K[k, c, o], out=(x, o),
                      shape=(n - 2 * (kw - 1), K.shape[2]))


@T.op
def padded_conv(I, K):           # 'same' dilated conv: edge taps excluded by a constraint
    x, k = T.indices("x k")
    n = I.shape[0]
    return T.contract("sum", I[x + 2 * k - 2] * K[k], out=x, where=[x + 2 * k - 2 < n],
                      shape=(n,))


@T.op
def softplus_conv(I, K):         # a body that is not a plain product, under a constraint
    x, k = T.indices("x k")
    n = I.shape[0]
    return T.contract("sum", T.log(1.0 + T.exp(I[x + 2 * k - 2])) * T.tanh(K[k]) ** 2.0,
                      out=x, where=[x + 2 * k - 2 < n], shape=(n,))


@T.op
def attention_score(Q, K, bias):   # S[i, j] = Q[i] . K[j] / sqrt(d) + bias[i - j + L - 1]
    i, j, d = T.indices("i j d")
    S = T.contract("sum", Q[i, d] * K[j, d] * (1.0 / np.sqrt(Q.shape[1])), out=(i, j))
    return T.contract("assign", S[i, j] + bias[i - j + L - 1], out=(i, j), name="score")


@T.op
def bilinear(x, W, y):
    i, j, k = T.indices("i j k")
    return T.contract("sum", x[i] * W[i, j, k] * y[k], out=j)


@T.op
def logsumexp(X):
    i, j = T.indices("i j")
    M = T.contract("max", X[i, j], out=i)
    S = T.contract("sum", T.exp(X[i, j] - M[i]), out=i)
    return T.contract("assign", T.log(S[i]) + M[i], out=i, name="lse")


def _args(rng):
    return {
        "maxplus": (maxplus, (rng.normal(size=(3, 4)), rng.normal(size=(4, 5))),
                    lambda a, b: (a[:, :, None] + b[None]).max(1)),
        "minplus": (minplus, (rng.normal(size=(3, 4)), rng.normal(size=(4, 2))),
                    lambda a, b: (a[:, :, None] + b[None]).min(1)),
        "dilated_conv": (dilated_conv, (rng.normal(size=(9, 2)), rng.normal(size=(3, 2, 3))),
                         lambda i, k: sum(np.einsum("xc,co->xo", i[2 * t:2 * t + 5], k[t])
                                          for t in range(3))),
        "padded_conv": (padded_conv, (rng.normal(size=(7,)), rng.normal(size=(3,))),
                        lambda i, k: np.array([sum(i[x + 2 * t - 2] * k[t] for t in range(3)
                                                   if 0 <= x + 2 * t - 2 < 7)
                                               for x in range(7)])),
        "softplus_conv": (softplus_conv, (rng.normal(size=(7,)), rng.normal(size=(3,))),
                          lambda i, k: np.array([sum(np.log1p(np.exp(i[x + 2 * t - 2]))
                                                     * np.tanh(k[t]) ** 2 for t in range(3)
                                                     if 0 <= x + 2 * t - 2 < 7)
                                                 for x in range(7)])),
        "attention": (attention_score,
                      (rng.normal(size=(L, 4)), rng.normal(size=(L, 4)),
                       rng.normal(size=(2 * L - 1,))),
                      lambda q, k, b: q @ k.T / 2.0 + b[np.arange(L)[:, None]
                                                        - np.arange(L)[None] + L - 1]),
        "bilinear": (bilinear, (rng.normal(size=(3,)), rng.normal(size=(3, 4, 2)),
                                rng.normal(size=(2,))),
                     lambda x, w, y: np.einsum("i,ijk,k->j", x, w, y)),
        "logsumexp": (logsumexp, (rng.normal(size=(3, 6)),),
                      lambda x: np.log(np.exp(x).sum(1))),
    }


CASES = list(_args(np.random.default_rng(0)))


@pytest.mark.parametrize("name", CASES)
def test_eager_value_and_check_grads(name):
    op, args, ref = _args(np.random.default_rng(1))[name]
    np.testing.assert_allclose(np.asarray(op(*args)), ref(*args), rtol=1e-12, atol=1e-12)
    check_grads(op, args, order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", CASES)
def test_vmap_matches_loop(name):
    op, args, ref = _args(np.random.default_rng(2))[name]
    rng = np.random.default_rng(3)
    first = np.stack([args[0] + rng.normal(size=np.shape(args[0])) for _ in range(3)])
    got = plait.vmap(op, in_axes=(0,) + (None,) * (len(args) - 1))(first, *args[1:])
    for b in range(3):
        np.testing.assert_allclose(np.asarray(got)[b], ref(first[b], *args[1:]),
                                   rtol=1e-12, atol=1e-12)
    if len(args) > 1:     # every operand batched, batch axis last on the last one
        last = np.stack([args[-1] * (b + 1) for b in range(3)], axis=-1)
        got = plait.vmap(op, in_axes=(0,) + (None,) * (len(args) - 2) + (-1,))(
            first, *args[1:-1], last)
        for b in range(3):
            np.testing.assert_allclose(np.asarray(got)[b],
                                       ref(first[b], *args[1:-1], args[-1] * (b + 1)),
                                       rtol=1e-12, atol=1e-12)


def _bundle(op):
    """Value, gradient, a second derivative and a vmap of ``op``: one jit per backend."""
    def loss(*a):
        return pnp.sum(pnp.sin(op(*a)))

    def f(*a):
        g = plait.grad(loss, argnums=tuple(range(len(a))))(*a)
        hv = plait.jvp(lambda x: plait.grad(loss)(x, *a[1:]), (a[0],), (pnp.ones_like(a[0]),))[1]
        vm = plait.vmap(lambda x: op(x, *a[1:]))(pnp.stack([a[0], 2 * a[0]]))
        return op(*a), g, hv, vm
    return f


@pytest.mark.parametrize("backend", ["native", "xla"])
@pytest.mark.parametrize("name", CASES)
def test_jit_backends_match_eager(name, backend):
    if backend == "xla":
        pytest.importorskip("jaxlib")
    op, args, ref = _args(np.random.default_rng(4))[name]
    f = _bundle(op)
    want = f(*args)
    got = plait.jit(f, backend=backend)(*args)
    np.testing.assert_allclose(np.asarray(got[0]), ref(*args), rtol=1e-10, atol=1e-10)
    for w, g in zip(plait.tree_util.tree_leaves(want), plait.tree_util.tree_leaves(got)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-9)


def test_float32_and_int_inputs_follow_dtype_rules():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((4, 2), np.float32)
    out = plait.jit(maxplus)(a, b)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), (a[:, :, None] + b[None]).max(1))
    assert maxplus(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32)).dtype == np.float32


def test_as_text_shows_the_statement_as_written():
    a, b = np.ones((3, 4)), np.ones((4, 5))
    text = plait.jit(maxplus).lower(a, b).as_text("tile")
    assert 'T.contract("max", A[i, k] + B[k, j], out=(i, j))' in text
    assert "T0[i, j] = max(A[i, k] + B[k, j])" in text
    lse = logsumexp.as_text(np.ones((2, 3)))
    assert "lse[i] = assign(log(T1[i]) + T0[i])" in lse
    assert 'T.contract("assign", T.log(S[i]) + M[i], out=i, name="lse")' in lse


def test_output_index_bound_nowhere_names_the_line():
    @T.op
    def bad(A):
        i, j = T.indices("i j")
        return T.contract("sum", A[i], out=(i, j))    # j: no range
    with pytest.raises(TileSyntaxError, match=r"index 'j' is used on the output but bound "
                                              r"nowhere[\s\S]*test_tile_user.py:\d+"):
        bad(np.ones(3))


def test_out_of_range_access_names_the_line():
    @T.op
    def bad(I, K):
        x, k = T.indices("x k")
        return T.contract("sum", I[x + k] * K[k], out=x, shape=(I.shape[0],))
    with pytest.raises(TileSyntaxError, match=r"access I\[k \+ x\] can go out of range"
                                              r"[\s\S]*test_tile_user.py:\d+ \(in bad\)"):
        bad(np.ones(5), np.ones(2))


def test_other_user_errors():
    @T.op
    def no_index(A):
        return T.contract("sum", A, out=())
    with pytest.raises(TileSyntaxError, match="without indices"):
        no_index(np.ones(2))

    @T.op
    def assign_reduces(A):
        i, j = T.indices("i j")
        return T.contract("assign", A[i, j], out=i)
    with pytest.raises(TileSyntaxError, match="'assign' has no reduction"):
        assign_reduces(np.ones((2, 2)))
    with pytest.raises(TileSyntaxError, match="inside a function decorated"):
        T.contract("sum", 1.0)

    @T.op
    def shifted_out(A):
        i = T.indices("i")
        return T.contract("sum", A[i], out=i + 1, shape=(3,))
    with pytest.raises(TileSyntaxError, match=r"output index `i \+ 1` can go out of range: "
                                              r"`i \+ 1` takes values in \[1, 3\]"):
        shifted_out(np.ones(3))

    @T.op
    def bad_where(A):
        i = T.indices("i")
        return T.contract("sum", A[i], out=i, where=[i > 1])
    with pytest.raises(TileSyntaxError, match=r"constraints are written `expr < N`[\s\S]*"
                                              r"test_tile_user.py:\d+ \(in bad_where\)"):
        bad_where(np.ones(3))

    @T.op
    def not_constraint(A):
        i = T.indices("i")
        return T.contract("sum", A[i], out=i, where=[i])
    with pytest.raises(TileSyntaxError, match="not of the form `index expression < N`"):
        not_constraint(np.ones(3))


def test_named_outputs_as_dict_and_prod():
    @T.op
    def stats(X):
        i, j = T.indices("i j")
        return {"rowprod": T.contract("prod", X[i, j], out=i, name="rowprod"),
                "colmin": T.contract("min", X[i, j], out=j, name="colmin")}
    x = np.random.default_rng(5).uniform(0.5, 1.5, size=(3, 4))
    out = stats(x)
    np.testing.assert_allclose(np.asarray(out["rowprod"]), x.prod(1))
    np.testing.assert_allclose(np.asarray(out["colmin"]), x.min(0))
    check_grads(lambda x: stats(x)["rowprod"], (x,), order=2)


def test_graph_text_and_cost():
    a, b = np.ones((3, 4)), np.ones((4, 5))
    text = str(plait.make_graph(maxplus)(a, b))
    assert "tile_op[program=<tile maxplus: T0[i, j] = max(A[i, k] + B[k, j])>]" in text
    cost = plait.jit(maxplus).lower(a, b).compile().cost_analysis()
    assert cost["flops"] == 3 * 5 * 4 * 2      # an add and a max at each (i, j, k)
