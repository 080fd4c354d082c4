"""Reference pages generated from the code, so they stay true: every ``PLAIT_*``
setting (the rows of ``plait.config.SETTINGS``) and every exception class of
``plait/errors.py``. The docs site's build hook
(``docs/hooks.py``) puts them into ``docs/configuration.md`` and ``docs/errors.md``;
``plait config`` prints the settings with their current values."""
from __future__ import annotations

import inspect
import os
import re

import plait

_PKG = os.path.dirname(os.path.abspath(plait.__file__))
_NAME = re.compile(r"(?<![A-Za-z0-9_])PLAIT_[A-Z0-9_]*[A-Z0-9]")
_NOT_SETTINGS = {"PLAIT_KERNEL", "PLAIT_KERNEL_WIDE", "PLAIT_NO_VECMATH"}   # macros of the generated C


def _readers() -> dict[str, list[str]]:
    """``{variable: [modules naming it]}`` over the package's sources."""
    out: dict[str, list[str]] = {}
    for root, _, files in os.walk(_PKG):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            rel = os.path.relpath(path, os.path.dirname(_PKG))
            if path == os.path.abspath(__file__):
                continue
            for n in set(_NAME.findall(text)) - _NOT_SETTINGS:
                out.setdefault(n, []).append(rel)
    return out


def settings() -> list[dict]:
    """Every ``PLAIT_*`` variable: name, ``plait.config`` attribute, current value, what
    it does (its ``config.SETTINGS`` row), and the modules that name it. A variable some
    module names without a row comes last, with no attribute."""
    from plait.config import SETTINGS, config
    readers = _readers()
    rows = [{"name": s.env, "attribute": s.name, "value": getattr(config, s.name),
             "description": s.doc, "read_by": sorted(readers.get(s.env, []))}
            for s in sorted(SETTINGS, key=lambda s: s.env)]
    known = {s.env for s in SETTINGS}
    rows += [{"name": n, "attribute": None, "value": None, "description": "",
              "read_by": sorted(readers[n])} for n in sorted(set(readers) - known)]
    return rows


def configuration_markdown() -> str:
    """The configuration reference (markdown)."""
    rows = settings()
    lines = ["| variable | `plait.config` attribute | what it does |", "|---|---|---|"]
    elsewhere = []
    for r in rows:
        attr = f"`{r['attribute']}`" if r["attribute"] else "—"
        desc = (r["description"].replace("|", "\\|").replace("``", "`")
                or "see " + ", ".join(f"`{m}`" for m in r["read_by"]))
        lines.append(f"| <span id=\"{r['name'].lower()}\"></span>`{r['name']}` | {attr} | "
                     f"{desc} |")
        if not r["attribute"] and "plait/config.py" not in r["read_by"]:
            elsewhere.append(r)
    if elsewhere:
        lines += ["", "Read outside `plait/config.py` (so not settable through `plait.config`):",
                  ""]
        lines += [f"- `{r['name']}`: read by {', '.join(f'`{m}`' for m in r['read_by'])}"
                  for r in elsewhere]
    return "\n".join(lines)


def error_classes() -> list[type]:
    """Every exception and warning class defined in ``plait/errors.py``, in file order."""
    from plait import errors
    classes = [v for v in vars(errors).values() if isinstance(v, type)
               and issubclass(v, BaseException) and v.__module__ == errors.__name__]
    return sorted(classes, key=lambda c: inspect.getsourcelines(c)[1])


def anchor(cls: type) -> str:
    """The error reference's anchor of an exception class."""
    return cls.__name__.lower()


def errors_markdown() -> str:
    """The error reference (markdown): one section, with its anchor, per class."""
    out = []
    for cls in error_classes():
        bases = ", ".join(f"`{b.__name__}`" for b in cls.__bases__)
        doc = inspect.cleandoc(cls.__doc__ or "").replace("``", "`")
        out.append(f"## {cls.__name__} {{#{anchor(cls)}}}\n\nSubclass of {bases}.\n\n{doc}\n")
    return "\n".join(out)
