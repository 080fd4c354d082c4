"""Affine expressions for Stripe: accesses, constraints and index offsets.

The :class:`Affine` type itself is defined once in :mod:`plait.tile.affine` (Tile imports
nothing from Stripe) and re-exported here; this module adds its text parser.  Printing is
``str(a)``: terms sorted by variable name, constant last (``i + 2*x - 1``, ``0``).
"""

from __future__ import annotations

import re

from plait.tile.affine import Affine, const, var, variables

__all__ = ["Affine", "const", "var", "variables", "parse_affine"]

_TOK = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|([-+*]))")


def parse_affine(text: str) -> Affine:
    """Parse the printed form of an affine expression (``-2*x + y - 1``, ``3``, ``-x``)."""
    pos, toks = 0, []
    text = text.strip()
    while pos < len(text):
        m = _TOK.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"bad affine expression {text!r} at {pos}")
        toks.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
    if not toks:
        raise ValueError("empty affine expression")
    out = Affine()
    i, sign = 0, 1
    expect_term = True
    while i < len(toks):
        t = toks[i]
        if t in "+-" and expect_term:
            sign = sign * (-1 if t == "-" else 1)
            i += 1
            continue
        if t in "+-":
            sign = -1 if t == "-" else 1
            expect_term = True
            i += 1
            continue
        if not expect_term:
            raise ValueError(f"bad affine expression {text!r}")
        if t.isdigit():
            if i + 2 < len(toks) + 0 and i + 1 < len(toks) and toks[i + 1] == "*":
                out = out + sign * int(t) * var(toks[i + 2])
                i += 3
            else:
                out = out + sign * int(t)
                i += 1
        elif t == "*":
            raise ValueError(f"bad affine expression {text!r}")
        else:
            out = out + sign * var(t)
            i += 1
        sign, expect_term = 1, False
    if expect_term:
        raise ValueError(f"bad affine expression {text!r}")
    return out
