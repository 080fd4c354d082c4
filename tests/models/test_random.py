"""plait.random: known-answer Threefry, Kolmogorov-Smirnov tests of the distributions,
determinism, independence of split keys, and equal values eagerly and under jit."""
import math

import numpy as np
import pytest

import plait
from plait import random
from plait.random._threefry import threefry2x32

N = 20000


def ks_statistic(samples, cdf) -> float:
    """The Kolmogorov-Smirnov distance between the samples' empirical CDF and ``cdf``."""
    x = np.sort(np.asarray(samples, np.float64).ravel())
    n = x.size
    f = cdf(x)
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - f), np.max(f - (i - 1) / n)))


def ks_critical(n: int, alpha: float = 1e-3) -> float:
    """Asymptotic critical value of the one-sample KS statistic at level ``alpha``."""
    return math.sqrt(-0.5 * math.log(alpha / 2)) / math.sqrt(n)


def normal_cdf(x):
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def test_threefry_known_answers():
    # Random123's known-answer vectors for threefry2x32 with 20 rounds.
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for key, ctr, want in cases:
        u = lambda v: plait.numpy.asarray(np.array([v], np.uint32))
        a, b = threefry2x32(u(key[0]), u(key[1]), u(ctr[0]), u(ctr[1]))
        assert (int(a[0]), int(b[0])) == want


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_ks(dtype):
    u = np.asarray(random.uniform(random.key(0), (N,), dtype))
    assert u.dtype == dtype and u.min() >= 0 and u.max() < 1
    assert ks_statistic(u, lambda x: np.clip(x, 0, 1)) < ks_critical(N)


def test_uniform_range():
    u = np.asarray(random.uniform(random.key(3), (N,), minval=-2.0, maxval=5.0))
    assert u.min() >= -2 and u.max() < 5
    assert ks_statistic(u, lambda x: np.clip((x + 2) / 7, 0, 1)) < ks_critical(N)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_ks(dtype):
    z = np.asarray(random.normal(random.key(1), (N,), dtype))
    assert z.dtype == dtype and np.isfinite(z).all()
    assert ks_statistic(z, normal_cdf) < ks_critical(N)
    assert abs(z.mean()) < 4 / math.sqrt(N) and abs(z.std() - 1) < 0.03


def test_ks_detects_a_wrong_distribution():
    # The statistic has power: normal samples are not uniform, uniform ones are not normal.
    z = np.asarray(random.normal(random.key(1), (N,)))
    assert ks_statistic(z * 0.9, normal_cdf) > ks_critical(N)
    u = np.asarray(random.uniform(random.key(0), (N,)))
    assert ks_statistic(u ** 1.05, lambda x: np.clip(x, 0, 1)) > ks_critical(N)


def test_truncated_normal_ks():
    lo, hi = -1.0, 2.0
    z = np.asarray(random.truncated_normal(random.key(2), lo, hi, (N,)))
    assert z.min() >= lo and z.max() <= hi
    a, b = normal_cdf(np.array(lo)), normal_cdf(np.array(hi))
    assert ks_statistic(z, lambda x: (normal_cdf(x) - a) / (b - a)) < ks_critical(N)


def test_bernoulli_randint_categorical_frequencies():
    b = np.asarray(random.bernoulli(random.key(4), 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 4 * math.sqrt(0.21 / N)
    r = np.asarray(random.randint(random.key(5), (N,), 3, 10))
    assert r.dtype == np.int64 and r.min() == 3   # plait's default int, as JAX's x64 mode and r.max() == 9
    counts = np.bincount(r - 3, minlength=7) / N
    assert np.abs(counts - 1 / 7).max() < 0.012
    big = np.asarray(random.randint(random.key(5), (N,), -2 ** 31, 2 ** 31 - 1))
    assert big.min() < -2 ** 30 and big.max() > 2 ** 30
    p = np.array([0.1, 0.2, 0.7])
    c = np.asarray(random.categorical(random.key(6), np.log(p), shape=(N,)))
    assert np.abs(np.bincount(c, minlength=3) / N - p).max() < 0.015


def test_permutation_shuffle_choice():
    k = random.key(7)
    perm = np.asarray(random.permutation(k, 50))
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))
    x = np.arange(24).reshape(4, 6)
    px = np.asarray(random.permutation(k, x, axis=1))
    assert sorted(px[0].tolist()) == list(range(6))
    np.testing.assert_array_equal(px - px[:1], x - x[:1])        # whole columns move
    np.testing.assert_array_equal(np.asarray(random.shuffle(k, x, axis=1)), px)
    c = np.asarray(random.choice(k, 10, (5,), replace=False))
    assert len(set(c.tolist())) == 5 and c.min() >= 0 and c.max() < 10
    w = np.asarray(random.choice(k, np.arange(5) * 10, (N,), p=np.array([0, 0, 0, 0.25, 0.75])))
    assert set(np.unique(w).tolist()) == {30, 40} and abs((w == 40).mean() - 0.75) < 0.015
    d = np.asarray(random.choice(k, 5, (3,), replace=False, p=np.array([.1, .1, .1, .1, .6])))
    assert len(set(d.tolist())) == 3
    with pytest.raises(plait.errors.PlaitValueError):
        random.choice(k, 3, (4,), replace=False)


