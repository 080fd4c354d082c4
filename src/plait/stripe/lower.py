"""Lower a Tile program to a Stripe program.

Program shape: one :class:`~plait.stripe.ir.Buffer` per Tile input and output; the entry
block ``main`` (tag ``program``) refines them (``in`` for inputs, ``out``/``inout`` for
outputs) and allocates temporaries as ``none`` refinements; each Tile statement becomes
one kernel block of ``main``, in program order.

Contractions (tags ``kernel contraction agg_<op> comb_<op>``): the valid index
assignments form the integer polyhedron ``0 <= access < size`` for every tensor
dimension (output included) plus the user constraints.  Each index variable's range is
its exact [min, max] over that polyhedron (Fourier-Motzkin, :mod:`.polyhedron`); indices
are shifted to start at 0; the constraints not implied by the resulting box become block
constraints.  An index with no finite bound is an error.  A ``default`` tensor becomes an
explicit copy kernel (tags ``kernel eltwise copy default``) before the contraction, whose
output refinement is then ``inout``.

Elementwise statements (tags ``kernel eltwise eltwise_<op>...``): one index per output
dimension of size > 1, inputs broadcast NumPy-style (size-1 or missing dims read 0).
"""

from __future__ import annotations

import math
from plait import tile as T

from . import polyhedron
from .affine import Affine, var
from .intrinsics import INTRINSICS
from .ir import (
    Block,
    Buffer,
    Constant,
    Index,
    Intrinsic,
    Load,
    LoadIndex,
    Program,
    Refinement,
    Statement,
    Store,
    row_major_strides,
)
from plait.errors import TileLowerError


def _unique(name: str, taken: set[str]) -> str:
    n, k = name, 0
    while n in taken:
        k += 1
        n = f"{name}_{k}"
    taken.add(n)
    return n


def _scalar_ref(dir: str, into: str, frm: str, access, t: T.Tensor, agg=None, tags=()) -> Refinement:
    return Refinement(
        dir=dir,
        into=into,
        from_=frm,
        access=tuple(access),
        dtype=t.dtype,
        shape=(1,) * t.rank,
        strides=row_major_strides(t.shape),
        agg=agg,
        tags=frozenset(tags),
    )


def index_bounds(s: T.Contraction, prog: T.Program) -> tuple[dict[str, tuple[int, int]], list[Affine]]:
    """Exact integer bounds of every index variable and the full constraint list.

    Constraints are affines ``>= 0``.  Returns ``({}, [...])`` with ``lo > hi`` entries
    when the valid set is empty.
    """
    cons: list[Affine] = []

    def dim(expr: Affine, size: int) -> None:
        cons.append(expr)
        cons.append(size - 1 - expr)

    out = prog.tensor(s.out)
    for e, n in zip(s.out_idxs, out.shape):
        dim(e, n)
    for acc in s.inputs:
        for e, n in zip(acc.idxs, prog.tensor(acc.tensor).shape):
            dim(e, n)
    for c in s.constraints:
        dim(c.expr, c.bound)
    bounds: dict[str, tuple[int, int]] = {}
    for v in s.index_vars:
        hi = polyhedron.maximize(cons, var(v))
        if hi is None:
            return {}, cons
        lo = polyhedron.minimize(cons, var(v))
        if lo is None:
            return {}, cons
        if hi == math.inf or lo == -math.inf:
            raise TileLowerError(
                f"index {v!r} of '{T.format_stmt(s, out.shape)}' cannot be bounded: no tensor "
                f"dimension or constraint limits it; add a constraint such as '{v} < N'"
            )
        bounds[v] = (int(lo), int(hi))
    return bounds, cons


def _box_implies(c: Affine, bounds: dict[str, tuple[int, int]]) -> bool:
    lo = c.const
    for n, k in c.terms:
        a, b = bounds[n]
        lo += k * (a if k > 0 else b)
    return lo >= 0


def _loop_order(s: T.Contraction) -> tuple[str, ...]:
    """The contraction's index variables, outermost first.

    A copy or window reduction (one input) whose output's last, contiguous dimension is
    one index that also walks the input's last dimension runs that index innermost:
    the loop then reads and writes consecutive elements (it vectorizes), rather than
    reducing a few window elements in a register per output element.
    """
    names = s.index_vars
    if s.comb != "none" or not s.out_idxs:
        return names
    last, inner = s.out_idxs[-1], s.inputs[0].idxs[-1:]
    if len(last.terms) != 1 or last.terms[0][1] != 1 or not inner or inner[0].coeff(last.terms[0][0]) != 1:
        return names
    v = last.terms[0][0]
    return tuple(n for n in names if n != v) + (v,)


