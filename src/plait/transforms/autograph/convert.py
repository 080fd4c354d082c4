"""Turning a Python function into its converted twin: source -> rewrite -> new function.

The converted function is compiled from the rewritten AST with the ORIGINAL file
name and line numbers (so tracebacks and plait's error locations point at the
user's source), runs in the original globals, and shares the original closure
cells: the rewritten ``def`` is compiled inside a factory whose parameters are
the free variables, and the inner code object is instantiated directly with the
original cells (plus cells for ``ag__``, the run-time module, and ``ag__ctx``,
the statement facts). Conversions are cached per code object and per function.
"""
from __future__ import annotations

import ast
import functools
import inspect
import sysconfig
import types
import weakref
from dataclasses import dataclass
from typing import Callable

from plait.errors import PlaitTypeError, ControlFlowError
from plait.transforms.autograph.info import StmtInfo
from plait.errors import NotConvertible
from plait.transforms.autograph.rewrite import convert_function_def

_LIBRARY_TOPS = {"plait", "numpy"}
_LIB_DIRS = tuple({p for k in ("stdlib", "platstdlib", "purelib", "platlib")
                   if (p := sysconfig.get_paths().get(k))})


@dataclass
class Conversion:
    """The converted code of one original code object."""

    code: types.CodeType
    infos: list[StmtInfo]
    source: str


_BY_CODE: "weakref.WeakKeyDictionary[types.CodeType, Conversion | str]" = \
    weakref.WeakKeyDictionary()
_BY_FUNCTION: "weakref.WeakKeyDictionary[types.FunctionType, types.FunctionType]" = \
    weakref.WeakKeyDictionary()


def is_library(f: types.FunctionType) -> bool:
    """Library code (plait, NumPy, the standard library, installed packages) is never
    converted: only the user's own functions are."""
    top = (getattr(f, "__module__", None) or "").split(".")[0]
    if top in _LIBRARY_TOPS:
        return True
    fn = f.__code__.co_filename
    return "site-packages" in fn or "dist-packages" in fn or fn.startswith(_LIB_DIRS)


def _find_def(f: types.FunctionType) -> ast.FunctionDef:
    """The ``def`` (or lambda, wrapped in a ``def``) of ``f`` with file line numbers."""
    lines, start = inspect.getsourcelines(f)
    src = "".join(lines)
    if src[:1] in (" ", "\t"):
        src, offset = "if 1:\n" + src, start - 2
    else:
        offset = start - 1
    tree = ast.parse(src)
    ast.increment_lineno(tree, offset)
    first = f.__code__.co_firstlineno
    if f.__name__ == "<lambda>":
        lams = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == first]
        if len(lams) != 1:
            raise NotConvertible(f"{len(lams)} lambdas on line {first}; define the "
                                 f"function with `def` instead")
        lam = lams[0]
        body = ast.copy_location(ast.Return(value=lam.body), lam)
        return ast.copy_location(ast.FunctionDef(name="ag__lambda", args=lam.args,
                                                 body=[body], decorator_list=[],
                                                 returns=None, type_comment=None), lam)
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == f.__name__:
            lines_ = [n.lineno] + [d.lineno for d in n.decorator_list]
            if first in lines_:
                return n
    raise NotConvertible(f"could not find the definition of {f.__name__} at line {first}")


def _conversion(f: types.FunctionType) -> Conversion:
    code = f.__code__
    hit = _BY_CODE.get(code)
    if isinstance(hit, Conversion):
        return hit
    if isinstance(hit, str):
        raise NotConvertible(hit)
    try:
        fn = _find_def(f)
        filename = code.co_filename
        fn, infos = convert_function_def(fn, filename, f.__qualname__,
                                         "__class__" in code.co_freevars)
        source = ast.unparse(fn)
        fn.name = "ag__fn"      # a name the factory may bind without shadowing globals
        factory = ast.FunctionDef(
            name="ag__factory",
            args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in
                                                     ("ag__", "ag__ctx") + code.co_freevars],
                               vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                               defaults=[]),
            body=[fn],
            decorator_list=[], returns=None, type_comment=None)
        ast.copy_location(factory, fn)
        module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
        mod_code = compile(module, filename, "exec", dont_inherit=True,
                           flags=_future_flags(code))
        fac_code = _child(mod_code, "ag__factory")
        inner = _child(fac_code, fn.name).replace(co_name=code.co_name,
                                                  co_qualname=code.co_qualname)
        conv = Conversion(inner, infos, source)
    except (OSError, TypeError, SyntaxError, NotConvertible) as e:
        _BY_CODE[code] = str(e) or type(e).__name__
        raise NotConvertible(_BY_CODE[code]) from None
    _BY_CODE[code] = conv
    return conv


