"""Tracers and the trace stack: how ``bind`` decides which interpreter runs a primitive.

Interpreters (eval, graph staging, jvp, vmap, ...) are ``Trace`` subclasses. Each
active transformation owns a ``MainTrace`` on a stack; a tracer belongs to one
main. ``bind`` sends a primitive to the innermost (highest-level) main among its
arguments, raising lower-level values into it first. While ``jit`` stages a
function, its main is *dynamic*: every primitive is staged, even one whose
inputs are all constants.

Each thread has its own stack (``threading.local``): a thread that traces never
sees another thread's transformations, and a tracer used in a thread other than
the one tracing it is an ``UnexpectedTracerError``. (A trace never spans an
``await``, since traced functions are synchronous, so per thread is also per
asyncio task.) ``_NESTED`` counts the transformations active in all threads
together; while it is 0, ``bind`` knows every thread is at top level without
reading its thread's stack, which keeps the eager path as fast as a global stack.

Concrete arrays are not defined here: ``plait.runtime`` registers its ``Array``
type (and its eager NaN check) with :func:`register_runtime`, the core's one runtime
hook; :func:`wrap_array` and :func:`is_concrete_array` are how the rest of plait makes
and recognizes them.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np

from plait.core.aval import ShapedArray, aval_of
from plait.core.array_methods import ArrayMethods
from plait.config import config as _config
from plait.core.dtypes import narrow_value
from plait.errors import (TracerArrayConversionError, TracerBoolConversionError,
                          TracerIntegerConversionError, UnexpectedTracerError,
                          PlaitTypeError)


class MainTrace:
    """One active transformation: its level on the stack, trace class, and payload.

    ``owner`` is the stack (one per thread) it was pushed on, or None for a
    permanent interpreter shared by all threads (eager evaluation, lazy arrays).
    """

    __slots__ = ("level", "trace_type", "payload", "alive", "description", "owner")

    def __init__(self, level: int, trace_type: type, payload: Any = None,
                 description: str = ""):
        self.level = level
        self.trace_type = trace_type
        self.payload = payload
        self.alive = True
        self.description = description
        self.owner: list | None = None

    def with_trace(self) -> "Trace":
        return self.trace_type(self)

    def __repr__(self):
        return f"MainTrace({self.level}, {self.trace_type.__name__})"


class Trace:
    """An interpreter for primitives applied to its tracers."""

    __slots__ = ("main",)

    def __init__(self, main: MainTrace):
        self.main = main

    def pure(self, val) -> "Tracer":
        """Wrap a concrete value (not a tracer) as a tracer of this trace."""
        raise NotImplementedError

    def lift(self, tracer: "Tracer") -> "Tracer":
        """Wrap a tracer of a lower-level trace as a tracer of this trace."""
        raise NotImplementedError

    def process_primitive(self, prim, tracers, params):
        raise NotImplementedError

    def process_vjp(self, flat_fun, primals: list, description: str):
        """Reverse mode done by the interpreter itself, or None for the generic path.

        ``vjp`` asks the top trace of its primals first. An interpreter that records
        rather than runs (the lazy trace) may run ``flat_fun`` once on its own values
        and differentiate the recording as a whole; it returns ``(outs, pullback,
        out_avals)`` with ``pullback(cotangents) -> one cotangent per primal``.
        """
        return None

    def __repr__(self):
        return f"{type(self).__name__}(level={self.main.level})"


class Tracer(ArrayMethods):
    """A stand-in for an array during a transformation; knows its abstract value."""

    __slots__ = ("_trace",)
    __array_priority__ = 1000

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    def full_lower(self):
        """The simplest equivalent value (a lower-level value when possible)."""
        return self

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return self.aval.ndim

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    def __len__(self):
        if not self.aval.shape:
            raise PlaitTypeError("len() of a 0-d array")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise PlaitTypeError("iteration over a 0-d array")
        return iter([self[i] for i in range(self.aval.shape[0])])

    def _concrete_needed(self, what: str):
        return (f"{what} was called on a traced array of type {self.aval.str_short()} "
                f"(a value that only exists when the compiled function runs; "
                f"{self._trace.main.description or 'a transformation'} is tracing it).")

    def __bool__(self):
        raise TracerBoolConversionError(
            self._concrete_needed("bool()") +
            " Python `if`, `while`, `and`, `or` and `not` need a concrete value. "
            "Use plait.numpy.where or plait.lax.cond/while_loop for data-dependent "
            "choices, pass the value as a static argument (jit(f, static_argnums=...)), "
            "or compile Python control flow with jit(f, autograph=True).")

    def _int_error(self, what):
        raise TracerIntegerConversionError(
            self._concrete_needed(what) +
            " Its value is not known while tracing. Use it as an array, or mark the "
            "argument static with jit(f, static_argnums=...).")

    def __int__(self):
        self._int_error("int()")

    def __float__(self):
        self._int_error("float()")

    def __complex__(self):
        self._int_error("complex()")

    def __index__(self):
        self._int_error("__index__ (use as a Python index or size)")

    def item(self):
        self._int_error("item()")

    def tolist(self):
        self._int_error("tolist()")

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            f"numpy.asarray() was called on a traced array of type "
            f"{self.aval.str_short()}. NumPy functions cannot see inside "
            f"{self._trace.main.description or 'a transformation'}; use "
            f"plait.numpy instead of numpy in functions you trace.")

    def __hash__(self):
        raise PlaitTypeError(f"traced arrays are not hashable ({self.aval.str_short()}); "
                             "static (hashable) arguments must be marked static")

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}>with<{type(self._trace).__name__}>"

    def __setitem__(self, idx, val):
        raise PlaitTypeError("plait arrays are immutable; use x = x.at[idx].set(val)")


# ---------------------------------------------------------------------------
# Concrete values

class Runtime:
    """What the runtime tells the core (filled by :func:`register_runtime`).

    ``array_type`` is the class of concrete arrays (instances expose ``_value``, a
    NumPy array, ``weak_type`` and ``aval``); ``wrap(ndarray, weak_type)`` builds one;
    ``eager_check(prim, outs)`` sees every eagerly computed output while
    ``config.debug_nans``/``debug_infs`` is on.
    """

    __slots__ = ("array_type", "wrap", "eager_check")

    def __init__(self):
        self.array_type: type | None = None
        self.wrap: Callable[[np.ndarray, bool], Any] | None = None
        self.eager_check: Callable[[Any, Any], None] = lambda prim, outs: None


RUNTIME = Runtime()


def register_runtime(*, array_type: type | None = None,
                     wrap: Callable[[np.ndarray, bool], Any] | None = None,
                     eager_check: Callable[[Any, Any], None] | None = None) -> None:
    """The one hook through which ``plait.runtime`` plugs into the core.

    The core defines no concrete array: the runtime registers its array class and
    wrapper (``plait.runtime.array``) and its eager NaN/Inf check
    (``plait.runtime.nan_check``). Each given argument replaces the registered one.
    """
    if array_type is not None:
        RUNTIME.array_type = array_type
    if wrap is not None:
        RUNTIME.wrap = wrap
    if eager_check is not None:
        RUNTIME.eager_check = eager_check


def wrap_array(value: np.ndarray, weak_type: bool = False):
    """A concrete array (the registered runtime type) holding the NumPy ``value``."""
    return RUNTIME.wrap(value, weak_type)


def is_concrete_array(x) -> bool:
    """True for an instance of the registered concrete array type."""
    cls = RUNTIME.array_type
    return cls is not None and isinstance(x, cls)


def _native(x: np.ndarray) -> np.ndarray:
    """``x`` in the machine's byte order (big-endian input is converted, not rejected)."""
    return x if x.dtype.isnative else x.astype(x.dtype.newbyteorder("="))


