"""No hidden globals: modules share state only through public functions and objects.

Two patterns made state invisible before (issue 22): a module reading or writing
another module's private data (``_CONCRETE``, ``_trace._NESTED``, ``_BIND[0] = bind``)
and one-element lists used as mutable module globals (``RECORDING = [0]``). The core's
one runtime hook is ``plait.core.trace.register_runtime``; state lives in small
explicit objects (``trace.RUNTIME``, thread-locals, context variables).
"""
from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import types

import plait

ROOT = pathlib.Path(plait.__file__).parent


def _sources():
    for path in sorted(ROOT.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def _module(name: str):
    try:
        return importlib.import_module(name)
    except Exception:       # optional dependencies (jaxlib), or not a module
        return None


def _is_code(obj) -> bool:
    """Functions, classes and modules are code, not state."""
    return (inspect.isroutine(obj) or inspect.isclass(obj)
            or isinstance(obj, (types.ModuleType, staticmethod, classmethod)))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_touches_another_modules_private_state():
    found = []
    for path, tree in _sources():
        aliases: dict[str, str] = {}        # local name -> plait module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("plait"):
                for a in node.names:
                    sub = _module(f"{node.module}.{a.name}")
                    if isinstance(sub, types.ModuleType):
                        aliases[a.asname or a.name] = sub.__name__
                    elif _private(a.name):
                        owner = _module(node.module)
                        if owner is not None and not _is_code(getattr(owner, a.name, None)):
                            found.append(f"{path.relative_to(ROOT)}: from {node.module} "
                                         f"import {a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("plait") and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and _private(node.attr)):
                owner = _module(aliases[node.value.id])
                if owner is not None and not _is_code(getattr(owner, node.attr, None)):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: "
                                 f"{aliases[node.value.id]}.{node.attr}")
    assert not found, ("modules reach into another module's private state; add a public "
                       "function or object to the owner instead:\n  " + "\n  ".join(found))


def test_no_one_element_lists_as_mutable_globals():
    found = []
    for path, tree in _sources():
        for node in tree.body:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if names == ["__all__"]:
                continue
            if isinstance(value, ast.List) and len(value.elts) == 1:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, ("one-element lists used as mutable globals; hold the state in an "
                       "explicit object (a small class, threading.local or ContextVar):\n  "
                       + "\n  ".join(found))


def test_the_runtime_registered_through_the_one_hook():
    from plait.core import trace
    from plait.runtime.array import Array
    from plait.runtime import nan_check
    assert trace.RUNTIME.array_type is Array
    assert trace.RUNTIME.eager_check is nan_check.check_eager
    a = trace.wrap_array(plait.numpy.asarray([1.0, 2.0])._value, True)
    assert type(a) is Array and a.weak_type and trace.is_concrete_array(a)
    assert not trace.is_concrete_array(a._value)
