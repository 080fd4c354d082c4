"""plait.random against values recorded from jax.random (tests/libs/jax_random_reference.py;
JAX is not imported). Bit-identical: keys, split, fold_in, bits, uniform, randint,
permutation, choice, bernoulli, categorical, rademacher, triangular, rayleigh,
geometric, float32 uniforms with bounds. Within a few ulps (``log``/``log1p``/``exp``/
``erf`` are plait's, not XLA's): normal, truncated_normal and the samplers built on logs."""
import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import random as pr
from jax_random_reference import REF

F32, F64, I32 = np.float32, np.float64, np.int32
COV = np.array([[2., .5, 0], [.5, 1, .2], [0, .2, 1]])
LOGP2 = np.log(np.array([[.1, .2, .7], [.5, .25, .25]], F32))


def ref(name):
    dtype, vals, shape = REF[name]
    if dtype.startswith("float"):
        return np.array([float.fromhex(v) for v in vals], dtype).reshape(shape)
    return np.array(vals, dtype).reshape(shape)


X32 = {  # name -> plait call (JAX's default mode: float32 / int32)
    "key": lambda k, s: pr.PRNGKey(s),
    "split3": lambda k, s: pr.split(k, 3),
    "fold_in7": lambda k, s: pr.fold_in(k, 7),
    "bits": lambda k, s: pr.bits(k, (2, 3)),
    "bits_u8": lambda k, s: pr.bits(k, (5,), np.uint8),
    "uniform_f32": lambda k, s: pr.uniform(k, (6,), F32),
    "uniform_f32_mm": lambda k, s: pr.uniform(k, (6,), F32, -2., 3.),
    "randint_i32": lambda k, s: pr.randint(k, (8,), -5, 17, I32),
    "randint_i32_full": lambda k, s: pr.randint(k, (4,), -2 ** 31, 2 ** 31 - 1, I32),
    "permutation": lambda k, s: pr.permutation(k, 10),
    "bernoulli": lambda k, s: pr.bernoulli(k, F32(0.3), (10,)),
    "categorical": lambda k, s: pr.categorical(k, LOGP2, shape=(3, 2)),
}
X64 = {  # JAX with jax_enable_x64: plait's defaults
    "key": lambda k, s: pr.key(s),
    "key_neg": lambda k, s: pr.PRNGKey(-3),
    "key_big": lambda k, s: pr.PRNGKey(2 ** 40 + 5),
    "bits_u64": lambda k, s: pr.bits(k, (3,), np.uint64),
    "uniform_f64": lambda k, s: pr.uniform(k, (6,)),
    "uniform_f32": lambda k, s: pr.uniform(k, (6,), F32),
    "randint_i64": lambda k, s: pr.randint(k, (8,), -5, 17),
    "permutation": lambda k, s: pr.permutation(k, 10),
    "permutation_2d": lambda k, s: pr.permutation(k, pnp.arange(12).reshape(4, 3)),
    "choice": lambda k, s: pr.choice(k, 10, (5,)),
    "choice_noreplace": lambda k, s: pr.choice(k, 10, (5,), replace=False),
    "choice_p": lambda k, s: pr.choice(k, 4, (6,), p=np.array([.1, .2, .3, .4])),
    "bernoulli": lambda k, s: pr.bernoulli(k, 0.3, (10,)),
    "rademacher": lambda k, s: pr.rademacher(k, (8,)),
    "categorical": lambda k, s: pr.categorical(k, np.log(np.array([.1, .2, .7])), shape=(8,)),
    "categorical_noreplace": lambda k, s: pr.categorical(
        k, np.log(np.array([.1, .2, .3, .4])), shape=(3,), replace=False),
    "triangular": lambda k, s: pr.triangular(k, 0., 1., 3., (4,)),
    "rayleigh": lambda k, s: pr.rayleigh(k, 2., (4,)),
    "geometric": lambda k, s: pr.geometric(k, 0.3, (6,)),
}
CLOSE32 = {"normal_f32": lambda k: pr.normal(k, (6,), F32),
           "gumbel_f32": lambda k: pr.gumbel(k, (4,), F32)}
CLOSE64 = {
    "uniform_f64_mm": lambda k: pr.uniform(k, (6,), None, -2., 3.),
    "normal_f64": lambda k: pr.normal(k, (6,)),
    "exponential": lambda k: pr.exponential(k, (4,)),
    "laplace": lambda k: pr.laplace(k, (4,)),
    "logistic": lambda k: pr.logistic(k, (4,)),
    "cauchy": lambda k: pr.cauchy(k, (4,)),
    "maxwell": lambda k: pr.maxwell(k, (4,)),
    "gumbel": lambda k: pr.gumbel(k, (4,)),
    "lognormal": lambda k: pr.lognormal(k, 0.5, (4,)),
    "wald": lambda k: pr.wald(k, 1.5, (4,)),
    "pareto": lambda k: pr.pareto(k, 2., (4,)),
    "weibull_min": lambda k: pr.weibull_min(k, 2., 1.5, (4,)),
    "double_sided_maxwell": lambda k: pr.double_sided_maxwell(k, 1., 2., (4,)),
    "multivariate_normal": lambda k: pr.multivariate_normal(k, np.zeros(3), COV, (2,)),
    "truncated_normal": lambda k: pr.truncated_normal(k, -1., 2., (4,)),
}