def lower_contraction(s: T.Contraction, prog: T.Program, name: str, scope: dict[str, str]) -> list[Block]:
    """Kernel block(s) for one contraction (copy-from-default first if any).

    ``scope`` maps tensor names to the refinement names visible in ``main``.
    """
    out = prog.tensor(s.out)
    text = T.format_stmt(s, out.shape)
    blocks: list[Block] = []
    if s.default is not None:
        blocks.append(_copy_block(prog.tensor(s.default), out, f"{name}_default", scope))
    if 0 in out.shape:
        return blocks
    bounds, cons = index_bounds(s, prog)
    if not bounds and s.index_vars:
        return blocks  # no valid assignment: the output keeps its initial value
    names = _loop_order(s)
    shift = {v: var(v) + bounds[v][0] for v in names}
    idxs = tuple(Index(v, bounds[v][1] - bounds[v][0] + 1) for v in names)
    zero_box = {v: (0, bounds[v][1] - bounds[v][0]) for v in names}
    kept: list[Affine] = []
    for c in cons:
        c2 = c.substitute(shift)
        if not _box_implies(c2, zero_box) and c2 not in kept:
            kept.append(c2)
    taken: set[str] = {s.out}
    refs = [
        _scalar_ref(
            "inout" if s.default is not None else "out",
            s.out,
            scope[s.out],
            (e.substitute(shift) for e in s.out_idxs),
            out,
            agg=s.agg,
        )
    ]
    stmts: list[Statement] = []
    scalars: list[str] = []
    for acc in s.inputs:
        t = prog.tensor(acc.tensor)
        into = _unique(acc.tensor, taken)
        refs.append(
            _scalar_ref("in", into, scope[acc.tensor], (e.substitute(shift) for e in acc.idxs), t,
                        tags=("contraction",))
        )
        stmts.append(Load(f"${into}", into))
        scalars.append(f"${into}")
    res = f"${s.out}" if f"${s.out}" not in scalars else f"${s.out}_out"
    if s.comb == "none":
        res = scalars[0]
    elif s.comb in ("mul", "add"):
        stmts.append(Intrinsic(s.comb, tuple(scalars), (res,)))
    elif s.comb == "eq":
        stmts.append(Intrinsic("cmp_eq", tuple(scalars), (res,), out.dtype))
    else:  # select: A == B ? C : 0
        stmts.append(Intrinsic("cmp_eq", tuple(scalars[:2]), ("$eq",)))
        stmts.append(Constant("$zero", 0, out.dtype))
        stmts.append(Intrinsic("select", ("$eq", scalars[2], "$zero"), (res,)))
    stmts.append(Store(s.out, res))
    blocks.append(
        Block(
            name=name,
            idxs=idxs,
            constraints=tuple(kept),
            refs=tuple(refs),
            stmts=tuple(stmts),
            tags=frozenset({"kernel", "contraction", f"agg_{s.agg}", f"comb_{s.comb}"}),
            comments=(text,),
        )
    )
    return blocks


def _copy_block(src: T.Tensor, dst: T.Tensor, name: str, scope: dict[str, str]) -> Block:
    names = [f"i{d}" for d in range(dst.rank)]
    acc = tuple(var(n) if dst.shape[d] > 1 else Affine() for d, n in enumerate(names))
    idxs = tuple(Index(n, dst.shape[d]) for d, n in enumerate(names) if dst.shape[d] > 1)
    return Block(
        name=name,
        idxs=idxs,
        refs=(
            _scalar_ref("in", src.name, scope[src.name], acc, src),
            _scalar_ref("out", dst.name, scope[dst.name], acc, dst, agg="assign"),
        ),
        stmts=(Load(f"${src.name}", src.name), Store(dst.name, f"${src.name}")),
        tags=frozenset({"kernel", "eltwise", "copy", "default"}),
        comments=(f"{dst.name} = {src.name}",),
    )


def _expr_ops(e: T.Expr, acc: set[str], seen: set[T.Expr] | None = None) -> set[str]:
    """The intrinsics ``e`` calls, visiting each shared sub-expression once."""
    seen = set() if seen is None else seen
    if isinstance(e, T.Call) and e not in seen:
        seen.add(e)
        acc.add(e.op)
        for a in e.args:
            _expr_ops(a, acc, seen)
    return acc


