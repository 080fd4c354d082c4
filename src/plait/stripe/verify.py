"""The Stripe verifier: structural rules plus exact parallel-block rules.

:func:`verify` raises :class:`StripeVerifyError` whose message names the offending block
(by its path, e.g. ``main/kernel_0``) and access in plain words.  Checks:

Structure
  * index names unique, ranges >= 1; an index ``affine`` uses only *parent* indexes;
  * constraints, accesses and ``load_index`` use only the block's own indexes - a parent
    index must be passed explicitly (``"uses index 'x', which is not an index of this
    block; pass parent indexes explicitly"``);
  * refinement names unique; ``from_`` names a refinement of the parent (or a program
    buffer for the entry block); directions compatible (``in`` needs a readable parent,
    ``out`` a writable one); ``none`` allocations have no parent and zero access;
  * ``len(access) == rank == parent rank``; strides equal the parent's strides (one
    underlying layout); sizes >= 1; dtype equal to the parent's; ``out``/``inout`` carry
    an aggregation op, equal to the enclosing view's when that one is not ``assign``;
  * scalars are defined once, before use; ``load`` only from readable and ``store`` only
    into writable refinements; intrinsics exist with the right arity.

Parallel rules (exact over the integer polyhedron of the whole nest: every enclosing
block's index box and constraints, with passed-in indexes substituted)
  * every element touched by a ``load``/``store`` (and every element of a special's
    view) lies inside every enclosing view and the underlying buffer or allocation
    (``"access to 'I' (load) is out of bounds: dimension 0 reaches -1 ..."``);
  * an ``assign`` output is written by at most one iteration of its block
    (``"two iterations write the same element of 'O'"``).

Bounds come from Fourier-Motzkin with integer rounding; when that cannot prove a check,
an exact integer search finds a counterexample (reported with index values) or proves it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

from . import polyhedron
from .affine import Affine, var
from .intrinsics import INTRINSICS
from .ir import (
    AGG_OPS,
    Barrier,
    Block,
    Constant,
    Intrinsic,
    Load,
    LoadIndex,
    Program,
    Refinement,
    Special,
    Store,
    np_dtype,
)
from plait.errors import StripeVerifyError


_READABLE = ("in", "inout", "none")
_WRITABLE = ("out", "inout", "none")


@dataclass
class _Frame:
    """A container (buffer, allocation or enclosing view) of a view."""

    what: str
    sizes: tuple[int, ...]
    coord: tuple[Affine, ...]  # the view's element 0 relative to the container


@dataclass
class _RefInfo:
    ref: Refinement
    frames: list[_Frame]
    dtype: str
    strides: tuple[int, ...]
    dir: str
    agg: Optional[str]
    rank: int
    what: str = ""


@dataclass
class _Ctx:
    path: str
    block: Block
    depth: int
    subst: dict[str, Affine]
    cons: list[Affine]
    free: list[str] = field(default_factory=list)  # solver vars of non-passthru indexes


def _fail(path: str, msg: str) -> StripeVerifyError:
    return StripeVerifyError(f"block {path!r}: {msg}")


def _make_ctx(block: Block, parent: Optional[_Ctx], path: str, tag: str = "") -> _Ctx:
    depth = 0 if parent is None else parent.depth + 1
    psub = {} if parent is None else parent.subst
    subst: dict[str, Affine] = {}
    cons = [] if parent is None else list(parent.cons)
    free = []
    for ix in block.idxs:
        v = f"{ix.name}@{depth}{tag}"
        if ix.affine is None:
            subst[ix.name] = var(v)
            free.append(v)
            cons += polyhedron.box(v, 0, ix.range - 1)
        else:
            base = ix.affine.substitute(psub)
            if ix.range > 1:
                cons += polyhedron.box(v, 0, ix.range - 1)
                base = base + var(v)
                free.append(v)
            subst[ix.name] = base
    for c in block.constraints:
        cons.append(c.substitute(subst))
    return _Ctx(path, block, depth, subst, cons, free)


def _check_vars(path: str, expr: Affine, allowed: Sequence[str], what: str) -> None:
    for v in expr.vars:
        if v not in allowed:
            raise _fail(
                path,
                f"{what} '{expr}' uses index {v!r}, which is not an index of this block; "
                f"pass parent indexes explicitly (add an index like '{v} = {v}')",
            )


def _witness_text(ctx: _Ctx, point: dict[str, int]) -> str:
    vals = []
    for ix in ctx.block.idxs:
        e = ctx.subst[ix.name].substitute({v: point.get(v, 0) for v in ctx.subst[ix.name].vars})
        vals.append(f"{ix.name}={e.const}")
    return ", ".join(vals) or "the only iteration"


def _structure(block: Block, path: str, parent_idxs: Sequence[str], scope: dict[str, _RefInfo],
               parent_ctx: Optional[_Ctx]) -> tuple[dict[str, _RefInfo], _Ctx]:
    names = [i.name for i in block.idxs]
    if len(set(names)) != len(names):
        raise _fail(path, "index names are not unique")
    for ix in block.idxs:
        if ix.range < 1:
            raise _fail(path, f"index {ix.name!r} has range {ix.range}; ranges must be >= 1")
        if ix.affine is not None:
            for v in ix.affine.vars:
                if v not in parent_idxs:
                    raise _fail(path, f"index {ix.name!r} is defined from {v!r}, which is not an index of the parent block")
    for c in block.constraints:
        _check_vars(path, c, names, "constraint")
    ctx = _make_ctx(block, parent_ctx, path)
    refs: dict[str, _RefInfo] = {}
    for r in block.refs:
        if r.into in refs:
            raise _fail(path, f"refinement {r.into!r} is declared twice")
        if not (len(r.access) == len(r.shape) == len(r.strides)):
            raise _fail(path, f"refinement {r.into!r}: access, sizes and strides have different ranks")
        if any(s < 1 for s in r.shape):
            raise _fail(path, f"refinement {r.into!r}: sizes must be >= 1, got {r.shape}")
        np_dtype(r.dtype)
        for a in r.access:
            _check_vars(path, a, names, f"access of {r.into!r}")
        if r.dir in ("out", "inout") and r.agg is None:
            raise _fail(path, f"output refinement {r.into!r} needs an aggregation op ({', '.join(AGG_OPS)})")
        acc = tuple(a.substitute(ctx.subst) for a in r.access)
        if r.dir == "none":
            if r.from_ is not None or any(a != Affine() for a in r.access):
                raise _fail(path, f"allocation {r.into!r} ('none') must have no parent and a zero access")
            if any(s < 0 for s in r.strides):
                raise _fail(path, f"allocation {r.into!r} has negative strides")
            refs[r.into] = _RefInfo(r, [], r.dtype, r.strides, "none", r.agg, r.rank, f"allocation {r.into!r}")
            continue
        p = scope.get(r.from_ or "")
        if p is None:
            raise _fail(path, f"refinement {r.into!r} refines {r.from_!r}, which the parent does not provide")
        if r.dir in ("in", "inout") and p.dir not in _READABLE:
            raise _fail(path, f"refinement {r.into!r} reads {r.from_!r}, which the parent may only write ({p.dir})")
        if r.dir in ("out", "inout") and p.dir not in _WRITABLE:
            raise _fail(path, f"refinement {r.into!r} writes {r.from_!r}, which the parent may only read ({p.dir})")
        if r.rank != p.rank:
            raise _fail(path, f"refinement {r.into!r} has rank {r.rank} but {r.from_!r} has rank {p.rank}")
        if r.strides != p.strides:
            raise _fail(
                path,
                f"refinement {r.into!r} has strides {r.strides} but its parent {r.from_!r} has {p.strides}; "
                f"a view keeps the layout of the buffer it refines",
            )
        if r.dtype != p.dtype:
            raise _fail(path, f"refinement {r.into!r} has dtype {r.dtype} but {r.from_!r} has {p.dtype}")
        if r.dir in ("out", "inout") and p.agg not in (None, "assign") and r.agg != p.agg:
            raise _fail(
                path,
                f"refinement {r.into!r} aggregates with {r.agg!r} inside {r.from_!r}, which aggregates with {p.agg!r}",
            )
        frames = [_Frame(f.what, f.sizes, tuple(c + a for c, a in zip(f.coord, acc))) for f in p.frames]
        frames.append(_Frame(p.what, p.ref.shape, acc))
        what = f"view {r.into!r} of block {path!r}"
        refs[r.into] = _RefInfo(r, frames, r.dtype, r.strides, r.dir, r.agg, r.rank, what)
    return refs, ctx


def _check_bounds(ctx: _Ctx, info: _RefInfo, what: str, extent: Optional[tuple[int, ...]] = None) -> None:
    """Every element of ``info``'s view touched by ``what`` lies inside every container."""
    r = info.ref
    for f in info.frames:
        for d, (c, size) in enumerate(zip(f.coord, f.sizes)):
            hi_extra = (extent[d] - 1) if extent else 0
            w = polyhedron.int_max_at_most(ctx.cons, -c, 0)
            if w is not None:
                reach = c.substitute(w).const
                raise _fail(
                    ctx.path,
                    f"access to {r.into!r} ({what}) is out of bounds: dimension {d} reaches {reach} but must "
                    f"stay within [0, {size}) of {f.what} (e.g. at {_witness_text(ctx, w)})",
                )
            w = polyhedron.int_max_at_most(ctx.cons, c + hi_extra, size - 1)
            if w is not None:
                reach = c.substitute(w).const + hi_extra
                raise _fail(
                    ctx.path,
                    f"access to {r.into!r} ({what}) is out of bounds: dimension {d} reaches {reach} but must "
                    f"stay within [0, {size}) of {f.what} (e.g. at {_witness_text(ctx, w)})",
                )


