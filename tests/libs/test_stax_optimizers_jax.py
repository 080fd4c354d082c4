"""plait.example_libraries.stax / optimizers against values recorded from
jax.example_libraries (tests/libs/jax_stax_reference.py; JAX is not imported)."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import random as pr
from plait.example_libraries import optimizers as O
from plait.example_libraries import stax
from jax_stax_reference import REF

rng = np.random.default_rng(1)          # same draws, same order as the recording
X2 = rng.standard_normal((2, 5, 4, 3))
W2 = rng.standard_normal((3, 3, 3, 2))
B2 = rng.standard_normal((1, 1, 1, 2))
X1 = rng.standard_normal((2, 6, 3))
W1 = rng.standard_normal((4, 3, 2))
B1 = rng.standard_normal((1, 1, 2))
P0 = {"w": rng.standard_normal(4), "b": (rng.standard_normal((2, 3)),)}
GS = [{"w": rng.standard_normal(4), "b": (rng.standard_normal((2, 3)),)} for _ in range(3)]


def ref(name):
    shape, vals = REF[name]
    return np.array([float.fromhex(v) for v in vals]).reshape(shape)


def test_conv_transpose_and_sumpool():
    for pad in ("SAME", "VALID"):
        for st in ((1, 1), (2, 2), (2, 3)):
            init, apply = stax.ConvTranspose(2, (3, 3), st, pad)
            shp, (w, b) = init(pr.key(0), X2.shape)
            want = ref(f"convT_{pad}_{st[0]}{st[1]}")
            assert tuple(shp) == want.shape and w.shape == W2.shape and b.shape == B2.shape
            np.testing.assert_allclose(np.asarray(apply((W2, B2), X2)), want, rtol=1e-12,
                                       atol=1e-12, err_msg=f"{pad} {st}")
        init, apply = stax.Conv1DTranspose(2, (4,), (3,), pad)
        want = ref(f"conv1dT_{pad}")
        assert tuple(init(pr.key(0), X1.shape)[0]) == want.shape
        np.testing.assert_allclose(np.asarray(apply((W1, B1), X1)), want, rtol=1e-12, atol=1e-12)
    init, apply = stax.SumPool((2, 2), (1, 2), "SAME")
    assert tuple(init(None, X2.shape)[0]) == ref("sumpool").shape
    np.testing.assert_allclose(np.asarray(apply((), X2)), ref("sumpool"), rtol=1e-12)


def test_combinators():
    # a residual block: FanOut -> parallel(Dense, Identity) -> FanInSum, then a concat
    init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity),
                              stax.FanInSum, stax.FanOut(2),
                              stax.parallel(stax.Softplus, stax.Exp), stax.FanInConcat(-1),
                              stax.shape_dependent(lambda s: stax.Dense(s[-1] // 2)))
    shp, params = init(pr.key(0), (4, 3))
    assert tuple(shp) == (4, 3)
    x = rng.standard_normal((4, 3))
    (w, b), (w2, b2) = params[1][0], params[6]
    h = x @ np.asarray(w) + np.asarray(b) + x
    h = np.concatenate([np.logaddexp(h, 0), np.exp(h)], -1)
    np.testing.assert_allclose(np.asarray(apply(params, x)), h @ np.asarray(w2) + np.asarray(b2),
                               rtol=1e-10)
    assert stax.glorot is plait.nn.init.glorot_normal and stax.logsoftmax is plait.nn.log_softmax


OPTS = {"sgd": lambda: O.sgd(0.1), "momentum": lambda: O.momentum(0.1, 0.9),
        "nesterov": lambda: O.nesterov(0.1, 0.9), "adagrad": lambda: O.adagrad(0.1),
        "rmsprop": lambda: O.rmsprop(0.1), "rmsprop_momentum": lambda: O.rmsprop_momentum(0.1),
        "adam": lambda: O.adam(0.1), "adamax": lambda: O.adamax(0.1), "sm3": lambda: O.sm3(0.1),
        "adam_sched": lambda: O.adam(O.exponential_decay(0.1, 2, 0.5)),
        "sgd_itd": lambda: O.sgd(O.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
        "sgd_poly": lambda: O.sgd(O.polynomial_decay(0.1, 2, 0.01, 2.0)),
        "sgd_pw": lambda: O.sgd(O.piecewise_constant([0, 1], [0.1, 0.05, 0.01]))}


@pytest.mark.parametrize("name", sorted(OPTS))
def test_optimizer_matches_jax(name):
    init, update, get = OPTS[name]()
    s = init(P0)
    for i, g in enumerate(GS):
        s = update(i, g, s)
    p = get(s)
    np.testing.assert_allclose(np.asarray(p["w"]), ref(f"opt_{name}_w"), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(p["b"][0]), ref(f"opt_{name}_b"), rtol=1e-12,
                               atol=1e-14)


def test_state_pytree_jit_pack_and_utils():
    init, update, get = O.sm3(0.1)
    step = plait.jit(update, backend="interp")
    s = init(P0)
    for i, g in enumerate(GS):
        s = step(i, g, s)
    np.testing.assert_allclose(np.asarray(get(s)["b"][0]), ref("opt_sm3_b"), rtol=1e-12)
    packed = O.pack_optimizer_state(O.unpack_optimizer_state(s))
    assert packed.tree_def == s.tree_def and packed.subtree_defs == s.subtree_defs
    assert isinstance(O.unpack_optimizer_state(s)["w"], O.JoinPoint)
    np.testing.assert_allclose(np.asarray(O.clip_grads(GS[0], 1.0)["w"]), ref("clip"), rtol=1e-12)
    np.testing.assert_allclose(float(O.l2_norm(GS[0])), ref("l2"), rtol=1e-12)
    with pytest.raises(plait.errors.PlaitTypeError):
        update(0, {"w": GS[0]["w"]}, s)
    with pytest.raises(plait.errors.PlaitValueError):
        O.piecewise_constant([0, 1], [0.1])
