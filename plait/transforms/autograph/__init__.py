"""autograph: compile Python ``if``/``while``/``for`` into plait control flow.

``autograph(f)`` parses ``f``'s source, rewrites its control flow into calls of
run-time operators (:mod:`.runtime`) and compiles the result with ``f``'s globals
and closure. Each operator decides at run time: a traced condition or iterable
becomes ``plait.lax.cond``/``while_loop``/``scan`` (the phi values of an ``if``
and the carried values of a loop come from liveness analysis, :mod:`.analysis`);
a Python value keeps Python semantics. ``to_source(f)`` shows the rewritten code.

Modules: ``analysis`` (names read/assigned, liveness), ``jumps`` (return/break/
continue to flags), ``rewrite`` (the AST transformer), ``convert`` (source,
compile, closure, caches), ``runtime`` and ``functional`` (the operators).
"""
from plait.transforms.autograph.convert import autograph, to_source, is_library

converted_source = to_source
autograph.to_source = to_source

__all__ = ["autograph", "to_source", "converted_source", "is_library"]
