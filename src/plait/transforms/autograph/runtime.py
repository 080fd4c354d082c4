"""The run-time operators called by converted code (``ag__`` in the generated source).

Each operator decides AT RUN TIME whether its condition or iterable is traced:
Python values keep exact Python semantics (static ``if``s prune, loops over
Python ranges and lists unroll); traced values become ``plait.lax`` control
flow (:mod:`.functional`).
"""
from __future__ import annotations

import builtins
from dataclasses import replace
from typing import Any, Callable

from plait import lax
from plait.core import dtypes
from plait.errors import ControlFlowError
from plait.transforms.autograph.functional import (Undefined, is_traced, traced_if,
                                                   traced_while, traced_scan,
                                                   becomes_traced, counter_info)
from plait.transforms.autograph.info import StmtInfo

__all__ = ["Undefined", "if_stmt", "while_stmt", "for_stmt", "and_", "or_", "not_", "ifexp",
           "ret", "assert_", "call"]


# ---------------------------------------------------------------------------
# Statements

def if_stmt(test, true_fn: Callable, false_fn: Callable, inputs: tuple, info: StmtInfo):
    """``if test: ... else: ...``; the branch functions map ``inputs`` to the outputs."""
    if is_traced(test):
        return traced_if(test, true_fn, false_fn, inputs, info)
    return true_fn(*inputs) if test else false_fn(*inputs)


def while_stmt(test_fn: Callable, body_fn: Callable, carried: tuple, info: StmtInfo):
    """``while test: body``. Runs in Python until the test is a traced value, then the
    rest of the loop becomes one ``lax.while_loop``."""
    vals = tuple(carried)
    c = test_fn(*vals)
    if not is_traced(c) and c and becomes_traced(test_fn, body_fn, vals, info):
        return traced_while(test_fn, body_fn, vals, info)
    while True:
        if is_traced(c):
            return traced_while(test_fn, body_fn, vals, info)
        if not c:
            return vals
        vals = tuple(body_fn(*vals))
        c = test_fn(*vals)


def for_stmt(iterable, body_fn: Callable, carried: tuple, info: StmtInfo,
             extra_test: Callable | None = None):
    """``for target in iterable: body``; ``extra_test`` (from ``break``/``return``)
    must hold before each iteration."""
    if isinstance(iterable, TracedRange):
        return _range_loop(iterable, body_fn, tuple(carried), info, extra_test)
    if is_traced(iterable) or isinstance(iterable, TracedItems):
        if isinstance(iterable, TracedItems):
            iterable = iterable.arrays
        body = body_fn if extra_test is None else _guarded(body_fn, extra_test, info)
        return traced_scan(iterable, body, tuple(carried), info)
    vals = tuple(carried)
    for item in iterable:
        if extra_test is not None:
            ok = extra_test(*vals)
            if is_traced(ok):      # an earlier iteration broke out under a traced value
                vals = traced_if(ok, lambda *v, item=item: tuple(body_fn(item, *v)),
                                 lambda *v: v, vals, _guard_info(info))
                continue
            if not ok:
                break
        vals = tuple(body_fn(item, *vals))
    return vals


def _guard_info(info: StmtInfo) -> StmtInfo:
    return replace(info, kind=f"{info.kind} (loop body after a traced `break`/`return`)",
                   inputs=info.outputs, lines_b={})


def _guarded(body_fn: Callable, extra_test: Callable, info: StmtInfo) -> Callable:
    """The body run only while ``extra_test`` holds (a scan cannot stop early)."""
    ginfo = _guard_info(info)

    def body(item, *vals):
        return if_stmt(extra_test(*vals), lambda *v: tuple(body_fn(item, *v)),
                       lambda *v: v, vals, ginfo)
    return body


def ret(value, did_return, info: StmtInfo):
    """The function's result after ``return`` statements were lowered to flags."""
    if is_traced(did_return):
        if value is None or isinstance(value, Undefined):
            return None
        raise ControlFlowError(
            f"{info.function} (defined at {info.where()}) returns a value on some paths but "
            f"reaches its end without `return` (returning None) on others, and which "
            f"happens depends on a traced value. Add a `return` at the end of "
            f"{info.function} so every path returns an array.", locate=False)
    if did_return and not isinstance(value, Undefined):
        return value
    return None


# ---------------------------------------------------------------------------
# range with traced bounds