def concrete_value(x) -> np.ndarray:
    """The NumPy value of a concrete input (registered array, NumPy value, Python scalar)."""
    t = type(x)
    cls = RUNTIME.array_type
    if t is cls:
        return x._value
    if t is np.ndarray:
        if not _config.x64:
            x = narrow_value(x)
        return x if x.dtype.isnative else _native(x)
    if cls is not None and isinstance(x, cls):
        return x._value
    if isinstance(x, np.ndarray):
        x = narrow_value(x)
        return x if x.dtype.isnative else _native(x)
    if isinstance(x, np.generic):
        return _native(narrow_value(np.asarray(x)))
    if isinstance(x, (bool, int, float, complex)):
        return np.asarray(x, dtype=aval_of(x).dtype)
    raise PlaitTypeError(f"{type(x).__name__} is not a valid plait array value: {x!r:.60}")


def get_aval(x) -> ShapedArray:
    """Abstract value of a tracer or concrete value."""
    cls = RUNTIME.array_type
    if type(x) is cls or isinstance(x, Tracer):
        return x.aval
    if cls is not None and isinstance(x, cls):
        return x.aval
    try:
        return aval_of(x)
    except TypeError:
        raise PlaitTypeError(f"{type(x).__name__} is not a valid plait array value: "
                             f"{x!r:.60}") from None


