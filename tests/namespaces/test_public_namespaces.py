"""Each public module's namespace equals a reviewed list checked into this folder.

One file per public module, ``<module>.txt``: its public names, sorted, one a line
(``name  # optional: reason`` for a name that exists only with an optional
dependency). The files are the list of public modules. A module must define
``__all__`` equal to its list, and ``dir(module)`` (minus dunders, private names and
the submodules Python binds on import) must hold nothing else: a name there and not in
``__all__`` is an implementation detail leaking out (an imported module, a helper
imported from elsewhere); import it under a private alias instead.

To add a public name: add it to the module's ``__all__`` and to ``<module>.txt``.
"""
from __future__ import annotations

import importlib
import pathlib
import types

import pytest

HERE = pathlib.Path(__file__).parent
LISTS = sorted(HERE.glob("*.txt"))


def _read(path: pathlib.Path) -> tuple[list[str], set[str]]:
    names, optional = [], set()
    for line in path.read_text().splitlines():
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        names.append(text)
        if "# optional" in line:
            optional.add(text)
    return names, optional


def _is_bound_submodule(module, name: str) -> bool:
    value = getattr(module, name, None)
    return isinstance(value, types.ModuleType) and value.__name__ == f"{module.__name__}.{name}"


@pytest.mark.parametrize("path", LISTS, ids=lambda p: p.stem)
def test_namespace_matches_reviewed_list(path):
    listed, optional = _read(path)
    rel = f"tests/namespaces/{path.name}"
    assert listed == sorted(set(listed)), f"{rel}: keep it sorted, one name a line, no repeats"
    module = importlib.import_module(path.stem)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{path.stem} has no __all__; define it as the names in {rel}"
    exported = list(exported)
    assert len(exported) == len(set(exported)), f"{path.stem}.__all__ repeats a name"

    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{path.stem}.__all__ names missing attributes: {missing}"

    visible = {n for n in dir(module) if not n.startswith("_")}
    leaked = sorted(n for n in visible - set(exported) if not _is_bound_submodule(module, n))
    present = set(listed) - {n for n in optional if not hasattr(module, n)}
    to_add = sorted(set(exported) - set(listed))
    to_remove = sorted(present - set(exported))
    problems = []
    if leaked:
        problems.append(f"in dir({path.stem}) but not in __all__ (make them private, e.g. "
                        f"`import x as _x`, or add them to __all__ and {rel}): {leaked}")
    if to_add:
        problems.append(f"in {path.stem}.__all__ but not reviewed: add to {rel}: {to_add}")
    if to_remove:
        problems.append(f"listed in {rel} but not in {path.stem}.__all__: add them back to "
                        f"__all__ or remove them from {rel}: {to_remove}")
    assert not problems, "\n".join(problems)


def test_the_top_level_public_packages_have_lists():
    import plait
    for name in plait.__all__:
        value = getattr(plait, name)
        if isinstance(value, types.ModuleType) and value.__name__ == f"plait.{name}":
            assert (HERE / f"plait.{name}.txt").exists(), f"add tests/namespaces/plait.{name}.txt"
