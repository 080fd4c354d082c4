"""plait.nn.initializers against values recorded from jax.nn.initializers in float32
(tests/libs/jax_init_reference.py; JAX is not imported)."""
import numpy as np
import pytest

import plait
from plait import random as pr
from plait.nn import initializers as I
from jax_init_reference import REF

F32 = np.float32
EXACT = {
    "glorot_uniform": lambda k: I.glorot_uniform()(k, (4, 5), F32),
    "he_uniform_conv": lambda k: I.he_uniform(in_axis=1, out_axis=0)(k, (3, 2, 2, 2), F32),
    "lecun_uniform": lambda k: I.lecun_uniform()(k, (3, 4), F32),
    "uniform": lambda k: I.uniform(2.0)(k, (6,), F32),
}
CLOSE = {  # normals: within a few float32 ulps; truncated/orthogonal: float32 rounding
    "normal": (lambda k: I.normal(0.5)(k, (6,), F32), 1e-6),
    "he_normal_vs": (lambda k: I.variance_scaling(2.0, "fan_in", "normal")(k, (4, 3), F32), 1e-6),
    "glorot_normal": (lambda k: I.glorot_normal()(k, (4, 5), F32), 3e-6),
    "truncated_normal": (lambda k: I.truncated_normal(0.3)(k, (6,), F32), 3e-6),
    "orthogonal": (lambda k: I.orthogonal()(k, (4, 3), F32), 3e-6),
    "orthogonal_wide": (lambda k: I.orthogonal(scale=2.0)(k, (2, 5), F32), 5e-6),
    "delta_orthogonal": (lambda k: I.delta_orthogonal()(k, (3, 3, 2, 3), F32), 3e-6),
}


def ref(name):
    shape, vals = REF[name]
    return np.array([float.fromhex(v) for v in vals], F32).reshape(shape)


def test_initializers_match_jax():
    k = pr.PRNGKey(3)
    for name, fn in EXACT.items():
        got = np.asarray(fn(k))
        assert got.dtype == F32
        np.testing.assert_array_equal(got, ref(name), err_msg=name)
    for name, (fn, atol) in CLOSE.items():
        got = np.asarray(fn(k))
        assert got.dtype == F32 and got.shape == ref(name).shape
        np.testing.assert_allclose(got, ref(name), rtol=0, atol=atol, err_msg=name)


def test_names_and_errors():
    assert I.xavier_uniform is I.glorot_uniform and I.kaiming_normal is I.he_normal
    assert np.asarray(I.constant(3.0)(None, (2,))).tolist() == [3.0, 3.0]
    assert np.asarray(I.ones(None, (2,))).tolist() == [1.0, 1.0]
    with pytest.raises(plait.errors.PlaitValueError):
        I.delta_orthogonal()(pr.key(0), (3, 3, 4, 2))
    with pytest.raises(plait.errors.PlaitValueError):
        I.orthogonal()(pr.key(0), (3,))
