"""``jit``: trace once per input signature, cache, compile, run.

The cache key is the pytree structure of the dynamic arguments, each leaf's
(shape, dtype, weak_type), and the values of static arguments. At the top level
(no active transformation) a call goes straight to the cached executable. Under
a transformation (``grad(jit(f))``, ``jit`` inside ``jit``) the call binds
``jit_call`` with the staged sub-graph, so outer interpreters see one primitive.
Threads may call one jitted function at once: each signature is traced and compiled
by one thread while the others wait for it (:mod:`plait.runtime.once`).
"""
from __future__ import annotations

import functools
import inspect
import logging
import time
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from plait.config import config
from plait.core import trace as _trace
from plait.core import named_axes as _named_axes
from plait.core.aval import ShapedArray
from plait.core.call import jit_call_p
from plait.core.graph import ClosedGraph, Graph, closure_convert
from plait.core.printer import pp_graph
from plait.core.pytree import tree_flatten, tree_unflatten, leaf_paths, TreeDef
from plait.core.staging import trace_to_graph
from plait.core.trace import Tracer, get_aval, concrete_value
from plait.errors import StaticArgumentError, PlaitTypeError
from plait.lru import LRUCache
from plait.profiler import events as _events
from plait.runtime import metrics, nan_check
from plait.runtime.array import Array
from plait.runtime.once import Once
import plait.backends  # noqa: F401,E402  registers devices("opencl"), queried on first use

log = logging.getLogger("plait")
_ONCE = Once()      # traces and compiles in progress, keyed by what they build


def _fun_name(f) -> str:
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    code = getattr(f, "__code__", None)
    if code is not None:
        return f"{name} ({code.co_filename}:{code.co_firstlineno})"
    return name


def leaf_aval(x, path: str, fname: str) -> ShapedArray:
    """The abstract value of one dynamic argument leaf, or a clear error."""
    try:
        return get_aval(x)
    except PlaitTypeError:
        raise PlaitTypeError(
            f"argument {path or '<arg>'} of {fname} is a {type(x).__name__}, which is not an "
            f"array. Pass arrays (or pytrees of arrays) as dynamic arguments, or mark this "
            f"argument static with static_argnums/static_argnames.") from None


class _Entry:
    __slots__ = ("closed", "out_tree", "executable", "call_graph", "out_weak", "single", "key",
                 "donated", "device_call", "hot")

    def __init__(self, closed: ClosedGraph, out_tree: TreeDef):
        self.closed = closed
        self.out_tree = out_tree
        self.executable = None
        self.call_graph = None
        self.out_weak = [a.weak_type for a in closed.out_avals]
        self.single = out_tree.kind == "leaf"
        self.donated: tuple[int, ...] = ()    # indices of the donated argument leaves
        self.device_call = None     # the executable's call_arrays, if it keeps results on device
        self.hot = None     # the executable's C call path; False: it has none (None: not asked)


class _SharedCache:
    """The traces and executables of one function under one set of jit options, shared
    by every ``jit`` wrapper of it (so ``jit(f)(x)`` written inline traces once). It holds
    no reference to the function. ``hot`` is the C call path of the signature last called
    through the fast path, tried first by every call (xla executables have one)."""

    __slots__ = ("cache", "fast", "flat_trees", "hot")

    def __init__(self):
        fast: dict[tuple, _Entry] = {}
        self.hot = None

        def evicted(key, entry: _Entry) -> None:    # the signature cache dropped entry:
            for k in [k for k, e in list(fast.items()) if e is entry]:   # so does the
                fast.pop(k, None)                                          # fast path
            if entry.hot and self.hot is entry.hot:                     # and the C path
                self.hot = None
        self.fast = fast
        self.cache = LRUCache(on_evict=evicted)
        self.flat_trees: dict[int, TreeDef] = {}


# function (weakly, by identity, as JAX) -> {options: _SharedCache}
_SHARED: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()


def _trace_context() -> tuple:
    """Settings that change what a trace or executable is, part of the shared key: a
    wrapper made after ``config.backend`` (or the precision mode) changed gets its own."""
    return (config.backend, getattr(config, "x64", None))