def _write_sites(block: Block, ctx: _Ctx, ref: str, offset: tuple[Affine, ...], tag: str) -> Iterator[tuple[list[Affine], tuple[Affine, ...]]]:
    """(constraints, element coordinate) of every write through ``ref`` in ``block``."""
    for n, s in enumerate(block.stmts):
        if isinstance(s, Store) and s.into == ref:
            yield ctx.cons, offset
        elif isinstance(s, Special) and ref in s.outputs:
            shape = block.ref(ref).shape
            cons = list(ctx.cons)
            coord = []
            for d, (o, size) in enumerate(zip(offset, shape)):
                if size > 1:
                    e = f"e{d}.{n}@{ctx.depth}{tag}"
                    cons += polyhedron.box(e, 0, size - 1)
                    o = o + var(e)
                coord.append(o)
            yield cons, tuple(coord)
        elif isinstance(s, Block):
            cctx = None
            for w in s.refs:
                if w.from_ == ref and w.dir in ("out", "inout"):
                    if cctx is None:
                        cctx = _make_ctx(s, ctx, ctx.path + "/" + s.name, tag)
                    acc = tuple(o + a.substitute(cctx.subst) for o, a in zip(offset, w.access))
                    yield from _write_sites(s, cctx, w.into, acc, tag)


