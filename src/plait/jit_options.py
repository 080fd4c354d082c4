"""Argument-selecting ``jit`` options (``static_argnums``/``static_argnames``,
``donate_argnums``/``donate_argnames``) resolved against the function's signature.

JAX's rules: positions and names name the same parameters, so each is completed from the
other through the signature (a parameter marked by position is also marked when passed by
keyword, and the reverse); a name that is not a parameter of a function without
``**kwargs`` is an error.
"""
from __future__ import annotations

import inspect
from typing import Sequence

from plait.core.pytree import tree_flatten
from plait.errors import StaticArgumentError

_POSITIONAL = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.POSITIONAL_ONLY)


def as_tuple(x, kind) -> tuple:
    return (x,) if isinstance(x, kind) else tuple(x)


def resolve(sig: inspect.Signature | None, nums: Sequence[int], names: Sequence[str],
            option: str, fname: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """``(argnums, argnames)`` completed from each other through ``sig``."""
    nums, names = tuple(nums), tuple(names)
    if sig is None:
        return nums, names
    params = list(sig.parameters.values())
    has_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    known = {p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL}
    bad = [n for n in names if n not in known]
    if bad and not has_var_kw:
        raise StaticArgumentError(
            f"{option}_argnames of {fname} names {bad}, which {'is' if len(bad) == 1 else 'are'}"
            f" not parameters of the function (it takes {[p.name for p in params]})")
    positional = [p for p in params if p.kind in _POSITIONAL]
    out_nums = set(nums)
    out_names = set(names)
    for i, p in enumerate(positional):
        if p.name in names:
            out_nums.add(i)
        if (i in nums or (i - len(positional)) in nums) and \
                p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            out_names.add(p.name)
    return tuple(sorted(out_nums)), tuple(sorted(out_names))


def donated_leaves(args: tuple, kwargs: dict, nums: Sequence[int], names: Sequence[str]
                   ) -> list:
    """The leaves of the arguments marked for donation (positional and keyword)."""
    n = len(args)
    picked = [args[i] for i in sorted({i if i >= 0 else n + i for i in nums}) if 0 <= i < n]
    picked += [kwargs[k] for k in names if k in kwargs]
    return tree_flatten(picked)[0]