def lower_elementwise(s: T.Elementwise, prog: T.Program, name: str, scope: dict[str, str]) -> list[Block]:
    """The kernel block for one elementwise statement."""
    out = prog.tensor(s.out)
    if 0 in out.shape:
        return []
    r = out.rank
    names = [f"i{d}" for d in range(r)]
    idxs = tuple(Index(n, out.shape[d]) for d, n in enumerate(names) if out.shape[d] > 1)
    coord = [var(n) if out.shape[d] > 1 else Affine() for d, n in enumerate(names)]
    refs = [_scalar_ref("out", s.out, scope[s.out], coord, out, agg="assign")]
    stmts: list[Statement] = []
    taken = {s.out}
    loaded: dict[str, str] = {}
    for tname in T.expr_inputs(s.expr):
        t = prog.tensor(tname)
        off = r - t.rank
        acc = tuple(coord[off + d] if t.shape[d] != 1 else Affine() for d in range(t.rank))
        into = _unique(tname, taken)
        refs.append(_scalar_ref("in", into, scope[tname], acc, t))
        stmts.append(Load(f"${into}", into))
        loaded[tname] = f"${into}"
    counter = [0]
    # an expression is a DAG (fused chains share sub-expressions, threefry's rounds reuse
    # each value several times): each distinct sub-expression becomes one statement
    done: dict[T.Expr, str] = {}

    def fresh() -> str:
        counter[0] += 1
        return f"$t{counter[0]}"

    def go(e: T.Expr) -> str:
        if isinstance(e, T.Input):
            return loaded[e.tensor]
        if e not in done:
            done[e] = emit(e)
        return done[e]

    def emit(e: T.Expr) -> str:
        if isinstance(e, T.Const):
            n = fresh()
            stmts.append(Constant(n, e.value, e.dtype))
            return n
        if isinstance(e, T.IndexValue):
            if not 0 <= e.axis < r:
                raise TileLowerError(f"{s.out}: index({e.axis}) outside rank {r}")
            n = fresh()
            stmts.append(LoadIndex(n, coord[e.axis], e.dtype))
            return n
        if isinstance(e, T.Call):
            if e.op not in INTRINSICS:
                raise TileLowerError(f"{s.out}: unknown intrinsic {e.op!r}")
            if INTRINSICS[e.op].arity != len(e.args):
                raise TileLowerError(
                    f"{s.out}: intrinsic {e.op!r} takes {INTRINSICS[e.op].arity} arguments, got {len(e.args)}"
                )
            if e.op == "cast" and e.dtype is None:
                raise TileLowerError(f"{s.out}: cast needs a dtype")
            args = tuple(go(a) for a in e.args)
            n = fresh()
            stmts.append(Intrinsic(e.op, args, (n,), e.dtype))
            return n
        raise TypeError(f"not a Tile expression: {e!r}")

    res = go(s.expr)
    stmts.append(Store(s.out, res))
    tags = {"kernel", "eltwise"} | {f"eltwise_{op}" for op in _expr_ops(s.expr, set())}
    return [
        Block(
            name=name,
            idxs=idxs,
            refs=tuple(refs),
            stmts=tuple(stmts),
            tags=frozenset(tags),
            comments=(T.format_stmt(s),),
        )
    ]


def lower(prog: T.Program) -> Program:
    """Lower a validated Tile program to a Stripe :class:`Program`."""
    writer_agg: dict[str, str] = {}
    read: set[str] = set()
    for s in prog.stmts:
        writer_agg[s.out] = s.agg if isinstance(s, T.Contraction) else "assign"
        read.update(T.stmt_inputs(s))
        if isinstance(s, T.Contraction) and s.default is not None:
            read.add(s.out)  # aggregated into after the default copy: read-modify-write
            writer_agg[s.out] = "assign"   # the copy assigns, the contraction aggregates inside
    for n in prog.outputs:
        if n in prog.inputs:
            raise TileLowerError(f"output {n!r} is also an input; copy it with an elementwise statement")
    buffers = []
    main_refs = []
    scope: dict[str, str] = {}
    for t in prog.tensors:
        strides = row_major_strides(t.shape)
        zero = (Affine(),) * t.rank
        if t.name in prog.inputs:
            buffers.append(Buffer(t.name, "in", t.dtype, t.shape))
            main_refs.append(Refinement("in", t.name, t.name, zero, t.dtype, t.shape, strides))
        elif t.name in prog.outputs:
            buffers.append(Buffer(t.name, "out", t.dtype, t.shape, writer_agg[t.name]))
            d = "inout" if t.name in read else "out"
            main_refs.append(Refinement(d, t.name, t.name, zero, t.dtype, t.shape, strides, "assign"))
        elif t.name in writer_agg:
            main_refs.append(
                Refinement("none", t.name, None, zero, t.dtype, t.shape, strides, writer_agg[t.name], tags={"tmp"})
            )
        else:
            continue
        scope[t.name] = t.name
    stmts: list[Statement] = []
    for n, s in enumerate(prog.stmts):
        name = f"kernel_{n}"
        if isinstance(s, T.Contraction):
            stmts.extend(lower_contraction(s, prog, name, scope))
        else:
            stmts.extend(lower_elementwise(s, prog, name, scope))
    entry = Block(name="main", refs=tuple(main_refs), stmts=tuple(stmts), tags=frozenset({"program"}))
    return Program(prog.name, tuple(buffers), entry)
