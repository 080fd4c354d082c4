"""``LazyArray``: an array whose operations are recorded, not run, until it is observed.

A lazy array is either *concrete* (its ``_ref`` is a :class:`Const`: a NumPy buffer
plus a flag saying whether it came from a materialization) or *symbolic* (its
``_ref`` is ``(node, index)``: output ``index`` of a recorded :class:`Node`).

Lazy arrays are tracers of one permanent ``MainTrace`` of level 0.5 that is never
pushed on the trace stack: ``bind`` picks the highest level among its arguments,
so any primitive touching a lazy array (and no tracer of a real transformation)
goes to :class:`LazyTrace`, which runs the primitive's ``abstract_eval`` at once
(shape errors surface at the user's line) and records a node. Under ``jit`` or
``grad`` (levels >= 1) lazy arrays are lifted like any lower-level value, so
transformations of lazy code record their ops lazily too.

Nodes point at their inputs' *nodes* (or constants), never at the ``LazyArray``
objects: a ``LazyArray`` that still exists is therefore referenced by user code,
and that is the liveness test materialization uses (weak references in
``Node.outs`` and in the live registry).
"""
from __future__ import annotations

import itertools
import os
import sys
import weakref

import numpy as np

from plait.core.aval import ShapedArray
from plait.core.graph import Graph, ClosedGraph
from plait.core.dtypes import canonical_dtype
from plait.core.trace import MainTrace, Trace, Tracer, get_aval, concrete_value
from plait.errors import PlaitTypeError
from plait.lazy import modes
from plait.lazy.device import LAZY_DEVICE, LazyDevice
from plait.runtime.array import Array


class Const:
    """A concrete value in the lazy graph: a read-only NumPy buffer.

    ``materialized`` is True when the value was computed by a materialization
    (such values always become arguments of later traces).
    """

    __slots__ = ("value", "aval", "materialized")

    def __init__(self, value: np.ndarray, weak_type: bool, materialized: bool):
        if value.flags.writeable:
            value.flags.writeable = False
        self.value = value
        self.aval = ShapedArray(value.shape, value.dtype, weak_type)
        self.materialized = materialized


class Node:
    """One recorded primitive application.

    ``inputs`` holds a :class:`Const` or a ``(node, index)`` pair per operand;
    ``outs`` holds a weak reference per output to its ``LazyArray`` (or None);
    ``memo`` holds a computed :class:`Const` per output once it has been materialized.
    When every output is memoized the inputs are dropped, cutting the graph.
    """

    __slots__ = ("prim", "params", "inputs", "out_avals", "outs", "memo", "source", "_pkey")

    def __init__(self, prim, params: dict, inputs: list, out_avals: list, source):
        self.prim = prim
        self.params = params
        self.inputs = inputs
        self.out_avals = out_avals
        self.outs: list = [None] * len(out_avals)
        self.memo: list | None = None
        self.source = source
        self._pkey = None

    def pkey(self):
        """Hashable description of the operation: primitive, params and output types."""
        k = self._pkey
        if k is None:
            k = self._pkey = (self.prim, freeze_params(self.params), tuple(self.out_avals))
        return k

    def memoize(self, index: int, const: Const) -> None:
        if self.memo is None:
            self.memo = [None] * len(self.out_avals)
        self.memo[index] = const
        if all(m is not None for m in self.memo):
            self.inputs = ()


_GRAPH_TEXT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _freeze(v):
    """A hashable, structural stand-in for a param value."""
    if isinstance(v, Graph):
        t = _GRAPH_TEXT.get(v)
        if t is None:
            from plait.core.printer import pp_graph
            t = _GRAPH_TEXT[v] = pp_graph(v)
        return ("graph", t)
    if isinstance(v, ClosedGraph):
        return ("closed", _freeze(v.graph), tuple(_freeze(_const_value(c)) for c in v.consts))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((k, _freeze(x)) for k, x in sorted(v.items()))
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype, v.shape, v.tobytes())
    try:
        hash(v)
        return v
    except TypeError:
        return ("object", id(v), v)


def _const_value(c):
    """A sub-graph constant as NumPy (its value is part of the structure)."""
    if isinstance(c, Tracer):
        return ("tracer", object())       # never equal: such a trace is not reused
    return concrete_value(c)


def freeze_params(params: dict):
    """The params of a node as a hashable, structure-based key (graphs by their text)."""
    items = tuple(sorted(params.items()))
    for _, v in items:
        if _has_graph(v):
            break
    else:
        try:
            hash(items)
            return items
        except TypeError:
            pass
    return tuple((k, _freeze(v)) for k, v in items)


