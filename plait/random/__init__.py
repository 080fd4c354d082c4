"""``plait.random``: functional, splittable PRNG keys (Threefry-2x32), like ``jax.random``.

Keys are ``uint32[2]`` arrays; the same key gives the same numbers eagerly, under
``jit`` and on every backend::

    k = plait.random.key(0)
    k, sub = plait.random.split(k)
    x = plait.random.normal(sub, (3, 4))
"""
from plait.random.keys import key, PRNGKey, split, fold_in, random_bits
from plait.random.distributions import (uniform, normal, truncated_normal, bernoulli,
                                        randint, gumbel, categorical, permutation, shuffle,
                                        choice)
from plait.random._special import erf, erfinv

__all__ = ["key", "PRNGKey", "split", "fold_in", "random_bits", "uniform", "normal",
           "truncated_normal", "bernoulli", "randint", "gumbel", "categorical",
           "permutation", "shuffle", "choice", "erf", "erfinv"]
