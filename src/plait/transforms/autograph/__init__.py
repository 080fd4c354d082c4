"""autograph: compile Python ``if``/``while``/``for`` into plait control flow.

``autograph(f)`` parses ``f``'s source, rewrites its control flow into calls of
run-time operators (:mod:`.runtime`) and compiles the result with ``f``'s globals
and closure cells. Each operator decides at run time: a traced condition or
iterable becomes ``plait.lax.cond``/``while_loop``/``scan`` (the phi values of an
``if`` and the carried values of a loop come from liveness analysis,
:mod:`.analysis`); a Python value keeps Python semantics (static ``if``s prune,
loops over Python ranges, lists and tuples unroll). ``to_source(f)`` shows the
rewritten code. ``jit(f, autograph=True)`` is ``jit(autograph(f))``.

Converted: ``if``/``elif``/``else``; ``while`` (also ``while ... else``); ``for``
over ``range(...)`` with traced bounds (a ``while_loop`` on a counter), over a
traced array's rows, ``enumerate(array)`` and ``zip(arrays...)`` (a ``scan``);
``break``/``continue``/``return`` anywhere (lowered to flags, :mod:`.jumps`);
``and``/``or``/``not``, chained comparisons and ``x if c else y`` on traced
values (``and``/``or`` then give booleans); ``assert``; calls of user functions,
methods, callable objects and ``functools.partial`` (converted recursively;
plait, NumPy, the standard library and installed packages are never converted).

Not converted, and what the user sees:

* a variable assigned in one branch of a traced ``if`` and used after it, or
  assigned only inside a traced loop and used after it or in the next iteration:
  ``ControlFlowError`` naming the variable, the statement's line and the
  assignment's line;
* a loop-carried value changing shape, dtype or structure (a Python list growing
  by ``append``): ``ControlFlowError`` with both types and the lines;
* branches giving different shapes, or different non-numeric Python values:
  ``ControlFlowError``; a traced non-scalar condition: ``ControlFlowError``
  suggesting ``.any()``/``.all()``;
* returning a value on some traced paths and falling off the end on others:
  ``ControlFlowError`` asking for a final ``return``;
* ``assert`` on a traced value: ``ControlFlowError`` (it cannot be checked while
  compiling);
* ``try``/``except``, ``with`` and ``match`` run as plain Python (a traced value
  inside a ``match`` pattern test raises ``TracerBoolConversionError``);
  comprehension filters on traced values raise ``TracerBoolConversionError``;
* Python side effects in traced branches and loop bodies (``print``, writes to
  globals, ``nonlocal`` names or attributes) run once per staging, at trace time;
  a traced value stored that way leaks (``UnexpectedTracerError`` when used);
* functions already wrapped by ``jit``, generators, ``async`` functions and
  functions without source (``exec``, the REPL) run unconverted; ``autograph``
  itself refuses the last three with ``ControlFlowError``; several lambdas on one
  line cannot be told apart and are not converted;
* recursion whose stopping test is traced never terminates (both branches are
  staged): ``RecursionError``.

Reverse-mode ``grad`` through a converted ``while`` (and a ``for`` over a traced
``range``) is not available because ``lax.while_loop`` is forward-mode only;
``for`` over arrays (``scan``) and ``if`` (``cond``) differentiate both ways.

Modules: ``analysis`` (names read/assigned, liveness, bound names), ``jumps``
(return/break/continue to flags), ``rewrite`` (the AST transformer), ``convert``
(source, compile, closure cells, caches), ``runtime`` and ``functional`` (the
operators and the staging of traced branches and loop bodies), ``info``.
"""
from plait.transforms.autograph.convert import autograph, to_source, is_library

converted_source = to_source
autograph.to_source = to_source

__all__ = ["autograph", "to_source", "converted_source", "is_library"]
