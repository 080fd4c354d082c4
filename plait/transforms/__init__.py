"""Transformations: forward and reverse autodiff (``jvp``, ``vjp``, ``grad``, ...),
partial evaluation and transposition, and custom derivative rules.

Importing this package also registers the autodiff rules of the higher-order
primitives defined in ``plait.core`` (``jit_call``).
"""
from plait.transforms.api_ad import (jvp, linearize, vjp, grad, value_and_grad, jacfwd,
                                     jacrev, hessian)
from plait.transforms.custom_derivatives import custom_jvp, custom_vjp
from plait.transforms import call_rules as _call_rules  # noqa: F401  (registers jit_call's rules)
