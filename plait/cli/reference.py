"""Reference pages generated from the code, so they stay true: every ``PLAIT_*``
setting (from ``plait/config.py``, plus any variable another module still reads) and
every exception class of ``plait/errors.py``. The docs site's build hook
(``docs/hooks.py``) puts them into ``docs/configuration.md`` and ``docs/errors.md``;
``plait config`` prints the settings with their current values."""
from __future__ import annotations

import inspect
import os
import re

import plait

_PKG = os.path.dirname(os.path.abspath(plait.__file__))
_NAME = re.compile(r"\bPLAIT_[A-Z0-9_]*[A-Z0-9]")
_NOT_SETTINGS = {"PLAIT_KERNEL"}      # a macro of the generated C, not a variable


def _parenthesized(text: str, start: int) -> str | None:
    """The balanced ``( ... )`` group at ``start`` (without the parentheses)."""
    if start >= len(text) or text[start] != "(":
        return None
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1:i]
    return None


def _docstring_descriptions(doc: str) -> dict[str, str]:
    """``{PLAIT_X: description}`` from prose like ````PLAIT_X`` (what it does)``; names
    joined by ``/`` share the description that follows the last."""
    out: dict[str, str] = {}
    pending: list[str] = []
    for m in re.finditer(r"``(PLAIT_[A-Z0-9_]+)``", doc):
        pending.append(m.group(1))
        rest = doc[m.end():]
        if rest.startswith("/"):
            continue
        desc = _parenthesized(doc, m.end() + len(rest) - len(rest.lstrip()))
        if desc is not None:
            for n in pending:
                out[n] = " ".join(desc.split())
        pending = []
    return out


def _attributes() -> dict[str, tuple[str, str]]:
    """``{PLAIT_X: (attribute of plait.config, comment)}`` from ``Config.__init__``'s
    source: an attribute line naming the variable, or the comment lines just above it."""
    from plait.config import Config
    src = inspect.getsource(Config.__init__).splitlines()
    out: dict[str, tuple[str, str]] = {}
    comments: list[str] = []
    for line in src:
        s = line.strip()
        if s.startswith("#"):
            comments.append(s.lstrip("# "))
            continue
        m = re.match(r"self\.(\w+)\s*(?::[^=]+)?=(.*)$", s)
        if not m:
            continue
        code, _, comment = m.group(2).partition("  #")
        names = _NAME.findall(code) or _NAME.findall(" ".join(comments))
        for n in names:
            out.setdefault(n, (m.group(1), " ".join(comments + [comment.strip(" #")]).strip()))
        comments = []
    return out


def _readers() -> dict[str, list[str]]:
    """``{PLAIT_X: [modules reading it]}`` over the package's sources."""
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
    """Every ``PLAIT_*`` variable: name, ``plait.config`` attribute (or None), the current
    value, what it does, and the modules that read it."""
    import sys
    cfg_mod = sys.modules["plait.config"]       # plait.config the attribute is the object
    descs = _docstring_descriptions(cfg_mod.__doc__ or "")
    attrs = _attributes()
    readers = _readers()
    rows = []
    for name in sorted(readers):
        attr, comment = attrs.get(name, (None, ""))
        value = getattr(cfg_mod.config, attr, None) if attr else os.environ.get(name)
        rows.append({"name": name, "attribute": attr, "value": value,
                     "description": descs.get(name) or comment or "",
                     "read_by": sorted(readers[name])})
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