def is_tracer(x) -> bool:
    return isinstance(x, Tracer)


# ---------------------------------------------------------------------------
# The stack

class EvalTrace(Trace):
    """The base interpreter: apply each primitive's ``impl`` to concrete values."""

    def pure(self, val):
        return val

    lift = pure

    def process_primitive(self, prim, vals, params):
        return _eval_primitive(prim, vals, params)


_EVAL_MAIN = MainTrace(0, EvalTrace, description="eager evaluation")


class _Stack(list):
    """One thread's trace stack; ``dynamic`` is its innermost dynamic main (``jit``)."""

    __slots__ = ("dynamic",)


class _ThreadStack(threading.local):
    """Holds the running thread's stack (made on the thread's first use)."""

    def __init__(self):
        self.stack = _Stack([_EVAL_MAIN])
        self.stack.dynamic = _EVAL_MAIN


class _Nesting:
    """The number of mains pushed in all threads together (0: every thread is eager)."""

    __slots__ = ("count", "lock")

    def __init__(self):
        self.count = 0
        self.lock = threading.Lock()


_LOCAL = _ThreadStack()
_NESTED = _Nesting()


def _after_fork_in_child() -> None:
    """Only the forking thread lives on in a child: count its mains alone."""
    _NESTED.lock = threading.Lock()     # another thread may have held it at the fork
    _NESTED.count = len(_LOCAL.stack) - 1


os.register_at_fork(after_in_child=_after_fork_in_child)


def nesting() -> _Nesting:
    """The cross-thread count of active transformations (its ``count`` is 0 when every
    thread is eager); C call paths read it to decline calls made under a trace."""
    return _NESTED


def cur_stack() -> list[MainTrace]:
    """The running thread's trace stack (bottom: eager evaluation)."""
    return _LOCAL.stack


@contextmanager
def new_main(trace_type: type, payload: Any = None, dynamic: bool = False,
             description: str = ""):
    """Push a new transformation on this thread's stack for the duration of the block."""
    stack = _LOCAL.stack
    main = MainTrace(len(stack), trace_type, payload, description)
    main.owner = stack
    with _NESTED.lock:      # before the push: a thread with a main always sees a count > 0
        _NESTED.count += 1
    stack.append(main)
    prev_dynamic = stack.dynamic
    if dynamic:
        stack.dynamic = main
    try:
        yield main
    finally:
        main.alive = False
        main.payload = None     # break builder <-> tracer cycles: garbage dies by refcount
        stack.dynamic = prev_dynamic
        stack.pop()
        with _NESTED.lock:
            _NESTED.count -= 1


def _leak_error(t: Tracer):
    main = t._trace.main
    raise UnexpectedTracerError(
        f"a traced array of type {t.aval.str_short()} from "
        f"{main.description or 'a finished transformation'} was used after that "
        f"transformation ended (it leaked out, for example through a global, a "
        f"closure or a Python attribute). Return values out of traced functions "
        f"instead of storing them.")


def _foreign_error(t: Tracer):
    main = t._trace.main
    raise UnexpectedTracerError(
        f"a traced array of type {t.aval.str_short()} from "
        f"{main.description or 'a transformation'} running in another thread was used "
        f"in this thread. A traced value belongs to the thread that traces it; pass "
        f"concrete arrays between threads, or return values out of the traced function.")