def _check_single_writer(block: Block, parent: Optional[_Ctx], path: str, r: Refinement) -> None:
    c1 = _make_ctx(block, parent, path, "a")
    if not c1.free:
        return
    c2 = _make_ctx(block, parent, path, "b")
    acc1 = tuple(a.substitute(c1.subst) for a in r.access)
    acc2 = tuple(a.substitute(c2.subst) for a in r.access)
    s1 = list(_write_sites(block, c1, r.into, acc1, "a"))
    s2 = list(_write_sites(block, c2, r.into, acc2, "b"))
    for cons1, co1 in s1:
        for cons2, co2 in s2:
            base = cons1 + cons2
            for x, y in zip(co1, co2):
                base += [x - y, y - x]
            for v1, v2 in zip(c1.free, c2.free):
                w = polyhedron.find_point(base + [var(v2) - var(v1) - 1])
                if w is not None:
                    raise _fail(
                        path,
                        f"output {r.into!r} has aggregation 'assign' but two iterations write the same element "
                        f"of {r.into!r} (e.g. {_witness_text(c1, w)} and {_witness_text(c2, w)}); use an "
                        f"aggregating op such as 'add' or make the access one-to-one",
                    )


def _verify_block(block: Block, path: str, parent_idxs: Sequence[str], scope: dict[str, _RefInfo],
                  parent_ctx: Optional[_Ctx]) -> None:
    refs, ctx = _structure(block, path, parent_idxs, scope, parent_ctx)
    names = [i.name for i in block.idxs]
    defined: set[str] = set()

    def use(s: str, what: str) -> None:
        if s not in defined:
            raise _fail(path, f"{what} uses scalar {s!r} before it is defined")

    def define(s: str) -> None:
        if not s.startswith("$"):
            raise _fail(path, f"scalar names start with '$', got {s!r}")
        if s in defined:
            raise _fail(path, f"scalar {s!r} is defined twice")
        defined.add(s)

    def ref(name: str, what: str) -> _RefInfo:
        if name not in refs:
            raise _fail(path, f"{what} names {name!r}, which is not a refinement of this block")
        return refs[name]

    for n, s in enumerate(block.stmts):
        if isinstance(s, Load):
            info = ref(s.from_, "load")
            if info.dir not in _READABLE:
                raise _fail(path, f"load from {s.from_!r}, which is '{info.dir}' (not readable)")
            _check_bounds(ctx, info, "load")
            define(s.into)
        elif isinstance(s, Store):
            info = ref(s.into, "store")
            if info.dir not in _WRITABLE:
                raise _fail(path, f"store into {s.into!r}, which is '{info.dir}' (not writable)")
            use(s.from_, f"store into {s.into!r}")
            _check_bounds(ctx, info, "store")
        elif isinstance(s, Constant):
            np_dtype(s.dtype)
            define(s.into)
        elif isinstance(s, LoadIndex):
            _check_vars(path, s.expr, names, "load_index")
            define(s.into)
        elif isinstance(s, Intrinsic):
            d = INTRINSICS.get(s.name)
            if d is None:
                raise _fail(path, f"unknown intrinsic {s.name!r}")
            if len(s.inputs) != d.arity:
                raise _fail(path, f"intrinsic {s.name!r} takes {d.arity} inputs, got {len(s.inputs)}")
            for i in s.inputs:
                use(i, f"intrinsic {s.name!r}")
            for o in s.outputs:
                define(o)
        elif isinstance(s, Special):
            for i in s.inputs:
                info = ref(i, f"special {s.name!r}")
                if info.dir not in _READABLE:
                    raise _fail(path, f"special {s.name!r} reads {i!r}, which is '{info.dir}'")
                _check_bounds(ctx, info, f"special {s.name} input", info.ref.shape)
            for o in s.outputs:
                info = ref(o, f"special {s.name!r}")
                if info.dir not in _WRITABLE:
                    raise _fail(path, f"special {s.name!r} writes {o!r}, which is '{info.dir}'")
                _check_bounds(ctx, info, f"special {s.name} output", info.ref.shape)
        elif isinstance(s, Block):
            _verify_block(s, f"{path}/{s.name or n}", names, refs, ctx)
        elif isinstance(s, Barrier):
            pass    # placement checked by _check_barriers
        else:
            raise _fail(path, f"statement {n} is not a Stripe statement: {s!r}")
    for r in block.refs:
        if r.dir in ("out", "inout") and r.agg == "assign":
            _check_single_writer(block, parent_ctx, path, r)