@pytest.mark.parametrize("seed", [0, 42])
def test_bit_identical_to_jax(seed):
    k = pr.PRNGKey(seed)
    for mode, table in (("x32", X32), ("x64", X64)):
        for name, fn in table.items():
            want = ref(f"{mode}_{seed}_{name}")
            got = np.asarray(fn(k, seed))
            assert got.shape == want.shape, (mode, name)
            np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=f"{mode} {name}")


@pytest.mark.parametrize("seed", [0, 42])
def test_close_to_jax(seed):
    k = pr.PRNGKey(seed)
    for mode, table, ulps in (("x32", CLOSE32, 4), ("x64", CLOSE64, 64)):
        for name, fn in table.items():
            want = ref(f"{mode}_{seed}_{name}")
            got = np.asarray(fn(k))
            assert got.dtype == want.dtype, name
            tol = ulps * np.finfo(want.dtype).eps * np.maximum(1, np.abs(want))
            assert np.all(np.abs(got - want) <= tol), (name, got, want)


def test_same_bits_under_jit():
    @plait.jit
    def draw(k):
        k1, k2 = pr.split(k)
        return (pr.uniform(k1, (6,)), pr.randint(k2, (8,), -5, 17), pr.permutation(k, 10),
                pr.fold_in(k, 7), pr.normal(k, (6,), F32))

    u, r, p, f, n = draw(pr.key(42))
    k1, k2 = pr.split(pr.key(42))
    np.testing.assert_array_equal(np.asarray(u), np.asarray(pr.uniform(k1, (6,))))
    np.testing.assert_array_equal(np.asarray(r), np.asarray(pr.randint(k2, (8,), -5, 17)))
    np.testing.assert_array_equal(np.asarray(p), ref("x64_42_permutation"))
    np.testing.assert_array_equal(np.asarray(f), ref("x32_42_fold_in7"))
    np.testing.assert_allclose(np.asarray(n), ref("x32_42_normal_f32"), rtol=5e-7, atol=5e-7)


def test_typed_key_helpers():
    k = pr.key(3)
    assert pr.key_impl(k) == "threefry2x32" and pr.key_dtype(k) == np.uint32
    d = pr.key_data(pr.split(k, 4))
    assert d.shape == (4, 2) and d.dtype == np.uint32
    np.testing.assert_array_equal(np.asarray(pr.wrap_key_data(d)), np.asarray(d))
    assert pr.split(k, (2, 3)).shape == (2, 3, 2)
    np.testing.assert_array_equal(np.asarray(pr.split(k, (2, 3))).reshape(6, 2),
                                  np.asarray(pr.split(k, 6)))
    with pytest.raises(plait.errors.PlaitTypeError):
        pr.wrap_key_data(np.zeros((2,), np.int32))
    with pytest.raises(plait.errors.PlaitTypeError):
        pr.bits(k, (2,), np.int32)


def test_hot_key_functions_compile_and_keep_jax_bits():
    # Called eagerly, fold_in / split / bits run op by op for their first HOT_CALLS
    # calls of one signature, then through one compiled program: every call gives
    # JAX's recorded bits, and a signature compiles exactly on its (HOT_CALLS + 1)-th call.
    from plait.random import _hot
    from plait.runtime import metrics
    for _ in range(_hot.HOT_CALLS + 2):
        for seed in (0, 42):
            for name in ("fold_in7", "split3", "bits"):
                np.testing.assert_array_equal(
                    np.asarray(X32[name](pr.PRNGKey(seed), seed)), ref(f"x32_{seed}_{name}"))
    # the mechanism, on a function of its own (the public ones may be hot already)
    fresh = _hot.compiled_when_hot(static_argnums=(1,))(lambda k, n: pr.split(k, n))
    before = metrics.get("compiles")
    for i in range(_hot.HOT_CALLS + 2):
        np.testing.assert_array_equal(np.asarray(fresh(pr.PRNGKey(42), 3)), ref("x32_42_split3"))
        assert metrics.get("compiles") - before == (i >= _hot.HOT_CALLS)
    # under a transformation the functions join the caller's graph (no compile of their own)
    keys = pr.split(pr.PRNGKey(0), 4)
    before = metrics.get("compiles")
    folded = plait.vmap(lambda k: pr.fold_in(k, 7))(keys)
    assert metrics.get("compiles") == before
    for i in range(4):
        np.testing.assert_array_equal(np.asarray(folded[i]), np.asarray(pr.fold_in(keys[i], 7)))