def _future_flags(code: types.CodeType) -> int:
    import __future__
    mask = 0
    for name in __future__.all_feature_names:
        feat = getattr(__future__, name)
        mask |= feat.compiler_flag
    return code.co_flags & mask


def _child(code: types.CodeType, name: str) -> types.CodeType:
    for c in code.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    raise NotConvertible(f"internal: no code object {name}")


def convert(f: types.FunctionType) -> types.FunctionType:
    """The converted twin of the Python function ``f`` (cached)."""
    done = _BY_FUNCTION.get(f)
    if done is not None:
        return done
    conv = _conversion(f)
    from plait.transforms.autograph import runtime
    old_free = f.__code__.co_freevars
    cells = []
    for name in conv.code.co_freevars:
        if name == "ag__":
            cells.append(types.CellType(runtime))
        elif name == "ag__ctx":
            cells.append(types.CellType(conv.infos))
        else:
            cells.append(f.__closure__[old_free.index(name)])
    g = types.FunctionType(conv.code, f.__globals__, f.__name__, f.__defaults__,
                           tuple(cells) or None)
    g.__kwdefaults__ = f.__kwdefaults__
    g.__qualname__ = f.__qualname__
    g.__doc__ = f.__doc__
    g.__module__ = f.__module__
    g.__annotations__ = dict(getattr(f, "__annotations__", {}) or {})
    g.__dict__.update(f.__dict__)
    g.__plait_autograph__ = conv
    g.__plait_original__ = f
    _BY_FUNCTION[f] = g
    return g


def maybe_convert(f):
    """``f`` converted when it is a user function (or a method of one), else ``f``."""
    if isinstance(f, types.FunctionType):
        if hasattr(f, "__plait_autograph__") or is_library(f):
            return f
        try:
            return convert(f)
        except NotConvertible:
            return f
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
        g = maybe_convert(f.__func__)
        return f if g is f.__func__ else types.MethodType(g, f.__self__)
    if isinstance(f, functools.partial):
        g = maybe_convert(f.func)
        return f if g is f.func else functools.partial(g, *f.args, **f.keywords)
    if not isinstance(f, type):
        call = getattr(type(f), "__call__", None)
        if isinstance(call, types.FunctionType):
            g = maybe_convert(call)
            return f if g is call else types.MethodType(g, f)
    return f


def autograph(f: Callable) -> Callable:
    """Convert ``f``'s Python ``if``/``while``/``for`` (and ``and``/``or``/``not``,
    conditional expressions, ``break``/``continue``/``return``) into plait control flow
    decided at run time: traced conditions become ``lax.cond``/``while_loop``/``scan``,
    Python values keep Python semantics. User functions ``f`` calls are converted too.

    Returns a function usable eagerly and under ``jit``, ``grad`` and ``vmap``.
    """
    if isinstance(f, types.FunctionType):
        if hasattr(f, "__plait_autograph__"):
            return f
        try:
            return convert(f)
        except NotConvertible as e:
            raise ControlFlowError(
                f"autograph cannot convert {f.__qualname__} "
                f"({f.__code__.co_filename}:{f.__code__.co_firstlineno}): {e}. autograph "
                f"needs the function's source code (a `def` in a file) and does not "
                f"convert generators or async functions.") from None
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
        return types.MethodType(autograph(f.__func__), f.__self__)
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType) and not is_library(call):
        return types.MethodType(autograph(call), f)
    raise PlaitTypeError(f"autograph needs a Python function, got {type(f).__name__}")


def to_source(f: Callable) -> str:
    """The converted source of ``f`` (what ``autograph(f)`` runs), for inspection."""
    g = autograph(f)
    g = getattr(g, "__func__", g)
    return g.__plait_autograph__.source
