"""Known open plait bugs the fuzzer keeps finding: reported apart, never counted as new.

Each entry names the defect (issue 21 lists most of them) and recognises its
failures from the op and the operands. When a fix lands, delete its entry: the fixed-
seed CI slice then guards the fix. Deliberate differences from NumPy are not here;
they are encoded once in the op table (``ops.py``).
"""
from __future__ import annotations

from typing import Callable, Optional



# (label, op names, engines or None for all, predicate(operands, want) -> bool)
KNOWN: list[tuple[str, tuple, Optional[tuple], Callable]] = []   # every issue-21 entry is fixed


def known_label(op: str, engine: str, operands: list, want) -> Optional[str]:
    """The known defect explaining a failure of ``op`` on ``operands`` (NumPy: ``want``)."""
    for label, ops, engines, pred in KNOWN:
        if op in ops and (engines is None or engine in engines):
            try:
                if pred(operands, want):
                    return label
            except Exception:   # noqa: BLE001 - a predicate that cannot judge does not match
                continue
    return None


def known_grad_label(program, message: str) -> Optional[str]:
    """The known defect explaining a gradient-mode failure of ``program``, if any (none
    is open: the empty-sort gradient of issue 21.8 is fixed)."""
    return None
