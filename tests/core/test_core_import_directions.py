"""The import directions of ARCHITECTURE.md's package table hold in the code.

Each row names units (``plait/<unit>/`` or ``plait/<unit>.py``) and, in its last
column, the units they may import (backticked names, ``anything`` = all but ``fuzz``,
``—`` = none). Every ``import`` of a plait module, at module level or inside a
function, must follow the row of the importing unit.
"""
from __future__ import annotations

import ast
import pathlib
import re

import plait

ROOT = pathlib.Path(plait.__file__).parent
DOC = ROOT.parents[1] / "ARCHITECTURE.md"      # src/plait -> the repository

# Upward imports done inside functions, each reviewed: (importer file, imported unit).
ALLOWED_LAZY = {
    ("lax/__init__.py", "transforms"): "custom_root/custom_linear_solve differentiate, so "
                                       "they live in transforms; looked up on first use",
    ("config.py", "codegen"): "resolved_backend probes for a C compiler",
}


def _table() -> dict[str, set[str] | None]:
    """unit -> the units it may import (None: anything but fuzz)."""
    text = DOC.read_text()
    section = text[text.index("## Packages"):]
    section = section[:section.index("\n## ", 4)]
    rows = [line for line in section.splitlines() if line.startswith("| `plait/")]
    allowed: dict[str, set[str] | None] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split(" | ")]
        units = [re.match(r"plait/([A-Za-z_]+)", p).group(1)
                 for p in re.findall(r"`(plait/[^`]*)`", cells[0])]
        last = cells[-1]
        may = None if last.startswith("anything") else set(re.findall(r"`([a-z_]+)`", last))
        for u in units:
            allowed[u] = may
    return allowed


def _unit(rel: str) -> str:
    first = rel.split("/")[0]
    return first[:-3] if first.endswith(".py") else first


def _imports(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "plait":
                for a in node.names:   # a submodule, or a name of the package (plait.jit)
                    sub = (ROOT / a.name).is_dir() or (ROOT / f"{a.name}.py").exists()
                    yield node.lineno, f"plait.{a.name}" if sub else "plait"
            else:
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name


def test_every_unit_has_a_row():
    table = _table()
    units = {_unit(str(p.relative_to(ROOT))) for p in ROOT.rglob("*.py")}
    missing = sorted(units - set(table) - {"__init__"})
    assert not missing, f"add rows for these parts of plait/ to ARCHITECTURE.md: {missing}"


def test_imports_follow_the_table():
    table = _table()
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        unit = _unit(rel)
        may = table.get(unit)           # None: anything (and the package __init__)
        for line, module in _imports(ast.parse(path.read_text())):
            parts = module.split(".")
            if parts[0] != "plait":
                continue
            target = parts[1] if len(parts) > 1 else "plait"
            if target == unit or (rel, target) in ALLOWED_LAZY:
                continue
            if target == "fuzz" and unit != "fuzz":
                bad.append(f"{rel}:{line} imports {module} (nothing in plait imports fuzz)")
            elif may is not None and target not in may:
                bad.append(f"{rel}:{line} imports {module}: {unit} may import "
                           f"{sorted(may) or 'nothing'}")
    assert not bad, ("imports against ARCHITECTURE.md's table (fix the import, or change "
                     "the table with the design):\n  " + "\n  ".join(bad))
