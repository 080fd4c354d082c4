"""Every exception class plait defines lives in plait/errors.py (one place to find what
plait raises), apart from the reviewed list below."""
from __future__ import annotations

import ast
import importlib
import inspect
import pathlib

import plait
import plait.errors

ROOT = pathlib.Path(plait.__file__).parent

# file (relative to plait/) -> class name: exceptions allowed elsewhere, with the reason
ALLOWED = {
    ("fuzz/engines.py", "NodeError"): "the fuzzer (a developer tool) stores a failing "
                                      "node's exception as a value; never raised",
}


def _module_name(rel: str) -> str:
    name = "plait." + rel[:-3].replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def test_exception_classes_live_in_errors_py():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef) or (rel, node.name) in ALLOWED:
                continue
            try:
                cls = getattr(importlib.import_module(_module_name(rel)), node.name, None)
            except ImportError:     # an optional dependency is missing
                cls = None
            if cls is None:         # nested or not importable: judge by the bases' names
                if any(("Error" in ast.unparse(b) or "Exception" in ast.unparse(b))
                       for b in node.bases):
                    found.append(f"{rel}: {node.name}")
            elif inspect.isclass(cls) and issubclass(cls, BaseException) \
                    and cls.__module__ != "plait.errors":
                found.append(f"{rel}: {node.name}")
    assert not found, ("define these exceptions in plait/errors.py (and import them from "
                       "there):\n  " + "\n  ".join(found))


def test_moved_exceptions_keep_their_bases():
    e = plait.errors
    for cls, base in [(e.TileError, ValueError), (e.TileLowerError, ValueError),
                      (e.StripeParseError, ValueError), (e.StripeVerifyError, ValueError),
                      (e.StripeRuntimeError, RuntimeError), (e.SolverBudgetError, RuntimeError),
                      (e.XlaUnavailableError, ImportError)]:
        assert issubclass(cls, base) and issubclass(cls, e.PlaitError), cls
    from plait import lazy, stripe
    assert lazy.MaterializationForbiddenError is e.MaterializationForbiddenError
    assert stripe.StripeParseError is e.StripeParseError
