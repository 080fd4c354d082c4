"""``LazyArray``: an array whose operations are recorded, not run, until it is observed.

A lazy array is either *concrete* (its ``_ref`` is a :class:`Const`: a NumPy buffer
plus a flag saying whether it came from a materialization) or *symbolic* (its
``_ref`` is ``(node, index)``: output ``index`` of a recorded :class:`Node`).

Lazy arrays are tracers of the lazy trace (:mod:`plait.lazy.trace`), which runs
each primitive's ``abstract_eval`` at once (shape errors surface at the user's
line) and records a :class:`Node`.

Nodes point at their inputs' *nodes* (or constants), never at the ``LazyArray``
objects: a ``LazyArray`` that still exists is therefore referenced by user code,
and that is the liveness test materialization uses (weak references in
``Node.outs`` and in the live registry).

The lazy graph is shared by all threads. Recording a node only reads its inputs,
so threads record concurrently; cutting the graph (a materialization, or a region
for differentiation) rewrites nodes and holds :func:`graph_lock`.
"""
from __future__ import annotations

import itertools
import os
import threading
import weakref
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from plait.core.aval import ShapedArray
from plait.core.dtypes import canonical_dtype
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import PlaitTypeError
from plait.lazy.device import LAZY_DEVICE, LazyDevice
from plait.lazy.keys import freeze_params
from plait.runtime.array import Array


class Const:
    """A concrete value in the lazy graph: a read-only NumPy buffer.

    ``materialized`` is True when the value was computed by a materialization
    (such values always become arguments of later traces). ``origin`` is the
    ``(node, index)`` that computed it when that happened inside a function being
    differentiated (:mod:`plait.lazy.autodiff` follows it back), else None.
    ``aval``, when the caller already has it, saves building the abstract value.
    ``launch`` is the pending native launch still writing ``value`` (None once it is
    known to be complete): read the contents only after :meth:`wait`.
    """

    __slots__ = ("value", "aval", "materialized", "origin", "launch")

    def __init__(self, value: np.ndarray, weak_type: bool, materialized: bool, origin=None,
                 aval: ShapedArray | None = None):
        if value.flags.writeable:
            value.flags.writeable = False
        self.value = value
        self.aval = aval if aval is not None else ShapedArray(value.shape, value.dtype, weak_type)
        self.materialized = materialized
        self.origin = origin
        self.launch = None

    def wait(self) -> np.ndarray:
        """The value, once the launch computing it (if any) has completed."""
        launch = self.launch        # (read once: another thread may clear it)
        if launch is not None:
            launch.wait()
            self.launch = None
        return self.value


class Node:
    """One recorded primitive application.

    ``inputs`` holds a :class:`Const` or a ``(node, index)`` pair per operand;
    ``outs`` holds a weak reference per output to its ``LazyArray`` (or None);
    ``memo`` holds a computed :class:`Const` per output once it has been materialized.
    When every output is memoized the inputs are dropped, cutting the graph (unless a
    function is being differentiated: its recording must stay whole). ``seq`` numbers
    nodes in creation order.
    """

    __slots__ = ("prim", "params", "inputs", "out_avals", "outs", "memo", "source", "_pkey",
                 "seq")

    def __init__(self, prim, params: dict, inputs: list, out_avals: list, source):
        self.seq = next(_NODE_SEQ)
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
        if not _RECORDING.depth and all(m is not None for m in self.memo):
            self.inputs = ()


_NODE_SEQ = itertools.count()
_GRAPH_LOCK = threading.RLock()


class _Recording:
    """How many functions of lazy arrays are being recorded for differentiation."""

    __slots__ = ("depth", "lock")

    def __init__(self):
        self.depth = 0
        self.lock = threading.Lock()


_RECORDING = _Recording()


def graph_lock() -> "threading.RLock":
    """The lock a thread holds while it cuts the graph (materializes, differentiates)."""
    return _GRAPH_LOCK


def _after_fork_in_child() -> None:
    global _GRAPH_LOCK
    _GRAPH_LOCK = threading.RLock()     # another thread may have held them at the fork
    _RECORDING.lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def recording() -> Iterator[None]:
    """Keep every node's inputs while the block runs (in any thread: nodes are shared),
    so the function being recorded for differentiation can be cut out whole."""
    with _RECORDING.lock:
        _RECORDING.depth += 1
    try:
        yield
    finally:
        with _RECORDING.lock:
            _RECORDING.depth -= 1


def is_recording() -> bool:
    """True while some thread records a function of lazy arrays (see :func:`recording`)."""
    return _RECORDING.depth > 0


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
        return self._ref.wait()

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
