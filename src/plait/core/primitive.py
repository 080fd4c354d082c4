"""``Primitive``: the one extension point. A name, static params, and named rules.

Each rule is stored by name on the primitive (``impl``, ``abstract_eval``, ``jvp``,
``transpose``, ``batch``, ``to_tile``, ...). Interpreters ask for the rule they
need with :meth:`Primitive.rule`, which raises :class:`MissingRuleError` naming
the primitive and the rule when it is absent. Nothing switches on names.
"""
from __future__ import annotations

from typing import Callable

from plait.core.trace import bind as _bind
from plait.errors import MissingRuleError


class Primitive:
    """A primitive operation: ``bind(*arrays, **params)`` applies it under the current traces."""

    def __init__(self, name: str, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.rules: dict[str, Callable] = {}
        # True for primitives with side effects (callbacks): graph passes keep them
        # in place and run them once each (see plait.core.effects)
        self.effectful = False

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        """Apply the primitive to ``args`` under the innermost active trace."""
        return _bind(self, args, params)

    def def_rule(self, rule: str, fn: Callable) -> Callable:
        """Register ``fn`` as this primitive's ``rule``; returns ``fn`` (decorator-friendly)."""
        self.rules[rule] = fn
        return fn

    def rule(self, rule: str) -> Callable:
        """The registered ``rule``, or a :class:`MissingRuleError` naming this primitive."""
        try:
            return self.rules[rule]
        except KeyError:
            raise MissingRuleError(self.name, rule) from None

    def has_rule(self, rule: str) -> bool:
        return rule in self.rules

    def def_impl(self, fn: Callable) -> Callable:
        return self.def_rule("impl", fn)

    def def_abstract_eval(self, fn: Callable) -> Callable:
        return self.def_rule("abstract_eval", fn)

    @property
    def impl(self) -> Callable:
        return self.rule("impl")

    @property
    def abstract_eval(self) -> Callable:
        return self.rule("abstract_eval")


ALL_PRIMITIVES: dict[str, Primitive] = {}


def register_primitive(prim: Primitive) -> Primitive:
    """Record a primitive in the global registry (used by tests that sweep all primitives)."""
    if prim.name in ALL_PRIMITIVES and ALL_PRIMITIVES[prim.name] is not prim:
        raise ValueError(f"duplicate primitive name {prim.name!r}")
    ALL_PRIMITIVES[prim.name] = prim
    return prim


def new_primitive(name: str, multiple_results: bool = False) -> Primitive:
    """Create and register a primitive."""
    return register_primitive(Primitive(name, multiple_results))

