"""Deterministic text form of Stripe programs (the paper's Figure 5 layout).

Example::

    program matmul (
      in A f32(4, 8)
      in B f32(8, 16)
      out C f32(4, 16) init add
    )
    #program
    block [] ( // main
      in A[0, 0] f32(4, 8):(8, 1)
      in B[0, 0] f32(8, 16):(16, 1)
      out C[0, 0]:assign f32(4, 16):(16, 1)
    ) {
      0: #agg_add #comb_mul #contraction #kernel
      block [i:4, j:16, k:8] ( // kernel_0
        // C[i, j : 4, 16] = +(A[i, k] * B[k, j])
        in A[i, k] f32(1, 1):(8, 1)
        in B[k, j] f32(1, 1):(16, 1)
        out C[i, j]:add f32(1, 1):(16, 1)
      ) {
        0: $A = load(A)
        1: $B = load(B)
        2: $C = mul($A, $B)
        3: C = store($C)
      }
    }

Indexes print as ``x:12``, passed-in parent indexes as ``xo = 3*x`` (range 1) or
``xo:4 = 3*x``; constraints as ``<affine> >= 0``; refinements as
``[#tags] dir into[=from][<loc>][access][:agg] dtype(sizes):(strides)``.
"""

from __future__ import annotations

from .ir import (
    Barrier,
    Block,
    Constant,
    Index,
    Intrinsic,
    Load,
    LoadIndex,
    Program,
    Refinement,
    Special,
    Statement,
    Store,
)


def _tags(tags) -> str:
    return " ".join(f"#{t}" for t in sorted(tags))


def format_index(i: Index) -> str:
    """``x:12`` / ``xo = 3*x`` / ``xo:4 = 3*x``."""
    if i.affine is None:
        return f"{i.name}:{i.range}"
    if i.range == 1:
        return f"{i.name} = {i.affine}"
    return f"{i.name}:{i.range} = {i.affine}"


def _ints(xs) -> str:
    return "(" + ", ".join(str(x) for x in xs) + ")"


def format_refinement(r: Refinement) -> str:
    """One refinement line (without indentation)."""
    s = (_tags(r.tags) + " ") if r.tags else ""
    s += f"{r.dir} {r.into}"
    if r.from_ is not None and r.from_ != r.into:
        s += f"={r.from_}"
    if r.location is not None:
        s += f"<{r.location}>"
    s += "[" + ", ".join(str(a) for a in r.access) + "]"
    if r.agg is not None:
        s += f":{r.agg}"
    s += f" {r.dtype}{_ints(r.shape)}:{_ints(r.strides)}"
    return s


def format_value(v) -> str:
    """Constant value: ``repr`` of the Python number (``0.5``, ``-inf``, ``3``, ``True``)."""
    if isinstance(v, float):
        return repr(v)
    return repr(v)


def format_stmt(s: Statement) -> str:
    """One non-block statement."""
    if isinstance(s, Load):
        return f"{s.into} = load({s.from_})"
    if isinstance(s, Store):
        return f"{s.into} = store({s.from_})"
    if isinstance(s, Constant):
        return f"{s.into} = ({s.dtype}){format_value(s.value)}"
    if isinstance(s, LoadIndex):
        return f"{s.into} = load_index({s.expr}):{s.dtype}"
    if isinstance(s, Intrinsic):
        lhs = s.outputs[0] if len(s.outputs) == 1 else "(" + ", ".join(s.outputs) + ")"
        t = f":{s.dtype}" if s.dtype is not None else ""
        return f"{lhs} = {s.name}({', '.join(s.inputs)}){t}"
    if isinstance(s, Barrier):
        return "barrier()"
    if isinstance(s, Special):
        out = f"({', '.join(s.outputs)}) = {s.name}({', '.join(s.inputs)})"
        if s.params:
            out += " {" + ", ".join(f"{k!r}: {v!r}" for k, v in s.params) + "}"
        return out
    raise TypeError(f"not a Stripe statement: {s!r}")


def _block_lines(b: Block, indent: str) -> list[str]:
    loc = f"<{b.location}>" if b.location is not None else ""
    head = f"{indent}block{loc} [" + ", ".join(format_index(i) for i in b.idxs) + "] ("
    if b.name:
        head += f" // {b.name}"
    lines = [head]
    inner = indent + "  "
    for c in b.comments:
        lines.append(f"{inner}// {c}".rstrip())
    for c in b.constraints:
        lines.append(f"{inner}{c} >= 0")
    for r in b.refs:
        lines.append(inner + format_refinement(r))
    lines.append(f"{indent}) {{")
    for n, s in enumerate(b.stmts):
        if isinstance(s, Block):
            lines.append(f"{inner}{n}:" + ((" " + _tags(s.tags)) if s.tags else ""))
            lines.extend(_block_lines(s, inner))
        else:
            lines.append(f"{inner}{n}: {format_stmt(s)}")
    lines.append(f"{indent}}}")
    return lines


def format_block(b: Block, indent: str = "") -> str:
    """A block (with its tag line if tagged) as text."""
    lines = [indent + _tags(b.tags)] if b.tags else []
    return "\n".join(lines + _block_lines(b, indent)) + "\n"


def format_program(p: Program) -> str:
    """A whole program: buffer table then the entry block."""
    lines = [f"program {p.name} ("]
    for buf in p.buffers:
        s = f"  {buf.kind} {buf.name} {buf.dtype}{_ints(buf.shape)}"
        if buf.init is not None:
            s += f" init {buf.init}"
        lines.append(s)
    lines.append(")")
    return "\n".join(lines) + "\n" + format_block(p.entry)


def to_text(x: Program | Block) -> str:
    """Text of a program or a block."""
    return format_program(x) if isinstance(x, Program) else format_block(x)
