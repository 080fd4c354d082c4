"""Transformations: forward and reverse autodiff (``jvp``, ``vjp``, ``grad``, ...),
partial evaluation and transposition, custom derivative rules, and ``vmap``.

Importing this package also registers the autodiff and batching rules of the
higher-order primitives defined in ``plait.core`` (``jit_call``) and here (the
custom derivative calls).
"""
from plait.transforms.api_ad import (jvp, linearize, vjp, grad, value_and_grad, jacfwd,
                                     jacrev, hessian)
from plait.transforms.custom_derivatives import custom_jvp, custom_vjp
from plait.transforms.batching import vmap
from plait.transforms import custom_batching
from plait.transforms.custom_batching import custom_vmap
from plait.transforms import call_rules as _call_rules  # noqa: F401  (registers jit_call's rules)
from plait.transforms import batch_rules_calls as _batch_rules_calls  # noqa: F401  (vmap rules)
from plait.transforms import remat as _remat  # noqa: F401  (registers remat's rules)
