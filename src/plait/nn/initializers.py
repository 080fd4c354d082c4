"""``plait.nn.initializers``: the parameter initializers under JAX's module name (the same
functions as :mod:`plait.nn.init`)."""
from plait.nn.init import (Initializer, zeros, ones, constant, normal, uniform,
                           truncated_normal, variance_scaling, glorot_uniform, glorot_normal,
                           he_uniform, he_normal, lecun_uniform, lecun_normal,
                           kaiming_uniform, kaiming_normal, xavier_uniform, xavier_normal,
                           orthogonal, delta_orthogonal)

__all__ = ["Initializer", "zeros", "ones", "constant", "normal", "uniform",
           "truncated_normal", "variance_scaling", "glorot_uniform", "glorot_normal",
           "he_uniform", "he_normal", "lecun_uniform", "lecun_normal", "kaiming_uniform",
           "kaiming_normal", "xavier_uniform", "xavier_normal", "orthogonal",
           "delta_orthogonal"]
