"""Deterministic text form of Tile programs.

::

    function matmul(A: f32[4, 8], B: f32[8, 16]) -> (C: f32[4, 16]) {
      C[i, j : 4, 16] = +(A[i, k] * B[k, j])
    }

Temporaries are declared first (``  local T: f32[4, 16]``).  Aggregations print as
``=`` assign, ``+`` add, ``*`` mul, ``>`` max, ``<`` min; constraints follow the
combination (``, kx < 3``); a default follows as ``default D``.  Elementwise statements
print as nested calls: ``T = tanh(add(A, mul(B, 2.0:f32)))``, ``cast<f32>(X)``,
``index(0):i32``.
"""

from __future__ import annotations

from .ir import (
    AGG_SYMBOL,
    COMB_SYMBOL,
    Call,
    Const,
    Elementwise,
    Expr,
    IndexValue,
    Input,
    Program,
    Statement,
    Tensor,
)


def format_expr(e: Expr) -> str:
    """An elementwise expression."""
    if isinstance(e, Input):
        return e.tensor
    if isinstance(e, Const):
        return f"{e.value!r}:{e.dtype}"
    if isinstance(e, IndexValue):
        return f"index({e.axis}):{e.dtype}"
    if isinstance(e, Call):
        t = f"<{e.dtype}>" if e.dtype is not None else ""
        return f"{e.op}{t}(" + ", ".join(format_expr(a) for a in e.args) + ")"
    raise TypeError(f"not a Tile expression: {e!r}")


def format_stmt(s: Statement, shape: tuple[int, ...] | None = None) -> str:
    """One statement; contractions need the output ``shape`` for the ``: sizes`` part."""
    if isinstance(s, Elementwise):
        return f"{s.out} = {format_expr(s.expr)}"
    idx = ", ".join(str(i) for i in s.out_idxs)
    sizes = ", ".join(str(d) for d in (shape or ()))
    lhs = f"{s.out}[{idx} : {sizes}]" if s.out_idxs or sizes else f"{s.out}[]"
    if s.comb == "none":
        body = str(s.inputs[0])
    elif s.comb == "select":
        a, b, c = s.inputs
        body = f"{a} == {b} ? {c}"
    else:
        body = COMB_SYMBOL[s.comb].join(str(a) for a in s.inputs)
    out = f"{lhs} = {AGG_SYMBOL[s.agg]}({body})"
    for c in s.constraints:
        out += f", {c}"
    if s.default is not None:
        out += f" default {s.default}"
    return out


def _decl(t: Tensor) -> str:
    return f"{t.name}: {t.dtype}[{', '.join(str(d) for d in t.shape)}]"


def format_program(p: Program) -> str:
    """The whole program as a ``function``."""
    ins = ", ".join(_decl(p.tensor(n)) for n in p.inputs)
    outs = ", ".join(_decl(p.tensor(n)) for n in p.outputs)
    lines = [f"function {p.name}({ins}) -> ({outs}) {{"]
    io = set(p.inputs) | set(p.outputs)
    for t in p.tensors:
        if t.name not in io:
            lines.append(f"  local {_decl(t)}")
    for s in p.stmts:
        lines.append("  " + format_stmt(s, p.tensor(s.out).shape))
    lines.append("}")
    return "\n".join(lines) + "\n"