def _shared_cache(fun: Callable, options: tuple) -> _SharedCache:
    """The cache of ``fun`` under ``options``; a private one when ``fun`` cannot be
    referenced weakly or hashed (e.g. some builtins)."""
    try:
        per = _SHARED.get(fun)
        if per is None:
            per = _SHARED.setdefault(fun, {})
    except TypeError:
        return _SharedCache()
    hit = per.get(options)
    return hit if hit is not None else per.setdefault(options, _SharedCache())


class Jitted:
    """A function compiled on first call for each new input signature."""

    def __init__(self, fun: Callable, static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = (), backend: str | None = None,
                 autograph: bool = False, *, donate_argnums: int | Sequence[int] = (),
                 donate_argnames: str | Sequence[str] = (), keep_unused: bool = False,
                 inline: bool = False):
        from plait.jit_options import as_tuple, resolve
        original = fun
        if autograph:
            from plait.transforms.autograph import autograph as _convert
            fun = _convert(fun)
        self.fun = fun
        functools.update_wrapper(self, fun, updated=())
        self.backend = backend
        self.keep_unused = bool(keep_unused)
        self.inline = bool(inline)
        self._method_jit: "Jitted | None" = None
        self._name = _fun_name(fun)
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        self.static_argnums, self.static_argnames = resolve(
            self._sig, as_tuple(static_argnums, int), as_tuple(static_argnames, str),
            "static", self._name)
        self.donate_argnums, self.donate_argnames = resolve(
            self._sig, as_tuple(donate_argnums, int), as_tuple(donate_argnames, str),
            "donate", self._name)
        both = set(self.donate_argnums) & set(self.static_argnums)
        if both:
            raise StaticArgumentError(f"jit of {self._name}: argument(s) {sorted(both)} are "
                                      f"both static and donated; only arrays can be donated")
        self._donates = bool(self.donate_argnums or self.donate_argnames)
        shared = _shared_cache(original, (self.static_argnums, self.static_argnames,
                                          backend, bool(autograph), self.donate_argnums,
                                          self.donate_argnames, self.keep_unused,
                                          _trace_context()))
        self._shared = shared
        self._flat_trees: dict[int, TreeDef] = shared.flat_trees
        self._fast: dict[tuple, _Entry] = shared.fast   # avals of positional arrays -> entry
        self._cache: LRUCache = shared.cache            # signature -> _Entry (bounded)

    def __get__(self, obj, objtype=None):
        """Used as a method: ``self`` becomes a static argument (by identity)."""
        if obj is None:
            return self
        if self._method_jit is None:
            def build():
                self._method_jit = Jitted(
                    self.fun, (0,) + tuple(i + 1 for i in self.static_argnums if i >= 0),
                    self.static_argnames, self.backend,
                    donate_argnums=tuple(i + 1 for i in self.donate_argnums if i >= 0),
                    donate_argnames=self.donate_argnames, keep_unused=self.keep_unused,
                    inline=self.inline)
                return self._method_jit
            _ONCE.run(("method", id(self)), lambda: self._method_jit, build)
        return functools.partial(self._method_jit._call_with_self, obj)

    def _call_with_self(self, obj, *args, **kwargs):
        return self(_Static(obj), *args, **kwargs)

    def __repr__(self):
        return f"<plait.jit of {self._name}>"

    # -- signature ----------------------------------------------------------------
    def _split(self, args, kwargs):
        n = len(args)
        statics = []
        for i in self.static_argnums:
            j = i if i >= 0 else n + i
            if j < n:
                statics.append((i, args[j]))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in
                         {(k if k >= 0 else n + k) for k in self.static_argnums})
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
        static_key = (tuple(statics), static_kw)
        try:
            hash(static_key)
        except TypeError:
            bad = [(i, v) for i, v in list(statics) + list(static_kw) if not _hashable(v)]
            raise StaticArgumentError(
                f"static argument {bad[0][0]!r} of {self._name} has unhashable type "
                f"{type(bad[0][1]).__name__}; static arguments are part of the cache key and "
                f"must be hashable (use a tuple instead of a list, or make it a dynamic "
                f"array argument)") from None
        return dyn_args, dyn_kwargs, statics, static_kw, static_key

    def _rebuild(self, statics, static_kw, n_total):
        def call(dyn_args, dyn_kwargs):
            args = list(dyn_args)
            for i, v in sorted(((i if i >= 0 else n_total + i), v) for i, v in statics):
                args.insert(i, v.value if isinstance(v, _Static) else v)
            kw = dict(dyn_kwargs)
            kw.update(static_kw)
            return self.fun(*args, **kw)
        return call

    def _signature(self, args, kwargs, aval_of: Callable = get_aval):
        if (aval_of is get_aval and not kwargs and not self.static_argnums
                and all(type(a) in _LEAF_TYPES for a in args)):
            in_tree = self._flat_trees.get(len(args))    # fast path: positional arrays only
            if in_tree is None:
                in_tree = self._flat_trees[len(args)] = tree_flatten((args, {}))[1]
            avals = [a.aval if type(a) is Array else get_aval(a) for a in args]
            return list(args), avals, (in_tree, tuple(avals), ((), ())), ((), (), len(args)), in_tree
        dyn_args, dyn_kwargs, statics, static_kw, static_key = self._split(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        avals = []
        for x in leaves:
            try:
                avals.append(aval_of(x))
            except PlaitTypeError:
                paths = self._paths(in_tree)
                avals.append(leaf_aval(x, paths[len(avals)], self._name))
        key = (in_tree, tuple(avals), static_key)
        return leaves, avals, key, (statics, static_kw, len(args)), in_tree

    def _paths(self, in_tree: TreeDef) -> list[str]:
        names = None
        if self._sig is not None:
            names = [p for p in self._sig.parameters]
        raw = leaf_paths(in_tree)
        out = []
        for p in raw:   # p looks like "[0][i]..." (args) or "[1]['k']..." (kwargs)
            if p.startswith("[0]["):
                rest = p[4:]
                idx, _, tail = rest.partition("]")
                nm = names[int(idx)] if names and int(idx) < len(names) else f"args[{idx}]"
                out.append(nm + tail)
            elif p.startswith("[1]["):
                rest = p[4:]
                k, _, tail = rest.partition("]")
                out.append(k.strip("'") + tail)
            else:
                out.append(p)
        return out

    # -- tracing and compiling --------------------------------------------------------
    def _trace(self, avals, in_tree, static_info, key) -> _Entry:
        statics, static_kw, n_total = static_info
        call = self._rebuild(statics, static_kw, n_total)
        out_tree_box = []

        def flat_fun(*leaves):
            dyn_args, dyn_kwargs = tree_unflatten(in_tree, leaves)
            out = call(dyn_args, dyn_kwargs)
            out_leaves, out_tree = tree_flatten(out)
            out_tree_box.append(out_tree)
            for o in out_leaves:
                if not _is_arraylike(o):
                    raise PlaitTypeError(
                        f"{self._name} returned a {type(o).__name__}; jitted functions must "
                        f"return arrays or pytrees of arrays")
            return out_leaves

        if config.log_compiles:
            log.warning("plait: tracing %s: %s", self._name, self._miss_reason(key, in_tree))
        t0 = time.perf_counter()
        with _events.span(f"trace {self._name}", "trace"):
            closed, _ = trace_to_graph(flat_fun, avals, description=f"jit of {self._name}",
                                       name=getattr(self.fun, "__name__", ""))
        metrics.bump("traces")
        metrics.bump("trace_time_s", time.perf_counter() - t0)
        from plait.passes import optimize
        with _events.span("graph passes", "compile"):
            closed = optimize(closed)
        if config.checks:
            from plait.core.graph import check_graph
            check_graph(closed.graph)
        return _Entry(closed, out_tree_box[-1])

    def _miss_reason(self, key, in_tree) -> str:
        if not self._cache:
            return "first call (the function is new)"
        paths = self._paths(in_tree)
        best, best_diff = None, None
        for old in list(self._cache):
            if old[0] != key[0]:
                continue
            diff = [(p, a, b) for p, a, b in zip(paths, old[1], key[1]) if a != b]
            if best_diff is None or len(diff) < len(best_diff):
                best, best_diff = old, diff
        if best is None:
            old = next(iter(self._cache))
            return (f"the argument structure changed from {old[0]} to {key[0]}")
        if best_diff:
            return "; ".join(f"argument {p} changed from {a.str_short()} to {b.str_short()}"
                             for p, a, b in best_diff)
        if best[2] != key[2]:
            return f"static arguments changed from {best[2]} to {key[2]}"
        return "cache miss"

    def _entry(self, avals, in_tree, static_info, key) -> _Entry:
        key = key + _named_axes.env_key()    # collectives stage the bound axis sizes
        entry = self._cache.get(key)
        if entry is None:
            def build():
                e = self._trace(avals, in_tree, static_info, key)
                e.key = key
                self._cache[key] = e
                return e
            entry, built = _ONCE.run(("trace", id(self), key), lambda: self._cache.get(key),
                                     build)
            if built:
                return entry
        metrics.bump("cache_hits")
        return entry

    def _compile(self, entry: _Entry):
        if entry.executable is None:
            _ONCE.run(("compile", id(entry)), lambda: entry.executable,
                      lambda: self._build_executable(entry))
        return entry.executable

    def _build_executable(self, entry: _Entry):
        from plait.backends import compile as backend_compile
        t0 = time.perf_counter()
        backend = self.backend or config.resolved_backend()
        if config.log_compiles:
            log.warning("plait: compiling %s with the %s backend", self._name, backend)
        exe = backend_compile(entry.closed, backend)
        entry.device_call = getattr(exe, "call_arrays", None)
        entry.executable = exe
        metrics.bump("compiles")
        metrics.bump("compile_time_s", time.perf_counter() - t0)
        return entry.executable

    # -- calling -----------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        hot = self._shared.hot
        if hot is not None and not kwargs:
            out = hot(args)     # the last signature's C path; None: not for this call
            if out is not None:
                return out
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        if self.inline and not _trace.at_top_level():     # traced inside a transformation:
            return self.fun(*[a.value if isinstance(a, _Static) else a for a in args],
                            **kwargs)                    # become part of the caller's graph
        if not kwargs and _trace.at_top_level() \
                and not self._donates:
            # fastest path: positional concrete arrays, or pytrees of them, whose
            # signature was seen before
            leaves = args
            try:
                entry = self._fast.get(_fast_key(args))
            except (AttributeError, TypeError):
                try:
                    key, leaves = _tree_key(args)
                    entry = self._fast.get(key)
                except (AttributeError, TypeError):
                    entry = None
            if entry is not None:
                metrics.bump("cache_hits")
                self._cache.touch(entry.key)
                device_call = entry.device_call
                if device_call is not None:      # results stay on the backend's device
                    outs = device_call(leaves, entry.out_weak)
                    hot = entry.hot     # a signature called again gets its C path
                    if leaves is args and (hot is None or (
                            hot is not False and hot is not self._shared.hot)):
                        self._use_hot(entry)
                    if entry.single and not nan_check.enabled():
                        return outs[0]
                    return _device_results(entry, outs, leaves, self._name)
                outs = _unaliased(entry.executable(*[concrete_value(a) for a in leaves]),
                                  leaves)
                if nan_check.enabled():
                    nan_check.check_jit(entry.closed, leaves, outs, self._name)
                if entry.single:
                    return Array(outs[0], entry.out_weak[0])
                return tree_unflatten(entry.out_tree, [Array(o, w) for o, w in
                                                       zip(outs, entry.out_weak)])
        leaves, avals, key, static_info, in_tree = self._signature(args, kwargs)
        entry = self._entry(avals, in_tree, static_info, key)
        if len(_trace.cur_stack()) == 1 and not any(isinstance(x, Tracer) for x in leaves):
            exe = entry.executable or self._compile(entry)
            if self._donates:
                return self._call_donating(entry, exe, args, kwargs, leaves)
            if not kwargs and not self.static_argnums:
                self._remember_fast(args, leaves, entry)
            device_call = getattr(exe, "call_arrays", None)
            if device_call is not None:          # results stay on the backend's device
                return _device_results(entry, device_call(leaves, entry.out_weak), leaves,
                                       self._name)
            outs = _unaliased(exe(*[concrete_value(x) for x in leaves]), leaves)
            if nan_check.enabled():
                nan_check.check_jit(entry.closed, leaves, outs, self._name)
            outs = [Array(o, a.weak_type) for o, a in zip(outs, entry.closed.out_avals)]
            if entry.out_tree.kind == "leaf":
                return outs[0]
            return tree_unflatten(entry.out_tree, outs)
        if entry.call_graph is None:
            entry.call_graph = closure_convert(entry.closed)
        outs = jit_call_p.bind(*entry.closed.consts, *leaves, graph=entry.call_graph,
                               name=getattr(self.fun, "__name__", "fn"))
        return tree_unflatten(entry.out_tree, outs)

    def _remember_fast(self, args: tuple, leaves: list, entry: _Entry) -> None:
        """Let later calls with arguments of this signature take the fast path: positional
        arrays by :func:`_fast_key`, pytrees of arrays by :func:`_tree_key` when its
        leaves are exactly the ones the signature flattened (same objects, same order)."""
        if all(type(a) is np.ndarray or isinstance(a, Array) for a in args):
            self._fast[_fast_key(args)] = entry
            return
        try:
            key, tree_leaves = _tree_key(args)
        except (AttributeError, TypeError):
            return
        if len(tree_leaves) == len(leaves) and all(a is b for a, b in zip(tree_leaves, leaves)):
            self._fast[key] = entry

    def _use_hot(self, entry: _Entry) -> None:
        """Make ``entry``'s C call path (built on first use) the one calls try first."""
        hot = entry.hot
        if hot is None:
            make = getattr(entry.executable, "hot_path", None)
            hot = entry.hot = (make(entry.out_weak) if make is not None else None) or False
        self._shared.hot = hot or None
        if hot and type(self) is Jitted:     # calls skip this class's Python __call__
            from plait.backends.xla.hot import hot_class
            cls = hot_class(Jitted)
            if cls is not None:
                self.__class__ = cls

    def _donated(self, args, kwargs, leaves) -> tuple[int, ...]:
        from plait.jit_options import donated_leaves
        ids = {id(x) for x in donated_leaves(args, kwargs, self.donate_argnums,
                                              self.donate_argnames)}
        return tuple(i for i, x in enumerate(leaves) if id(x) in ids)

    def _call_donating(self, entry, exe, args, kwargs, leaves):
        """Run giving up the donated arguments: the native backend writes outputs into
        their buffers where it safely can; donated plait Arrays are deleted after."""
        donated = self._donated(args, kwargs, leaves)
        entry.donated = donated
        vals = [concrete_value(x) for x in leaves]
        run = getattr(exe, "run_donating", None)
        own = [i for i in donated if type(leaves[i]) is Array]   # NumPy inputs are not ours
        outs = run(vals, own) if run is not None and own else exe(*vals)
        outs = _unaliased(outs, [x for i, x in enumerate(leaves) if i not in own])
        for i in own:
            leaves[i].delete(f"it was donated to {self._name}")
        outs = [Array(o, a.weak_type) for o, a in zip(outs, entry.closed.out_avals)]
        return outs[0] if entry.out_tree.kind == "leaf" else tree_unflatten(entry.out_tree, outs)

    def lower(self, *args, **kwargs) -> "Lowered":
        """Trace for these arguments without running: arrays, or specs
        (``ShapeDtypeStruct`` or anything with ``.shape``/``.dtype``) in their place."""
        return Lowered(self, self._spec_entry(args, kwargs))

    def trace(self, *args, **kwargs) -> "Traced":
        """Trace (arrays or specs, as :meth:`lower`): the graph and the output's shapes."""
        return Traced(self, self._spec_entry(args, kwargs))

    def _spec_entry(self, args, kwargs) -> "_Entry":
        from plait.abstract import spec_or_aval
        leaves, avals, key, static_info, in_tree = self._signature(args, kwargs, spec_or_aval)
        entry = self._entry(avals, in_tree, static_info, key)
        if self._donates:
            entry.donated = self._donated(args, kwargs, leaves)
        return entry

    def trace_graph(self, *args, **kwargs) -> ClosedGraph:
        """The optimized closed graph for these arguments."""
        return self.lower(*args, **kwargs).closed


_LEAF_TYPES = (Array, np.ndarray, float, int, bool, complex)


def _device_results(entry, outs: list, args, name: str):
    """The caller's value from the plait arrays a device-resident executable returned."""
    if nan_check.enabled():
        nan_check.check_jit(entry.closed, args, [np.asarray(o) for o in outs], name)
    return outs[0] if entry.out_tree.kind == "leaf" else tree_unflatten(entry.out_tree, outs)


def _unaliased(outs, args):
    """``outs`` with a copy of every output that shares memory with a NumPy argument
    (an output forwarded from an input, or a view of one): the caller may mutate that
    argument later, and plait arrays are immutable. A fresh output (no ``base``, not an
    argument itself) needs no further look, so the common case costs a few checks."""
    for o in outs:
        if o.base is not None:
            break
        for a in args:
            if o is a:
                break
        else:
            continue
        break
    else:
        return outs
    return [o.copy() if any(type(a) is np.ndarray and np.may_share_memory(o, a) for a in args)
            else o for o in outs]


def _fast_key(args: tuple) -> tuple:
    """The fast path's key of positional plait/NumPy arrays: a plait array's aval (of
    any backend's Array), a NumPy array's (shape, dtype) (no aval built per call);
    TypeError for anything else."""
    return tuple([(a.shape, a.dtype) if type(a) is np.ndarray else a.aval
                  if isinstance(a, Array) else _not_fast(a) for a in args])


def _not_fast(a):
    raise TypeError(type(a).__name__)


def _tree_key(args: tuple) -> tuple[tuple, list]:
    """The fast path's key of positional pytrees (tuples, lists, dicts and None around
    plait/NumPy arrays, keyed as :func:`_fast_key` keys arrays) and their leaves in
    :func:`tree_flatten`'s order (dict keys sorted); TypeError for anything else
    (scalars, namedtuples, registered classes: the general path flattens those)."""
    key: list = []
    leaves: list = []
    _tree_walk(args, key, leaves)
    return tuple(key), leaves


def _tree_walk(x, key: list, leaves: list) -> None:
    t = type(x)
    if t is np.ndarray:
        key.append((x.shape, x.dtype))
        leaves.append(x)
    elif t is tuple or t is list:
        key.append((t, len(x)))
        for c in x:
            _tree_walk(c, key, leaves)
    elif t is dict:
        keys = sorted(x)
        key.append((dict, tuple(keys)))
        for k in keys:
            _tree_walk(x[k], key, leaves)
    elif x is None:
        key.append(None)
    elif isinstance(x, Array):
        key.append(x.aval)
        leaves.append(x)
    else:
        raise TypeError(t.__name__)


class _Static:
    """A static value keyed by identity (e.g. the ``self`` of a jitted method)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return id(self.value)

    def __eq__(self, other):
        return isinstance(other, _Static) and other.value is self.value

    def __repr__(self):
        return f"<{type(self.value).__name__} at {id(self.value):#x}>"


def _is_arraylike(x) -> bool:
    return isinstance(x, (Tracer, Array, np.ndarray, np.generic, bool, int, float, complex))


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False


class Lowered:
    """A traced function: print its stages or compile it."""

    def __init__(self, jitted: Jitted, entry: _Entry):
        self._jitted = jitted
        self._entry = entry

    @property
    def closed(self) -> ClosedGraph:
        return self._entry.closed

    def as_text(self, stage: str = "graph") -> str:
        """Text of a stage: ``graph`` (the optimized graph), or the native pipeline's
        ``kernels``, ``tile``, ``stripe``, ``stripe-opt`` and ``c`` (no compiler needed), or
        ``stablehlo`` (the xla backend's module)."""
        if stage in ("graph", "optimized"):
            return pp_graph(self._entry.closed)
        if stage == "stablehlo":
            from plait.backends.xla import stablehlo_text
            return stablehlo_text(self._entry.closed)
        from plait.backends.native import stage_text
        return stage_text(self._entry.closed, stage)

    def compile(self) -> "Compiled":
        return Compiled(self._jitted, self._entry)


class Traced:
    """A traced function (``jit(f).trace(...)``): its graph and output shapes."""

    def __init__(self, jitted: Jitted, entry: _Entry):
        self._jitted = jitted
        self._entry = entry

    @property
    def graph(self) -> ClosedGraph:
        return self._entry.closed

    @property
    def out_info(self):
        """The output as a pytree of ``ShapeDtypeStruct``s."""
        from plait.abstract import struct_of
        return tree_unflatten(self._entry.out_tree,
                              [struct_of(a) for a in self._entry.closed.out_avals])

    def lower(self) -> "Lowered":
        return Lowered(self._jitted, self._entry)


class Compiled:
    """A compiled executable for one signature."""

    def __init__(self, jitted: Jitted, entry: _Entry):
        self._jitted = jitted
        self._entry = entry
        self.executable = jitted._compile(entry)

    def __call__(self, *args, **kwargs):
        return self._jitted(*args, **kwargs)

    def as_text(self, stage: str | None = None) -> str:
        """The executable's text (``stage`` selects one for the native backend)."""
        return self.executable.as_text() if stage is None else self.executable.as_text(stage)

    def memory_analysis(self):
        """Bytes of arguments, outputs, constants, peak temporaries and outputs that
        reuse donated argument buffers, as a dict with JAX's attribute names too
        (``argument_size_in_bytes``, ``output_size_in_bytes``, ``alias_size_in_bytes``,
        ``temp_size_in_bytes``)."""
        from plait.cost import MemoryAnalysis
        ma = getattr(self.executable, "memory_analysis", None)
        if ma is None:
            from plait.errors import PlaitValueError
            raise PlaitValueError("this backend's executables have no memory_analysis")
        return MemoryAnalysis(**ma(self._entry.donated))

    def cost_analysis(self) -> dict:
        """``{"flops", "transcendentals", "bytes accessed"}`` of one call, from the
        optimized graph with each primitive's cost rule (``plait/cost.py``)."""
        from plait.cost import cost_analysis
        return cost_analysis(self._entry.closed)


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), backend: str | None = None,
        autograph: bool = False, donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Sequence[str] = (), keep_unused: bool = False,
        inline: bool = False):
    """Compile ``fun``: trace once per input signature, cache, and run the executable.

    Usable as ``jit(f)``, ``@jit`` or ``@jit(static_argnums=...)``. Wrappers of the same
    function object with the same options share traces and executables, so ``jit(f)(x)``
    written inline traces once. ``static_argnums``/``static_argnames`` (each completed
    from the other through the signature) are Python values in the cache key.
    ``donate_argnums``/``donate_argnames`` give up those arguments: the native backend
    writes outputs of the same shape and dtype into their buffers where safe, and donated
    plait Arrays are deleted after the call. ``keep_unused`` is accepted for JAX
    compatibility (plait never drops arguments). ``inline=True`` makes a call traced
    inside another transformation part of the caller's graph instead of a nested call.
    """
    opts = dict(donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                keep_unused=keep_unused, inline=inline)
    if fun is None:
        return lambda f: Jitted(f, static_argnums, static_argnames, backend, autograph, **opts)
    return Jitted(fun, static_argnums, static_argnames, backend, autograph, **opts)


