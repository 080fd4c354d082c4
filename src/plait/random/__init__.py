"""``plait.random``: functional, splittable PRNG keys (Threefry-2x32), like ``jax.random``.

Keys are ``uint32[2]`` arrays (``key``/``PRNGKey`` are the same; there is no separate
key dtype: ``key_data``/``wrap_key_data`` convert trivially). ``split``, ``fold_in``,
``bits``, ``uniform``, ``normal``, ``randint``, ``permutation``, ``choice``,
``bernoulli`` follow JAX's threefry algorithms bit for bit (float64 as JAX's x64 mode,
float32 as its default mode)::

    k = plait.random.key(0)
    k, sub = plait.random.split(k)
    x = plait.random.normal(sub, (3, 4))
"""
from plait.random.keys import (key, PRNGKey, split, fold_in, random_bits, bits, key_data,
                               wrap_key_data, key_impl, key_dtype, clone)
from plait.random.distributions import (uniform, normal, truncated_normal, bernoulli,
                                        randint, gumbel, categorical, permutation, shuffle,
                                        choice)
from plait.random.continuous import (exponential, laplace, logistic, cauchy, pareto,
                                     weibull_min, rayleigh, maxwell, double_sided_maxwell,
                                     rademacher, lognormal, wald, triangular, geometric,
                                     gamma, loggamma, chisquare, f, t, beta, dirichlet,
                                     generalized_normal, ball, poisson, binomial,
                                     multinomial, multivariate_normal, orthogonal)
from plait.random._special import erf, erfinv

__all__ = ["key", "PRNGKey", "split", "fold_in", "random_bits", "bits", "key_data",
           "wrap_key_data", "key_impl", "key_dtype", "clone", "uniform", "normal",
           "truncated_normal", "bernoulli", "randint", "gumbel", "categorical",
           "permutation", "shuffle", "choice", "exponential", "laplace", "logistic",
           "cauchy", "pareto", "weibull_min", "rayleigh", "maxwell", "double_sided_maxwell",
           "rademacher", "lognormal", "wald", "triangular", "geometric", "gamma",
           "loggamma", "chisquare", "f", "t", "beta", "dirichlet", "generalized_normal",
           "ball", "poisson", "binomial", "multinomial", "multivariate_normal",
           "orthogonal", "erf", "erfinv"]
