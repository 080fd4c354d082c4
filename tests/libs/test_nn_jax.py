"""plait.nn against values recorded from jax.nn (tests/libs/jax_nn_reference.py; JAX is
not imported), analytic identities, and gradients by check_grads."""
import math

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import nn
from plait.test_util import check_grads
from jax_nn_reference import REF

X = np.linspace(-4, 4, 17)
M = X[:16].reshape(2, 8)
W = (np.arange(16) % 3 != 0).reshape(2, 8)
_rng = np.random.default_rng(0)
Q = _rng.standard_normal((2, 5, 4, 3))
K = _rng.standard_normal((2, 6, 2, 3))
V = _rng.standard_normal((2, 6, 2, 3))
BIAS = _rng.standard_normal((1, 4, 5, 6))
MASK = _rng.random((2, 1, 5, 6)) > 0.3


def ref(name, shape=None):
    v = np.array([float.fromhex(h) for h in REF[name]])
    return v if shape is None else v.reshape(shape)


CASES = {
    "celu": lambda: nn.celu(X), "celu_a2": lambda: nn.celu(X, 2.0), "mish": lambda: nn.mish(X),
    "hard_sigmoid": lambda: nn.hard_sigmoid(X), "hard_silu": lambda: nn.hard_silu(X),
    "hard_tanh": lambda: nn.hard_tanh(X), "squareplus": lambda: nn.squareplus(X),
    "sparse_plus": lambda: nn.sparse_plus(X), "sparse_sigmoid": lambda: nn.sparse_sigmoid(X),
    "soft_sign": lambda: nn.soft_sign(X), "relu6": lambda: nn.relu6(X), "elu": lambda: nn.elu(X),
    "selu": lambda: nn.selu(X), "silu": lambda: nn.silu(X), "log_sigmoid": lambda: nn.log_sigmoid(X),
    "softplus": lambda: nn.softplus(X), "sigmoid": lambda: nn.sigmoid(X),
    "gelu_tanh": lambda: nn.gelu(X, approximate=True),
    "leaky_relu": lambda: nn.leaky_relu(X, 0.1),
    "log1mexp": lambda: nn.log1mexp(np.array([1e-8, 0.1, 0.69, 0.7, 3., 40.])),
    "glu": lambda: nn.glu(M, axis=-1),
    "softmax_where": lambda: nn.softmax(M, where=W),
    "log_softmax_where": lambda: pnp.where(W, nn.log_softmax(M, where=W), 0.),
    "logsumexp_b": lambda: nn.logsumexp(M, axis=1, b=np.array([1., 2.] * 4)),
    "logmeanexp": lambda: nn.logmeanexp(M, axis=1),
    "attn_plain": lambda: nn.dot_product_attention(Q, K, V),
    "attn_bias_mask": lambda: nn.dot_product_attention(Q, K, V, bias=BIAS, mask=MASK, scale=0.7),
    "attn_causal": lambda: nn.dot_product_attention(Q, K[:, :5], V[:, :5], is_causal=True),
    "attn_lengths": lambda: nn.dot_product_attention(
        Q, K, V, query_seq_lengths=np.array([5, 3]), key_value_seq_lengths=np.array([4, 6])),
    "attn_window": lambda: nn.dot_product_attention(Q, K[:, :5], V[:, :5],
                                                    local_window_size=(1, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
    got = np.asarray(CASES[name]()).ravel()
    if name.startswith("attn"):
        # JAX computes attention logits in float32 even for float64 inputs
        # (preferred_element_type=float32); plait keeps float64, so agree to ~1e-7
        np.testing.assert_allclose(got, ref(name), rtol=0, atol=5e-7)
    else:
        np.testing.assert_allclose(got, ref(name), rtol=1e-13, atol=1e-14)


def test_gelu_exact_and_unbatched_attention():
    np.testing.assert_allclose(np.asarray(nn.gelu(X, approximate=False)), ref("gelu_erf"),
                               rtol=1e-14, atol=1e-15)
    x32 = X.astype(np.float32)
    g32 = np.asarray(nn.gelu(x32, approximate=False))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, ref("gelu_erf"), rtol=2e-7, atol=2e-7)
    one = np.asarray(nn.dot_product_attention(Q[0], K[0], V[0]))
    np.testing.assert_allclose(one, ref("attn_plain", (2, 5, 4, 3))[0], atol=5e-7)
    assert nn.hard_swish is nn.hard_silu and np.asarray(nn.identity(X)).tolist() == X.tolist()
    with pytest.raises(plait.errors.PlaitValueError):
        nn.glu(np.ones((3,)))
    with pytest.raises(plait.errors.PlaitValueError):
        nn.dot_product_attention(Q, K[:, :, :1].repeat(3, 2), V[:, :, :1].repeat(3, 2))


def test_grads():
    x = np.array([-2.3, -0.6, 0.4, 1.7, 3.1])
    for f in (nn.celu, nn.mish, nn.squareplus, nn.soft_sign):
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    check_grads(nn.log1mexp, (np.abs(x) + 0.1,), order=2, modes=("fwd", "rev"))
    check_grads(lambda m: nn.glu(m), (M / 4,), order=1, modes=("rev",))
    check_grads(lambda m: nn.softmax(m, where=W), (M / 4,), order=1, modes=("rev",))
    check_grads(lambda q, k, v: nn.dot_product_attention(q, k, v, bias=BIAS, mask=MASK),
                (Q, K, V), order=1, modes=("rev",))