def _has_graph(v) -> bool:
    t = type(v)
    if t is Graph or t is ClosedGraph:
        return True
    if t is tuple or t is list:
        for x in v:
            tx = type(x)
            if tx is Graph or tx is ClosedGraph or ((tx is tuple or tx is list) and _has_graph(x)):
                return True
    return False


# --- user source lines (cheap: cached per file name) ------------------------------
_PLAIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INTERNAL: dict[str, bool] = {}


def user_code_line():
    """``(code, lineno)`` of the innermost frame outside plait (formatted on demand)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        internal = _INTERNAL.get(fn)
        if internal is None:
            internal = _INTERNAL[fn] = (os.path.abspath(fn).startswith(_PLAIT_DIR)
                                        or fn.startswith("<frozen"))
        if not internal:
            return (f.f_code, f.f_lineno)
        f = f.f_back
    return None


def format_site(site) -> str:
    if site is None:
        return "<unknown location>"
    code, line = site
    return f"{code.co_filename}:{line} (in {code.co_name})"


# --- live registry --------------------------------------------------------------------
_LIVE: dict[int, weakref.ref] = {}     # creation number -> weakref, symbolic arrays only
_COUNTER = itertools.count()


def live_arrays() -> list:
    """Every still-referenced symbolic lazy array, in creation order."""
    while True:
        try:
            refs = list(_LIVE.values())
            break
        except RuntimeError:        # a weakref callback ran while copying; try again
            continue
    out = []
    for r in refs:
        a = r()
        if a is not None and a._ref.__class__ is not Const:
            out.append(a)
    return out


def live_count() -> int:
    """How many symbolic lazy arrays are alive."""
    return len(_LIVE)


def _make_dropper(key: int):
    def drop(_ref, _live=_LIVE, _key=key):
        _live.pop(_key, None)
    return drop


class LazyArray(Tracer):
    """An array on the lazy device: operations are recorded and compiled when observed."""

    __slots__ = ("_ref", "_aval", "_key", "__weakref__")

    def __init__(self, ref, aval: ShapedArray):
        self._ref = ref
        self._aval = aval
        self._key = None

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    @property
    def is_concrete(self) -> bool:
        """True when the value is computed (a buffer), False while it is a recorded op."""
        return self._ref.__class__ is Const

    @property
    def is_materialized(self) -> bool:
        """True when the value was produced by a materialization."""
        return self._ref.__class__ is Const and self._ref.materialized

    def _set_concrete(self, const: Const) -> None:
        self._ref = const
        if self._key is not None:
            _LIVE.pop(self._key, None)
            self._key = None

    # -- observation: each of these materializes -------------------------------------
    def _numpy(self) -> np.ndarray:
        if self._ref.__class__ is not Const:
            from plait.lazy.materialize import materialize
            materialize([self])
        return self._ref.value

    _host_value = _numpy        # what plait.device_put(x, cpu) uses

    def __array__(self, dtype=None, copy=None):
        v = self._numpy()
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        return v

    def __repr__(self):
        v = self._numpy()
        body = np.array2string(v, separator=", ", prefix="LazyArray(")
        extra = "" if v.dtype in (np.float64, np.int64, np.bool_) else f", dtype={v.dtype}"
        if self.aval.weak_type:
            extra += ", weak_type=True"
        return f"LazyArray({body}{extra})"

    def __str__(self):
        return str(self._numpy())

    def __format__(self, spec):
        v = self._numpy()
        if v.ndim == 0:
            return format(v.item(), spec)
        return format(str(v), spec)

    def item(self, *args):
        return self._numpy().item(*args)

    def tolist(self):
        return self._numpy().tolist()

    def __bool__(self):
        return bool(self._numpy())

    def __int__(self):
        return int(self._numpy())

    def __float__(self):
        return float(self._numpy())

    def __complex__(self):
        return complex(self._numpy())

    def __index__(self):
        v = self._numpy()
        if v.dtype.kind not in "iub" or v.ndim:
            raise PlaitTypeError("only integer scalar arrays can be converted to a scalar index")
        return int(v)

    def block_until_ready(self) -> "LazyArray":
        """Materialize this array (run its pending operations); returns self."""
        self._numpy()
        return self

    def __reduce__(self):
        return (concrete, (np.array(self._numpy()), self.aval.weak_type))

    @property
    def device(self) -> LazyDevice:
        return LAZY_DEVICE

    def devices(self) -> set:
        return {LAZY_DEVICE}


def symbolic(node: Node, index: int) -> LazyArray:
    """A new live symbolic array for output ``index`` of ``node``."""
    a = LazyArray((node, index), node.out_avals[index])
    key = next(_COUNTER)
    r = weakref.ref(a, _make_dropper(key))
    _LIVE[key] = r
    a._key = key
    node.outs[index] = r
    return a


def concrete(value: np.ndarray, weak_type: bool = False, materialized: bool = False) -> LazyArray:
    """A concrete lazy array holding ``value``."""
    c = Const(value, weak_type, materialized)
    return LazyArray(c, c.aval)


def const_of(x) -> Const:
    """The :class:`Const` for a concrete (non-lazy) value: plait.Array, NumPy, scalar."""
    v = concrete_value(x)
    aval = get_aval(x)
    if v.dtype != aval.dtype:
        v = v.astype(aval.dtype)
    elif v is x:                    # a user's NumPy array: snapshot it (and keep theirs writable)
        v = v.copy()
    return Const(v, aval.weak_type, False)


def asarray(x, dtype=None) -> LazyArray:
    """Put ``x`` (array, NumPy value, nested lists, scalar) on the lazy device."""
    if isinstance(x, LazyArray):
        if dtype is None or np.dtype(dtype) == x.dtype:
            return x
        from plait.lax import convert_element_type
        return convert_element_type(x, dtype)
    if isinstance(x, Tracer):
        from plait.errors import ConcretizationError
        raise ConcretizationError(f"plait.lazy.asarray needs a concrete value, but got a "
                                  f"traced value of type {x.aval.str_short()}; call it "
                                  f"outside jit/grad")
    if isinstance(x, Array) and dtype is None:
        return LazyArray(const_of(x), x.aval)
    try:
        v = np.asarray(x, dtype=dtype)
    except ValueError:
        v = None
    if v is None or v.dtype == object:
        raise PlaitTypeError("plait.lazy.asarray cannot convert an object array (ragged "
                             "nested sequences or non-numeric data)")
    v = np.array(v, dtype=canonical_dtype(v.dtype))
    return concrete(v)


# --- the lazy trace ---------------------------------------------------------------------
class LazyTrace(Trace):
    """Records each primitive as a :class:`Node` (or runs it at once in eager mode)."""

    def pure(self, val) -> LazyArray:
        c = const_of(val)
        if c.value.ndim and c.value.size > 1 and not modes._EAGER[0]:
            b = _uniform_broadcast(c)
            if b is not None:
                return b
        return LazyArray(c, c.aval)

    lift = pure

    def process_primitive(self, prim, tracers, params):
        if modes._EAGER[0]:
            return _run_eagerly(prim, tracers, params)
        avals = [t._aval for t in tracers]
        out = prim.rule("abstract_eval")(*avals, **params)
        out_avals = list(out) if prim.multiple_results else [out]
        node = Node(prim, params, [t._ref for t in tracers], out_avals, user_code_line())
        return [symbolic(node, i) for i in range(len(out_avals))]


def _uniform_broadcast(c: Const):
    """An array holding one repeated value (a broadcast scalar such as ``lr`` in
    ``lr * g``, made eagerly before it met a lazy array) is recorded as
    ``broadcast_in_dim`` of that scalar, so the scalar can be a literal or an argument
    instead of a full-size buffer. Values are compared bit for bit."""
    v = c.value
    flat = v.reshape(-1)
    n = flat.size
    if flat[0] != flat[n - 1] or flat[0] != flat[n // 2]:       # cheap early reject
        return None
    size = flat.dtype.itemsize
    if size in _UINT:
        bits = flat.view(_UINT[size])
    else:
        bits = np.ascontiguousarray(flat).view(np.uint8).reshape(n, size)
    if not (bits == bits[0]).all():
        return None
    from plait.lax.shape_ops import broadcast_in_dim_p
    s = Const(flat[:1].reshape(()), c.aval.weak_type, False)
    params = dict(shape=v.shape, broadcast_dimensions=())
    node = Node(broadcast_in_dim_p, params, [s], [c.aval], user_code_line())
    return symbolic(node, 0)


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _run_eagerly(prim, tracers, params):
    vals = [t._numpy() for t in tracers]
    out = prim.rule("abstract_eval")(*[t._aval for t in tracers], **params)
    out_avals = list(out) if prim.multiple_results else [out]
    res = prim.rule("impl")(*vals, **params)
    res = list(res) if prim.multiple_results else [res]
    return [concrete(r if type(r) is np.ndarray else np.asarray(r), a.weak_type, True)
            for r, a in zip(res, out_avals)]


LAZY_MAIN = MainTrace(0.5, LazyTrace, description="lazy evaluation")
LAZY_TRACE = LazyTrace(LAZY_MAIN)
LazyArray._trace = LAZY_TRACE