class TracedRange:
    """``range(...)`` with a traced bound; only usable as the iterable of a ``for``."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def __iter__(self):
        raise ControlFlowError(
            "range() with a traced bound can only be the iterable of a `for` statement "
            "in a function converted by autograph (its length is not known while "
            "tracing)")

    __len__ = __iter__


class TracedItems:
    """``enumerate``/``zip`` over traced arrays: tuples of rows, scanned together."""

    def __init__(self, arrays: tuple):
        self.arrays = arrays

    def __iter__(self):
        return iter(zip(*[list(a) for a in self.arrays]))


def _enumerate(xs, start=0):
    if not is_traced(xs) or is_traced(start) or not xs.aval.shape:
        return builtins.enumerate(xs, start)
    idx = lax.convert_element_type(lax.iota(dtypes.int32, xs.aval.shape[0]), dtypes.int32,
                                   weak_type=True)
    if start:
        idx = lax.add(idx, start)
    return TracedItems((idx, xs))


def _zip(*xs):
    if not xs or not all(is_traced(x) for x in xs) or len(
            {x.aval.shape[:1] for x in xs}) != 1:
        return builtins.zip(*xs)
    return TracedItems(tuple(xs))


def _range(*args):
    if not any(is_traced(a) for a in args):
        return builtins.range(*args)
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) == 2:
        (start, stop), step = args, 1
    else:
        start, stop, step = args
    if is_traced(step):
        raise ControlFlowError("range(): the step must be a Python int (not traced) so "
                               "the loop direction is known")
    for b in (start, stop):
        if is_traced(b) and (b.aval.shape != () or not dtypes.is_integer(b.aval.dtype)):
            raise ControlFlowError(f"range() needs integer scalar bounds, got a traced "
                                   f"{b.aval.str_short()}")
    if step == 0:
        raise ControlFlowError("range() arg 3 must not be zero")
    return TracedRange(start, stop, int(step))


def _range_loop(r: TracedRange, body_fn, vals: tuple, info: StmtInfo, extra_test):
    """A ``for`` over a range with traced bounds: a ``while_loop`` on a counter."""
    from plait.core.trace import get_aval
    avals = [get_aval(x) for x in (r.start, r.stop)]
    dt, _ = dtypes.result_type(*[(a.dtype, a.weak_type) for a in avals])
    start = lax.convert_element_type(r.start, dt)
    stop = lax.convert_element_type(r.stop, dt)
    step = r.step
    span = lax.sub(stop, start) if step > 0 else lax.sub(start, stop)
    size = abs(step)
    count = lax.max(lax.div(lax.add(span, size - 1), lax.convert_element_type(size, dt)),
                    lax.convert_element_type(0, dt))

    def test(k, *v):
        c = lax.lt(k, count)
        if extra_test is None:
            return c
        return and_(c, lambda: extra_test(*v))

    def body(k, *v):
        # the loop index is weakly typed, like the Python int a range yields
        i = lax.convert_element_type(lax.add(start, lax.mul(k, lax.convert_element_type(
            step, dt))), dt, weak_type=True)
        return (lax.add(k, lax.convert_element_type(1, dt)),) + tuple(body_fn(i, *v))

    k0 = lax.convert_element_type(0, dt)
    out = traced_while(test, body, (k0,) + vals, counter_info(info))
    return out[1:]


# ---------------------------------------------------------------------------
# Expressions

def _truth(x, what: str):
    """A traced value as a bool scalar (for ``and``/``or``/``not``)."""
    if not is_traced(x):
        return lax.convert_element_type(bool(x), dtypes.bool_)
    a = x.aval
    if a.shape != ():
        raise ControlFlowError(f"`{what}` on a traced array of type {a.str_short()}: "
                               f"only single values have a truth value; use .any()/.all() "
                               f"or plait.numpy.logical_{what.strip('_')}")
    return x if a.dtype == dtypes.bool_ else lax.ne(x, 0)


def and_(a, *thunks):
    """``a and b and ...`` (later operands are thunks); on traced values a logical and."""
    rest = list(thunks)
    while rest:
        if is_traced(a):
            acc = _truth(a, "and")
            for t in rest:
                acc = lax.bitwise_and(acc, _truth(t(), "and"))
            return acc
        if not a:
            return a
        a = rest.pop(0)()
    return a


def or_(a, *thunks):
    """``a or b or ...`` (later operands are thunks); on traced values a logical or."""
    rest = list(thunks)
    while rest:
        if is_traced(a):
            acc = _truth(a, "or")
            for t in rest:
                acc = lax.bitwise_or(acc, _truth(t(), "or"))
            return acc
        if a:
            return a
        a = rest.pop(0)()
    return a


def not_(x):
    """``not x``; on a traced value a logical not."""
    if is_traced(x):
        return lax.bitwise_not(_truth(x, "not"))
    return not x


def ifexp(test, body: Callable, orelse: Callable, info: StmtInfo):
    """``body() if test else orelse()``; a traced test stages both as one ``cond``."""
    if is_traced(test):
        return traced_if(test, lambda: (body(),), lambda: (orelse(),), (), info)[0]
    return body() if test else orelse()


def assert_(test, msg: Callable | None, info: StmtInfo) -> None:
    """``assert test, msg``: checked in Python; a traced test cannot be checked while
    compiling, so it is refused with the line."""
    if is_traced(test):
        raise ControlFlowError(
            f"the `assert` at {info.where()} (in {info.function}) tests a traced value, "
            f"which is only known when the compiled function runs. Check it outside the "
            f"compiled function, or remove the assert.", locate=False)
    if not test:
        raise AssertionError(msg()) if msg is not None else AssertionError()


def call(f, /, *args, **kwargs) -> Any:
    """Call ``f``, converting it first when it is a user function."""
    from plait.transforms.autograph.convert import maybe_convert
    special = _BUILTINS.get(f)
    if special is not None:
        return special(*args, **kwargs)
    return maybe_convert(f)(*args, **kwargs)


_BUILTINS = {builtins.range: _range, builtins.enumerate: _enumerate, builtins.zip: _zip}