def test_permutation_is_uniform_over_positions():
    # Where does element 0 land, over many keys? Uniform on 5 positions.
    perm = plait.jit(lambda k: random.permutation(k, 5), backend="interp")
    keys = np.asarray(random.split(random.key(8), 1000))
    pos = [int(np.argmax(np.asarray(perm(keys[i])) == 0)) for i in range(1000)]
    assert np.abs(np.bincount(pos, minlength=5) / 1000 - 0.2).max() < 0.06


def test_determinism_and_key_sensitivity():
    a = np.asarray(random.normal(random.key(42), (100,)))
    b = np.asarray(random.normal(random.key(42), (100,)))
    c = np.asarray(random.normal(random.key(43), (100,)))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert np.asarray(random.key(2 ** 40 + 5)).tolist() == [256, 5]


def test_split_and_fold_in_independence():
    k = random.key(0)
    ks = random.split(k, 4)
    assert ks.shape == (4, 2) and ks.dtype == np.uint32
    assert len({tuple(np.asarray(x).tolist()) for x in ks}) == 4
    draws = np.stack([np.asarray(random.uniform(ks[i], (N,))) for i in range(4)])
    corr = np.corrcoef(draws)
    assert np.abs(corr[~np.eye(4, dtype=bool)]).max() < 4 / math.sqrt(N)
    parent = np.asarray(random.uniform(k, (N,)))
    assert abs(np.corrcoef(parent, draws[0])[0, 1]) < 4 / math.sqrt(N)
    f1, f2 = random.fold_in(k, 1), random.fold_in(k, 2)
    assert np.asarray(f1).tolist() != np.asarray(f2).tolist()
    np.testing.assert_array_equal(np.asarray(random.fold_in(k, 1)), np.asarray(f1))
    k1, k2 = random.split(k)                          # unpacking works
    np.testing.assert_array_equal(np.asarray(k2), np.asarray(random.split(k, 2)[1]))


SAMPLERS = {
    "bits": lambda k: random.random_bits(k, (3, 5)),
    "uniform": lambda k: random.uniform(k, (7,)),
    "uniform64": lambda k: random.uniform(k, (7,), np.float64),
    "split": lambda k: random.split(k, 3),
    "fold_in": lambda k: random.fold_in(k, 9),
    "bernoulli": lambda k: random.bernoulli(k, 0.4, (9,)),
    "randint": lambda k: random.randint(k, (9,), -5, 1000),
    "permutation": lambda k: random.permutation(k, 9),
    "choice": lambda k: random.choice(k, 20, (4,)),
    "categorical": lambda k: random.categorical(k, np.zeros((3, 4), np.float32)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("backend", ["interp", "native"])
def test_same_values_under_jit(name, backend):
    if backend == "native":
        from plait.codegen.toolchain import find_toolchain
        if find_toolchain() is None:
            pytest.skip("no C compiler for the native backend")
    f = SAMPLERS[name]
    k = random.key(11)
    np.testing.assert_array_equal(np.asarray(plait.jit(f, backend=backend)(k)),
                                  np.asarray(f(k)))


@pytest.mark.parametrize("backend", ["interp", "native"])
def test_normal_under_jit(backend):
    # Bit-identical on interp; the native backend's libm may differ in the last ulp.
    if backend == "native":
        from plait.codegen.toolchain import find_toolchain
        if find_toolchain() is None:
            pytest.skip("no C compiler for the native backend")
    f = lambda k: (random.normal(k, (64,)), random.truncated_normal(k, -1.0, 1.0, (64,)))
    k = random.key(12)
    got, want = plait.jit(f, backend=backend)(k), f(k)
    for g, w in zip(got, want):
        if backend == "interp":
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        else:
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


def test_traced_key_and_seed():
    f = plait.jit(lambda seed: random.uniform(random.key(seed), (4,)), backend="interp")
    np.testing.assert_array_equal(np.asarray(f(np.int32(5))),
                                  np.asarray(random.uniform(random.key(5), (4,))))


def test_bad_keys_are_clear_errors():
    with pytest.raises(plait.errors.PlaitTypeError, match="key"):
        random.uniform(np.zeros(2, np.int32), (3,))
    with pytest.raises(plait.errors.PlaitTypeError, match="key"):
        random.normal(random.split(random.key(0), 3), (3,))
    with pytest.raises(plait.errors.PlaitTypeError):
        random.uniform(random.key(0), (3,), np.int32)
    with pytest.raises(plait.errors.PlaitTypeError):
        random.key(1.5)

