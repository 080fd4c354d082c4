"""``debug_nans`` / ``debug_infs``: find the operation that first produced a NaN or inf.

Eager operations check their own outputs (a hook in ``core.trace._eval_primitive``). A
jitted function's outputs are checked after the executable runs; when one holds a NaN
(or an infinity) the function's optimized graph is re-run op by op with each
primitive's NumPy ``impl``, and :class:`PlaitFloatingPointError` names the first
equation whose outputs hold one while its inputs do not, with the user's line the
equation was traced from (``Eqn.source``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from plait.config import config
from plait.core import trace as _trace
from plait.core.effects import has_effects
from plait.core.graph import ClosedGraph, Literal
from plait.errors import PlaitFloatingPointError


def _bad(x) -> str | None:
    """``"a NaN"``/``"an infinity"`` if ``x`` holds one that the settings ask about, else None."""
    x = getattr(x, "_value", x)
    if not isinstance(x, (np.ndarray, np.generic)) or x.dtype.kind not in "fc":
        return None
    if config.debug_nans and np.isnan(x).any():
        return "a NaN"
    if config.debug_infs and np.isinf(x).any():
        return "an infinity"
    return None


def enabled() -> bool:
    return config.debug_nans or config.debug_infs


def check_eager(prim, outs) -> None:
    """Raise if an eager primitive's outputs hold a NaN/inf (the user's line is appended)."""
    for o in (outs if prim.multiple_results else [outs]):
        kind = _bad(o)
        if kind is not None:
            raise PlaitFloatingPointError(
                f"debug_nans: {prim.name} produced {kind}; turn the check off with "
                f"plait.config.update('debug_{'nans' if 'NaN' in kind else 'infs'}', False)")


def check_jit(closed: ClosedGraph, args: Sequence, outs: Sequence, name: str) -> None:
    """Raise if a jitted function's outputs hold a NaN/inf, naming where it first arose."""
    kinds = [k for k in map(_bad, outs) if k is not None]
    if not kinds:
        return
    found = _locate(closed, args)
    if found is None:
        where = "its inputs already held one (no operation produced it)"
    else:
        eqn, kind = found
        where = (f"the first operation producing it is {eqn.prim.name}, traced at "
                 f"{eqn.source or '<unknown location>'}")
    raise PlaitFloatingPointError(
        f"debug_nans: the jitted function {name} produced {kinds[0]}; re-run op by op, "
        f"{where}", locate=found is None)


def _locate(closed: ClosedGraph, args: Sequence):
    g = closed.graph
    env = {}
    env.update(zip(g.constvars, [getattr(c, "_value", c) for c in closed.consts]))
    env.update(zip(g.invars, [getattr(a, "_value", a) for a in args]))

    def read(a):
        return a.val if isinstance(a, Literal) else env[a]
    for eqn in g.eqns:
        if has_effects(eqn) and not eqn.outputs:
            continue   # do not repeat prints
        ins = [read(a) for a in eqn.inputs]
        r = eqn.prim.rule("impl")(*ins, **eqn.params)
        rs = r if eqn.prim.multiple_results else [r]
        for v, x in zip(eqn.outputs, rs):
            env[v] = np.asarray(x)
        kind = next((k for k in map(_bad, rs) if k is not None), None)
        if kind is not None and all(_bad(x) is None for x in ins):
            return eqn, kind
    return None


_trace.register_runtime(eager_check=check_eager)
