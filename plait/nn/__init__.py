"""``plait.nn``: neural-network functions (activations, softmax, one_hot, ...) and
``plait.nn.init`` parameter initializers, like ``jax.nn``."""
from plait.nn.functions import (relu, relu6, leaky_relu, elu, selu, sigmoid, silu, swish,
                                softplus, log_sigmoid, gelu, logsumexp, log_softmax, softmax, one_hot,
                                standardize)
from plait.nn import init

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "sigmoid", "silu", "swish",
           "softplus", "log_sigmoid", "gelu", "logsumexp", "log_softmax", "softmax", "one_hot",
           "standardize", "init"]
