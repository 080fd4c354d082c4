"""``plait.nn``: neural-network functions (activations, softmax, attention, one_hot, ...)
and parameter initializers (``plait.nn.initializers``, also ``plait.nn.init``), like
``jax.nn``."""
from plait.nn.functions import (relu, relu6, leaky_relu, elu, selu, celu, sigmoid, silu,
                                swish, softplus, log_sigmoid, gelu, logsumexp, logmeanexp,
                                log_softmax, softmax, one_hot, standardize, identity, tanh,
                                glu, mish, hard_sigmoid, hard_silu, hard_swish, hard_tanh,
                                squareplus, sparse_plus, sparse_sigmoid, soft_sign, log1mexp)
from plait.nn.attention import dot_product_attention
from plait.nn import init, initializers

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "sigmoid", "silu", "swish",
           "softplus", "log_sigmoid", "gelu", "logsumexp", "logmeanexp", "log_softmax",
           "softmax", "one_hot", "standardize", "identity", "tanh", "glu", "mish",
           "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "squareplus",
           "sparse_plus", "sparse_sigmoid", "soft_sign", "log1mexp", "dot_product_attention",
           "init", "initializers"]
