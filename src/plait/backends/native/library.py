"""Library calls: contractions the target config sends to the host's BLAS.

The Stripe paper lets large contractions lower to a library ``special`` where the
config says so, until generated code is faster. Here the measured gap is
matrix-vector products (one free dimension of size 1): generated code reads the
matrix with a row stride, while BLAS gemv streams it (VGG19's 25088x4096 dense layer
at batch 1: 534 ms generated, 13 ms BLAS). Such a ``dot_general`` runs as a host
step with its NumPy ``impl`` (which calls BLAS) when it has at least
``target.library_matvec_macs`` multiply-adds.
"""
from __future__ import annotations

import math

from plait.lax.contractions import dot_general_p


def _dot_matvec_macs(eqn) -> int:
    """Multiply-adds of a matrix-vector ``dot_general``, 0 for any other shape."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.inputs[0].aval.shape, eqn.inputs[1].aval.shape
    free_l = math.prod(d for i, d in enumerate(lhs) if i not in lc and i not in lb)
    free_r = math.prod(d for i, d in enumerate(rhs) if i not in rc and i not in rb)
    if min(free_l, free_r) != 1:
        return 0
    return math.prod(eqn.outputs[0].aval.shape) * math.prod(lhs[i] for i in lc)


dot_general_p.def_rule("library_macs", _dot_matvec_macs)


def use_library(eqn, target) -> bool:
    """Whether the target config sends this equation to a library call."""
    rule = eqn.prim.rules.get("library_macs")
    return (rule is not None and target.library_matvec_macs > 0
            and rule(eqn) >= target.library_matvec_macs)