def verify(program: Program) -> None:
    """Check every rule of the module docstring; raise :class:`StripeVerifyError`."""
    scope: dict[str, _RefInfo] = {}
    names = set()
    for b in program.buffers:
        if b.name in names:
            raise StripeVerifyError(f"program {program.name!r}: buffer {b.name!r} is declared twice")
        names.add(b.name)
        np_dtype(b.dtype)
        fake = Refinement("none", b.name, None, (Affine(),) * len(b.shape), b.dtype, b.shape, b.strides)
        scope[b.name] = _RefInfo(fake, [], b.dtype, b.strides, "in" if b.kind == "in" else "inout", None,
                                 len(b.shape), f"buffer {b.name!r}")
    _verify_block(program.entry, program.entry.name or "entry", (), scope, None)
    _check_barriers(program.entry, program.entry.name or "entry", False)


def _check_barriers(block: Block, path: str, in_group: bool, in_items: bool = False) -> None:
    """A barrier must be reached by every work-item of a group: it sits in a block
    inside a ``workgroups`` block and outside any ``items_<n>`` block (whose
    iterations are spread over the work-items)."""
    in_items = in_items or any(t.startswith("items_") for t in block.tags)
    in_group = in_group or "workgroups" in block.tags
    for n, s in enumerate(block.stmts):
        if isinstance(s, Barrier) and (in_items or not in_group):
            where = "inside an items_<n> block" if in_items else "outside any workgroups block"
            raise _fail(path, f"statement {n} is a barrier {where}; a barrier must be "
                              f"reached by all work-items of a group")
        if isinstance(s, Block):
            _check_barriers(s, f"{path}/{s.name or n}", in_group, in_items)