def make_graph(fun: Callable, static_argnums: int | Sequence[int] = ()):
    """``make_graph(f)(*args)`` returns the (unoptimized) closed graph of ``f`` on args."""
    def wrapped(*args, **kwargs):
        j = Jitted(fun, static_argnums)
        leaves, avals, key, static_info, in_tree = j._signature(args, kwargs)
        statics, static_kw, n_total = static_info
        call = j._rebuild(statics, static_kw, n_total)

        def flat_fun(*ls):
            a, k = tree_unflatten(in_tree, ls)
            return tree_flatten(call(a, k))[0]
        closed, _ = trace_to_graph(flat_fun, avals, description=f"make_graph of {j._name}",
                                   name=getattr(fun, "__name__", ""))
        if config.checks:
            from plait.core.graph import check_graph
            check_graph(closed.graph)
        return closed
    return wrapped


# jit_call's eager implementation: compile the sub-graph once (cached per graph object).
_CALL_CACHE: "weakref.WeakKeyDictionary[Graph, Any]" = weakref.WeakKeyDictionary()


def _jit_call_impl(*args, graph: Graph, name: str):
    exe = _CALL_CACHE.get(graph)
    if exe is None:
        def build():
            from plait.backends import compile as backend_compile
            e = _CALL_CACHE[graph] = backend_compile(ClosedGraph(graph, []),
                                                      config.resolved_backend())
            metrics.bump("compiles")
            return e
        exe, _ = _ONCE.run(("call", id(graph)), lambda: _CALL_CACHE.get(graph), build)
    return exe(*args)


jit_call_p.def_impl(_jit_call_impl)
