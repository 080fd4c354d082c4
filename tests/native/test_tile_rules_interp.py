"""Every ``to_tile`` rule, lowered to Stripe and run by the Stripe interpreter,
matches the primitive's NumPy ``impl`` on the op-table cases (no C involved)."""
from __future__ import annotations

import numpy as np
import pytest

import plait
from plait.backends.native.partition import KernelStep, partition
from plait.backends.native.target import host_target
from plait.core.graph import Literal, eval_graph_impl
from plait.stripe import interp, lower
from prim_table import CASES

_TOL = {np.dtype("float16"): 4e-3, np.dtype("float32"): 3e-5, np.dtype("float64"): 1e-11}


def _run_with_stripe(closed, args):
    g = closed.graph
    env = dict(zip(g.constvars, [np.asarray(c) for c in closed.consts]))
    env.update(zip(g.invars, [np.asarray(a) for a in args]))
    kernels = 0
    for st in partition(g, host_target()):
        if isinstance(st, KernelStep):
            kernels += 1
            outs = interp.run(lower(st.program), {n: env[v] for n, v in st.inputs.items()})
            for n, v in st.outputs.items():
                env[v] = outs[n]
        else:
            e = st.eqn
            r = e.prim.rule("impl")(*[a.val if isinstance(a, Literal) else env[a]
                                      for a in e.inputs], **e.params)
            for v, x in zip(e.outputs, r if e.prim.multiple_results else [r]):
                env[v] = np.asarray(x)
    return [a.val if isinstance(a, Literal) else env[a] for a in g.outvars], kernels


_LOWERABLE = [c for c in CASES if c.prim.has_rule("to_tile")]


@pytest.mark.parametrize("start", range(0, len(_LOWERABLE), 150))
def test_stripe_interpreter_matches_impl(start):
    lowered = 0
    for case in _LOWERABLE[start:start + 150]:
        args = case.make_args(np.random.default_rng(3))
        closed = plait.make_graph(case.fn)(*args)
        want = eval_graph_impl(closed.graph, closed.consts, args)
        got, k = _run_with_stripe(closed, args)
        lowered += k
        for g, w in zip(got, want):
            g, w = np.asarray(g), np.asarray(w)
            assert g.shape == w.shape and g.dtype == w.dtype, case.id
            if g.dtype.kind == "f":
                tol = max(_TOL[g.dtype], case.rtol or 0)
                np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True,
                                           err_msg=case.id)
            elif g.dtype.kind != "c":
                np.testing.assert_array_equal(g, w, err_msg=case.id)
    assert lowered > 0