def _check_main(t: Tracer, stack: list) -> None:
    """Raise unless the main of tracer ``t`` is alive and this thread's (or permanent)."""
    m = t._trace.main
    if not m.alive:
        _leak_error(t)
    if m.owner is not None and m.owner is not stack:
        _foreign_error(t)


def at_top_level() -> bool:
    """True when no transformation is active in this thread (only eager evaluation)."""
    return not _NESTED.count or len(_LOCAL.stack) == 1


def find_top_trace(args) -> Trace:
    """The trace of the innermost main among ``args``' tracers and the dynamic main."""
    return _top_trace(args, _LOCAL.stack)


def _top_trace(args, stack: _Stack) -> Trace:
    top = stack.dynamic
    for a in args:
        if isinstance(a, Tracer):
            m = a._trace.main
            if not m.alive or (m.owner is not stack and m.owner is not None):
                _check_main(a, stack)       # raises
            if m.level > top.level:
                top = m
    return top.with_trace()


def full_raise(trace: Trace, val):
    """Turn ``val`` into a tracer of ``trace`` (or a concrete value for eval)."""
    if not isinstance(val, Tracer):
        return trace.pure(val)
    main = val._trace.main
    if main is trace.main:
        return val
    if not main.alive or (main.owner is not None and main.owner is not _LOCAL.stack):
        _check_main(val, _LOCAL.stack)      # raises
    if main.level < trace.main.level:
        return trace.lift(val)
    _leak_error(val)


def full_lower(val):
    return val.full_lower() if isinstance(val, Tracer) else val


def _eval_primitive(prim, vals, params):
    """Eager evaluation: abstract rule (for weak types and early errors), then impl."""
    rules = prim.rules
    try:
        abstract_eval, impl = rules["abstract_eval"], rules["impl"]
    except KeyError:
        abstract_eval, impl = prim.rule("abstract_eval"), prim.rule("impl")
    out_avals = abstract_eval(*[get_aval(v) for v in vals], **params)
    outs = impl(*[concrete_value(v) for v in vals], **params)
    if _config.debug_nans or _config.debug_infs:
        RUNTIME.eager_check(prim, outs)
    wrap = RUNTIME.wrap
    if prim.multiple_results:
        return [wrap(o, a.weak_type) for o, a in zip(outs, out_avals)]
    return [wrap(outs, out_avals.weak_type)]


def bind(prim, args, params) -> Any:
    """Apply ``prim`` to ``args`` under the innermost active trace."""
    stack = _LOCAL.stack if _NESTED.count else None
    if stack is None or len(stack) == 1:        # no transformation in this thread
        trace = None
        for a in args:
            if isinstance(a, Tracer):
                t = a._trace
                if trace is None:
                    trace = t
                elif t is not trace:
                    break
        else:
            if trace is None:
                outs = _eval_primitive(prim, args, params)
                return outs if prim.multiple_results else outs[0]
            if trace.main.owner is None and trace.main.alive:
                # no transformation is active, so these tracers belong to a permanent
                # interpreter (lazy arrays) whose values are already fully lowered
                # (others: leaked or another thread's, an error from _top_trace)
                outs = trace.process_primitive(
                    prim, [a if isinstance(a, Tracer) else trace.pure(a) for a in args],
                    params)
                return outs if prim.multiple_results else outs[0]
    trace = _top_trace(args, _LOCAL.stack if stack is None else stack)
    tracers = [full_raise(trace, a) for a in args]
    outs = trace.process_primitive(prim, tracers, params)
    if prim.multiple_results:
        return [full_lower(o) for o in outs]
    return full_lower(outs[0])


def bind_at_least(prim, args, params, floor: MainTrace | None) -> Any:
    """``bind``, processed by the trace of ``floor`` when no argument or dynamic main is
    above it (collectives over a vmapped axis name: the vmap that binds the name gives
    them meaning even when no operand is batched)."""
    stack = _LOCAL.stack
    trace = _top_trace(args, stack)
    if floor is not None and floor.alive and floor.level > trace.main.level:
        trace = floor.with_trace()
    tracers = [full_raise(trace, a) for a in args]
    outs = trace.process_primitive(prim, tracers, params)
    if prim.multiple_results:
        return [full_lower(o) for o in outs]
    return full_lower(outs[0])
