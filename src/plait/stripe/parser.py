"""Parser for the Stripe text format written by :mod:`plait.stripe.printer`.

``parse(to_text(p)) == p`` for every program and block.  The format is line oriented:
each index list, constraint, refinement and statement sits on its own line.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from .affine import parse_affine
from .ir import (
    Barrier,
    Block,
    Buffer,
    Constant,
    Index,
    Intrinsic,
    Load,
    LoadIndex,
    Program,
    Refinement,
    Special,
    Store,
)
from plait.errors import StripeParseError


_ID = r"[A-Za-z_][A-Za-z0-9_]*"
_SC = r"\$[A-Za-z0-9_]+"
_INTS = r"\(([-0-9, ]*)\)"
_BLOCK = re.compile(r"^block(?:<([^>]*)>)? \[(.*)\] \((?: // (.*))?$")
_REF = re.compile(
    rf"^((?:#\S+ )*)(in|out|inout|none) ({_ID})(?:=({_ID}))?(?:<([^>]*)>)?\[(.*)\](?::(\w+))? "
    rf"(\w+){_INTS}:{_INTS}$"
)
_BUF = re.compile(rf"^(in|out|tmp) ({_ID}) (\w+){_INTS}(?: init (\w+))?$")
_STMT_NO = re.compile(r"^(\d+):(.*)$")
_LOAD = re.compile(rf"^({_SC}) = load\(({_ID})\)$")
_STORE = re.compile(rf"^({_ID}) = store\(({_SC})\)$")
_CONST = re.compile(rf"^({_SC}) = \((\w+)\)(\S+)$")
_LIDX = re.compile(rf"^({_SC}) = load_index\((.*)\):(\w+)$")
_INTR = re.compile(rf"^(\(.*?\)|{_SC}) = (\w+)\((.*?)\)(?::(\w+))?$")
_SPECIAL = re.compile(r"^\((.*?)\) = (\w+)\((.*?)\)(?: (\{.*\}))?$")


def _ints(s: str) -> tuple[int, ...]:
    s = s.strip()
    return tuple(int(x) for x in s.split(",")) if s else ()


def _names(s: str) -> tuple[str, ...]:
    s = s.strip().strip("()").strip()
    return tuple(x.strip() for x in s.split(",")) if s else ()


def _split_top(s: str) -> list[str]:
    """Split on commas (affine lists contain no nested commas)."""
    s = s.strip()
    return [x.strip() for x in s.split(",")] if s else []


def _tags(s: str) -> frozenset:
    toks = s.split()
    for t in toks:
        if not t.startswith("#"):
            raise ValueError(f"expected a #tag, got {t!r}")
    return frozenset(t[1:] for t in toks)


def _value(s: str):
    if s in ("True", "False"):
        return s == "True"
    if s in ("inf", "-inf", "nan"):
        return float(s)
    try:
        return int(s)
    except ValueError:
        return float(s)


def parse_index(s: str) -> Index:
    """``x:12`` / ``xo = 3*x`` / ``xo:4 = 3*x``."""
    if "=" in s:
        lhs, rhs = s.split("=", 1)
        lhs = lhs.strip()
        name, rng = (lhs.split(":") + ["1"])[:2] if ":" in lhs else (lhs, "1")
        return Index(name.strip(), int(rng), parse_affine(rhs))
    name, rng = s.split(":")
    return Index(name.strip(), int(rng))


def parse_refinement(s: str) -> Refinement:
    """One refinement line."""
    m = _REF.match(s.strip())
    if not m:
        raise ValueError(f"bad refinement {s!r}")
    tags, d, into, frm, loc, acc, agg, dt, shape, strides = m.groups()
    return Refinement(
        dir=d,
        into=into,
        from_=None if d == "none" else (frm or into),
        access=tuple(parse_affine(a) for a in _split_top(acc)),
        dtype=dt,
        shape=_ints(shape),
        strides=_ints(strides),
        agg=agg,
        location=loc,
        tags=_tags(tags),
    )


def parse_stmt(s: str):
    """One non-block statement."""
    s = s.strip()
    for rx, mk in (
        (_LOAD, lambda g: Load(g[0], g[1])),
        (_STORE, lambda g: Store(g[0], g[1])),
        (_CONST, lambda g: Constant(g[0], _value(g[2]), g[1])),
        (_LIDX, lambda g: LoadIndex(g[0], parse_affine(g[1]), g[2])),
    ):
        m = rx.match(s)
        if m:
            return mk(m.groups())
    if s == "barrier()":
        return Barrier()
    m = _SPECIAL.match(s)
    if m and not m.group(1).strip().startswith("$"):
        outs, name, ins, params = m.groups()
        p = ast.literal_eval(params) if params else {}
        return Special(name, _names(ins), _names(outs), tuple(p.items()))
    m = _INTR.match(s)
    if m:
        outs, name, ins, dt = m.groups()
        return Intrinsic(name, _names(ins), _names(outs), dt)
    raise ValueError(f"bad statement {s!r}")


class _Lines:
    def __init__(self, text: str) -> None:
        self.lines = [ln.strip() for ln in text.splitlines()]
        self.i = 0

    def peek(self) -> Optional[str]:
        while self.i < len(self.lines) and not self.lines[self.i]:
            self.i += 1
        return self.lines[self.i] if self.i < len(self.lines) else None

    def next(self) -> str:
        ln = self.peek()
        if ln is None:
            raise StripeParseError("unexpected end of text")
        self.i += 1
        return ln

    def fail(self, msg: str) -> StripeParseError:
        return StripeParseError(f"line {self.i}: {msg}")


def _parse_block(L: _Lines, tags: frozenset) -> Block:
    head = L.next()
    m = _BLOCK.match(head)
    if not m:
        raise L.fail(f"expected 'block [...] (', got {head!r}")
    loc, idxs, name = m.groups()
    try:
        indexes = tuple(parse_index(x) for x in _split_top(idxs))
    except ValueError as e:
        raise L.fail(str(e)) from None
    comments, cons, refs = [], [], []
    while True:
        ln = L.next()
        if ln == ") {":
            break
        try:
            if ln.startswith("//"):
                comments.append(ln[3:] if ln.startswith("// ") else ln[2:])
            elif ln.endswith(">= 0") and not _REF.match(ln):
                cons.append(parse_affine(ln[: -len(">= 0")]))
            else:
                refs.append(parse_refinement(ln))
        except ValueError as e:
            raise L.fail(str(e)) from None
    stmts = []
    while True:
        ln = L.next()
        if ln == "}":
            break
        m = _STMT_NO.match(ln)
        if not m:
            raise L.fail(f"expected a numbered statement, got {ln!r}")
        body = m.group(2).strip()
        if not body or body.startswith("#"):
            try:
                t = _tags(body)
            except ValueError as e:
                raise L.fail(str(e)) from None
            stmts.append(_parse_block(L, t))
        else:
            try:
                stmts.append(parse_stmt(body))
            except (ValueError, SyntaxError) as e:
                raise L.fail(str(e)) from None
    return Block(
        name=name or "",
        idxs=indexes,
        constraints=tuple(cons),
        refs=tuple(refs),
        stmts=tuple(stmts),
        tags=tags,
        comments=tuple(comments),
        location=loc,
    )


def _parse_tagged_block(L: _Lines) -> Block:
    ln = L.peek()
    tags: frozenset = frozenset()
    if ln is not None and ln.startswith("#"):
        tags = _tags(L.next())
    return _parse_block(L, tags)


def parse_block(text: str) -> Block:
    """Parse the text of one block (as printed by ``format_block``)."""
    L = _Lines(text)
    b = _parse_tagged_block(L)
    if L.peek() is not None:
        raise L.fail("trailing text after block")
    return b


def parse_program(text: str) -> Program:
    """Parse the text of a program (as printed by ``format_program``)."""
    L = _Lines(text)
    head = L.next()
    m = re.match(rf"^program ({_ID}) \($", head)
    if not m:
        raise L.fail(f"expected 'program NAME (', got {head!r}")
    bufs = []
    while True:
        ln = L.next()
        if ln == ")":
            break
        bm = _BUF.match(ln)
        if not bm:
            raise L.fail(f"bad buffer line {ln!r}")
        kind, name, dt, shape, init = bm.groups()
        bufs.append(Buffer(name, kind, dt, _ints(shape), init))
    entry = _parse_tagged_block(L)
    if L.peek() is not None:
        raise L.fail("trailing text after program")
    return Program(m.group(1), tuple(bufs), entry)


def parse(text: str) -> Program | Block:
    """Parse a program (text starting with ``program``) or a block."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return parse_program(text) if first.startswith("program ") else parse_block(text)
