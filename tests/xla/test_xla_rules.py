"""Every primitive has a ``to_stablehlo`` rule or a reviewed refusal, and the refusal
list is exact (no stale entries, no primitive both lowered and refused)."""
from __future__ import annotations

import numpy as np
import pytest

import plait
from plait.backends.xla.rules import REFUSED, RULE
from plait.core.primitive import ALL_PRIMITIVES
from plait.errors import XlaUnavailableError


def test_every_primitive_lowers_or_is_refused():
    missing = sorted(n for n, p in ALL_PRIMITIVES.items()
                     if not p.has_rule(RULE) and n not in REFUSED)
    assert not missing, f"primitives without a to_stablehlo rule: {missing}"


def test_refused_list_is_exact():
    assert set(REFUSED) <= set(ALL_PRIMITIVES), sorted(set(REFUSED) - set(ALL_PRIMITIVES))
    both = sorted(n for n in REFUSED if ALL_PRIMITIVES[n].has_rule(RULE))
    assert not both, f"refused but lowered: {both}"


def test_stablehlo_text_needs_no_jaxlib():
    text = plait.jit(lambda x: x * 2 + 1).lower(np.ones(3, np.float32)).as_text("stablehlo")
    assert "func.func public @main" in text and "stablehlo.multiply" in text


def test_dump_dir_writes_module(tmp_path, monkeypatch):
    pytest.importorskip("jaxlib")
    from plait.config import config
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    plait.jit(lambda x: x - 3, backend="xla")(np.ones(2))
    files = list(tmp_path.rglob("stablehlo.mlir"))
    assert files and "stablehlo.subtract" in files[0].read_text()


def test_missing_jaxlib_is_a_clear_error(monkeypatch):
    import builtins
    import plait.backends.xla.pjrt  # noqa: F401  (imported before __import__ is patched)
    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("jaxlib"):
            raise ImportError("No module named 'jaxlib'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(XlaUnavailableError, match=r'pip install "plait\[xla\]"'):
        plait.jit(lambda x: x + 1, backend="xla")(np.ones(2))
