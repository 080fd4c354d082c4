"""Stencil: rewrite multiply-accumulate contractions around a register micro-kernel.

Selects top-level blocks tagged ``contraction agg_add comb_mul`` whose body is
``load a; load b; mul; store`` on floats.  Index roles are read from the accesses,
never from an op name:

* ``n`` (the SIMD index): used by the output and one input ``B``, not by ``A``;
  unit stride in the output preferred;
* ``m`` (register rows): used by the output and ``A``, not by ``B``;
* ``ks`` (the reduction): every index used by ``A`` and ``B`` but not the output; they
  are flattened into one panel dimension ``kk`` (for a convolution the window and the
  input channels: an implicit GEMM, the im2col happening while packing);
* every other index is an outer loop (output indexes outside the tile, reduction
  indexes such as a convolution's window inside).

Structure produced (the block keeps its name and tags, plus ``stencil``), GotoBLAS's
loop order when B does not depend on the other output indexes (see :func:`_hoisted`)::

    [n/nc]                                      output column tiles
      [ks/kc, other reduction idxs]             K panels, serial (#stencil_reduce)
        none Bp[nc/NR, kc, NR]; pack B          once per (column tile, K panel)
        [other output idxs, m/mc]               row tiles: disjoint, parallel-safe
          none Ap[mc/MR, kc, MR]; pack A        (#pack; zero padded)
          [n panels, m panels]                  (#stencil_tile)
            none ACC[MR, NR]                    the register block
            [kk:kc, r:MR, c:NR] ACC += Ap * Bp  (#mac_regblock: rendered as vector code)
            [r:MR, c:NR]        C += ACC        (#stencil_store: edge constraints only here)

(otherwise B is packed inside the row tiles, next to A).  ``MR = rows``,
``NR = vectors * vector_bytes / itemsize`` (chosen among the target's register-block
shapes by :func:`choose_shape`); the cache tile ``(mc, nc)`` comes from
:func:`autotile.search` with sizes multiple of ``(MR, NR)`` under the target's L2 cap
and at least one row or column tile per core; ``kc`` fills L1 with a B micro-panel.
Constraints of the original block (halos, uneven tiles) are enforced when packing, so
padded panel entries are zero and the micro-kernel has no checks; a constraint
coupling ``n`` with ``m`` cannot be packed and leaves the block unchanged.  (Zero
padding multiplies 0 by the other operand, so an ``inf`` weight facing a padded input
gives NaN, as an explicitly zero-padded convolution does.)
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from plait.stripe.affine import Affine, var
from plait.stripe.ir import (Block, Index, Intrinsic, Load, Program, Refinement, Store,
                             np_dtype, row_major_strides)
from plait.stripe.passes import autotile
from plait.stripe.passes._util import flat_coeff, map_kernels, prune_unit_idxs, ref_vars
from plait.stripe.tiling import apply_tile


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Roles:
    """The parts a float MAC block ``out += a * b`` plays in a GEMM (module docstring):
    its three refinements, the register-row index ``m`` (in ``out`` and ``a``), the
    SIMD index ``n`` (in ``out`` and ``b``) and the reduction indexes ``ks`` (in ``a``
    and ``b``, not ``out``)."""

    out: Refinement
    a: Refinement
    b: Refinement
    m: str
    n: str
    ks: tuple[str, ...]


def _roles(b: Block) -> Optional[Roles]:
    """The block's :class:`Roles`, or None when it is not a float MAC.

    ``ks`` are all the reduction indexes shared by A and B (a convolution's window and
    input channels), flattened into one panel dimension (an implicit GEMM), the one
    contiguous in A last."""
    if any(ix.affine is not None for ix in b.idxs):
        return None
    outs = [r for r in b.refs if r.dir in ("out", "inout")]
    ins = [r for r in b.refs if r.dir == "in"]
    if len(outs) != 1 or len(ins) != 2 or any(r.dir == "none" for r in b.refs):
        return None
    c = outs[0]
    if c.agg != "add" or any(r.dtype not in ("f32", "f64") or r.dtype != c.dtype for r in b.refs):
        return None
    st = b.stmts
    if (len(st) != 4 or not all(isinstance(s, Load) for s in st[:2])
            or not isinstance(st[2], Intrinsic) or st[2].name != "mul" or st[2].dtype not in (None, c.dtype)
            or not isinstance(st[3], Store) or st[3].into != c.into or st[3].from_ != st[2].outputs[0]
            or set(st[2].inputs) != {st[0].into, st[1].into} or st[0].into == st[1].into):
        return None
    best = None
    for a, bb in ((ins[0], ins[1]), (ins[1], ins[0])):
        vc, va, vb = ref_vars(c), ref_vars(a), ref_vars(bb)
        ns = [n for n in b.idx_names if n in vc and n in vb and n not in va]
        ms = [n for n in b.idx_names if n in vc and n in va and n not in vb]
        ks = [n for n in b.idx_names if n in va and n in vb and n not in vc]
        if not (ns and ms and ks):
            continue
        n = min(ns, key=lambda x: (abs(flat_coeff(c, x)) != 1, -b.idx(x).range))
        m = min(ms, key=lambda x: (abs(flat_coeff(c, x)), -b.idx(x).range))
        k = tuple(sorted(ks, key=lambda x: -abs(flat_coeff(a, x))))  # contiguous in A last
        score = (abs(flat_coeff(c, n)) != 1, -b.idx(n).range)
        if best is None or score < best[0]:
            best = (score, Roles(c, a, bb, m, n, k))
    return best[1] if best else None


def _panel_block(name: str, src: Refinement, dst: Refinement, extent: int, ks: dict[str, int],
                 w: int, big: str, cons: list[Affine], passthru: list[Index]) -> Block:
    """Copy ``src`` into packed panels ``dst[panel, kk, e]`` where the role index is
    ``w*panel + e`` and ``kk`` flattens the reduction indexes ``ks`` (row-major)."""
    panels = _ceil(extent, w)
    kn = {k: f"kk{i}" for i, k in enumerate(ks)}
    sub = {big: w * var("pnl") + var("e"), **{k: var(v) for k, v in kn.items()}}
    flat, step = Affine(), 1
    for k in reversed(list(ks)):
        flat = flat + step * var(kn[k])
        step *= ks[k]
    cons = list(cons) + ([extent - 1 - var(big)] if panels * w > extent else [])
    used = set()
    for c in cons:
        used |= set(c.vars)
    pts = [Index(ix.name, 1, var(ix.name)) for ix in passthru if ix.name in used]
    return Block(
        name=name,
        idxs=(Index("pnl", panels), *[Index(kn[k], r) for k, r in ks.items()], Index("e", w), *pts),
        constraints=tuple(c.substitute(sub) for c in cons),
        refs=(
            replace(dst, dir="out", from_=dst.into, access=(var("pnl"), flat, var("e")),
                    shape=(1, 1, 1), agg="assign", tags=frozenset()),
            replace(src, from_=src.into, access=tuple(a.substitute(sub) for a in src.access)),
        ),
        stmts=(Load("$v", src.into), Store(dst.into, "$v")),
        tags=frozenset({"pack"}),
    )


def _micro(inner: Block, roles: Roles, mr: int, nr: int, vector_bytes: int,
           red_pass: set[str], out_pass: set[str] = frozenset()) -> Optional[Block]:
    """Replace the tile's innermost MAC block ``inner`` by packs + micro-kernel.

    ``red_pass`` names the passed-in indexes that come from reduction indexes: a
    constraint on ``m`` or ``n`` involving them only selects products (enforced by the
    packing), never output elements, so the store does not repeat it.  ``out_pass`` names
    the passed-in output indexes: a reduction-only constraint involving them is enforced
    in A's packing alone, so B's panel stays independent of them (and can be hoisted).
    """
    c, m, n, kset = roles.out, roles.m, roles.n, roles.ks
    rng = {ix.name: ix.range for ix in inner.idxs if ix.affine is None}
    ks = {k: rng[k] for k in kset if k in rng}
    if not set(rng) <= {m, n, *kset} or m not in rng or n not in rng or not ks:
        return None
    mc, nc = rng[m], rng[n]
    kc = 1
    for r in ks.values():
        kc *= r
    if any(cf < 0 for r in inner.refs for x in r.access for v, cf in x.terms if v in rng):
        return None
    # the tile's views at the loop origin; ``rel`` holds the accesses relative to them
    origin = apply_tile(inner, dict(rng))
    rel = origin.stmts[0]
    passthru = [ix for ix in rel.idxs if ix.affine is not None]
    kvars = set(ks)
    a_cons, b_cons, c_cons, tile_cons = [], [], [], []
    for con in rel.constraints:
        vs = set(con.vars) & set(rng)
        if not vs:
            tile_cons.append(con)
        elif vs <= kvars:
            a_cons.append(con)
            if not set(con.vars) & out_pass:
                b_cons.append(con)
        elif m in vs and vs <= kvars | {m}:
            a_cons.append(con)
            if vs == {m} and not set(con.vars) & red_pass:
                c_cons.append(con)
        elif n in vs and vs <= kvars | {n}:
            b_cons.append(con)
            if vs == {n} and not set(con.vars) & red_pass:
                c_cons.append(con)
        else:
            return None
    P, Q = _ceil(mc, mr), _ceil(nc, nr)
    dt = c.dtype
    ref_a = [r for r in rel.refs if r.into != c.into and m in ref_vars(r)][0]
    ref_b = [r for r in rel.refs if r.into not in (c.into, ref_a.into)][0]
    ref_c = rel.ref(c.into)
    ap = Refinement("none", "Ap", None, (Affine(),) * 3, dt, (P, kc, mr),
                    row_major_strides((P, kc, mr)))
    bp = Refinement("none", "Bp", None, (Affine(),) * 3, dt, (Q, kc, nr),
                    row_major_strides((Q, kc, nr)))
    acc = Refinement("none", "ACC", None, (Affine(),) * 2, dt, (mr, nr), (nr, 1), agg="add")
    pack_a = _panel_block("pack_a", ref_a, ap, mc, ks, mr, m, a_cons, passthru)
    pack_b = _panel_block("pack_b", ref_b, bp, nc, ks, nr, n, b_cons, passthru)
    regblock = Block(
        name="micro",
        idxs=(Index("kk", kc), Index("r", mr), Index("c", nr)),
        refs=(
            replace(acc, dir="out", from_="ACC", access=(var("r"), var("c")), shape=(1, 1)),
            replace(ap, dir="in", from_="Ap", access=(Affine(), var("kk"), var("r")), shape=(1, 1, 1)),
            replace(bp, dir="in", from_="Bp", access=(Affine(), var("kk"), var("c")), shape=(1, 1, 1)),
        ),
        stmts=(Load("$a", "Ap"), Load("$b", "Bp"), Intrinsic("mul", ("$a", "$b"), ("$p",)),
               Store("ACC", "$p")),
        tags=frozenset({"mac_regblock", f"simd_{vector_bytes}"}),
    )
    zk = {k: Affine() for k in ks}
    sub = {m: mr * var("p") + var("r"), n: nr * var("q") + var("c"), **zk}
    extra = []
    if P * mr > mc:
        extra.append(mc - 1 - mr * var("p") - var("r"))
    if Q * nr > nc:
        extra.append(nc - 1 - nr * var("q") - var("c"))
    cons = [con.substitute(sub) for con in c_cons] + extra
    used = set()
    for con in cons:
        used |= set(con.vars)
    store = Block(
        name="store",
        idxs=(Index("r", mr), Index("c", nr),
              *[Index(x, 1, var(x)) for x in ("p", "q") if x in used],
              *[Index(ix.name, 1, var(ix.name)) for ix in passthru if ix.name in used]),
        constraints=tuple(cons),
        refs=(
            replace(acc, dir="in", from_="ACC", access=(var("r"), var("c")), shape=(1, 1), agg=None),
            replace(ref_c, from_=c.into,
                    access=tuple(x.substitute({m: var("r"), n: var("c"), **zk}) for x in ref_c.access)),
        ),
        stmts=(Load("$acc", "ACC"), Store(c.into, "$acc")),
        tags=frozenset({"stencil_store"}),
    )
    tile_sub = {m: mr * var("p"), n: nr * var("q"), **zk}
    c_tile_shape = tuple(
        size + sum(abs(cf) * ((mr if v == m else nr if v == n else 1) - 1) for v, cf in x.terms if v in (m, n))
        for x, size in zip(ref_c.access, ref_c.shape))
    used_t = {v for con in cons for v in con.vars} - {"p", "q", "r", "c"}
    tile = Block(
        name="tile",
        idxs=(Index("q", Q), Index("p", P),
              *[Index(ix.name, 1, var(ix.name)) for ix in passthru if ix.name in used_t]),
        refs=(
            acc,
            replace(ap, dir="in", from_="Ap", access=(var("p"), Affine(), Affine()), shape=(1, kc, mr)),
            replace(bp, dir="in", from_="Bp", access=(var("q"), Affine(), Affine()), shape=(1, kc, nr)),
            replace(ref_c, from_=c.into, access=tuple(x.substitute(tile_sub) for x in ref_c.access),
                    shape=c_tile_shape),
        ),
        stmts=(regblock, store),
        tags=frozenset({"stencil_tile"}),
    )
    return prune_unit_idxs(replace(origin, constraints=tuple(tile_cons), refs=origin.refs + (ap, bp),
                                   stmts=(pack_a, pack_b, tile), tags=inner.tags | {"stencil_panel"}))


def _full(b: Block) -> dict[str, int]:
    return {ix.name: ix.range for ix in b.idxs if ix.affine is None}


def _hoisted(b: Block, roles: Roles, out_others: list, red_others: list, mc: int, nc: int,
             kt: dict, mr: int, nr: int, vector_bytes: int) -> Optional[Block]:
    """GotoBLAS loop order, when B does not depend on the other output indexes::

        [n/nc] { [ks/kc, red others] { pack B once; [other outputs, m/mc] { pack A; tiles } } }

    The B panel is packed once per (n tile, K panel) and shared by every row tile (and by
    every output row of a convolution); the row-tile level is parallel-safe.
    """
    m, n, ks = roles.m, roles.n, roles.ks
    l1 = apply_tile(b, _full(b) | {n: nc}, inner_tags=("stencil_reduce",), outer_tags=("stencil",))
    l2p = l1.stmts[0]
    l2 = apply_tile(l2p, _full(l2p) | kt | {x: 1 for x in red_others}, inner_tags=("stencil_rows",))
    l3p = l2.stmts[0]
    red_pass = {ix.name for ix in l3p.idxs
                if ix.affine is not None and set(ix.affine.vars) & {*ks, *red_others}}
    out_pass = {ix.name for ix in l3p.idxs if ix.affine is not None} - red_pass
    l3x = prune_unit_idxs(apply_tile(l3p, _full(l3p), inner_tags=("stencil_rows",)))
    rel = l3x.stmts[0]
    l3 = prune_unit_idxs(apply_tile(rel, _full(rel) | {x: 1 for x in out_others} | {m: mc},
                                    inner_tags=("stencil_panel",)))
    inner = prune_unit_idxs(l3.stmts[0])
    out_pass |= {ix.name for ix in inner.idxs
                 if ix.affine is not None and set(ix.affine.vars) & {*out_others, m}}
    micro = _micro(inner, roles, mr, nr, vector_bytes, red_pass, out_pass)
    if micro is None:
        return None
    pack_a, pack_b, tile = micro.stmts
    bp = micro.ref("Bp")
    b3 = l3.ref(roles.b.into)
    if (any(not x.is_const or x.const for x in b3.access + micro.ref(roles.b.into).access)
            or not {ix.name for ix in pack_b.idxs if ix.affine is not None} <= set(l3x.idx_names)):
        return None
    bp_in = replace(bp, dir="in", from_="Bp")
    micro = replace(micro, refs=tuple(bp_in if r.into == "Bp" else r for r in micro.refs),
                    stmts=(pack_a, tile))
    l3 = prune_unit_idxs(replace(l3, refs=l3.refs + (bp_in,), stmts=(micro,)))
    l3x = replace(l3x, refs=l3x.refs + (bp,), stmts=(pack_b, l3))
    l2 = prune_unit_idxs(replace(l2, stmts=(l3x,)))
    return prune_unit_idxs(replace(l1, stmts=(l2,)))


def choose_shape(m: int, n: int, shapes, vl: int) -> tuple[int, int]:
    """The register block ``(rows, vectors)`` with the least padded work per useful FMA.

    Cost = padded work * (1 + loads per FMA), loads per FMA being
    ``(rows + vectors) / (rows * vectors)`` (one broadcast per row, one load per vector).
    """
    def cost(s):
        mr, nv = s
        nr = nv * vl
        return (_ceil(m, mr) * mr * _ceil(n, nr) * nr) * (1 + (mr + nv) / (mr * nv))
    return min(shapes, key=cost)


def stencil_pass(program: Program, target, shapes=((6, 4), (8, 3)),
                 max_tile_bytes: Optional[int] = None, kc: Optional[int] = None,
                 min_work: int = 1 << 12) -> Program:
    """Rewrite each float MAC contraction into packed panels around a register block.

    ``shapes`` are the allowed register blocks ``(rows, vectors)`` (the target's register
    file decides which fit); ``kc`` caps the reduction panel (default: a B micro-panel
    fills the L1 cache); ``max_tile_bytes`` caps the cache tile (default half of L2).
    """
    cap = max_tile_bytes if max_tile_bytes is not None else target.l2_bytes // 2

    def fn(b: Block):
        roles = _roles(b)
        if roles is None or b.iterations < min_work:
            return b
        c, m, n, ks = roles.out, roles.m, roles.n, roles.ks
        item = np_dtype(c.dtype).itemsize
        vl = max(1, target.vector_bytes // item)
        rng = {ix.name: ix.range for ix in b.idxs}
        mr, nv = choose_shape(rng[m], rng[n], shapes, vl)
        nr = nv * vl
        kc_max = kc or max(16, target.l1_bytes // (nr * item) // 16 * 16)
        # reduction panel: the contiguous reduction indexes whole, as far as kc allows
        # (balanced: 256 under a cap of 192 is two panels of 128, not 192 + 64)
        kt, kc_tot = {}, 1
        for x in reversed(ks):
            room = max(1, kc_max // kc_tot)
            kt[x] = _ceil(rng[x], _ceil(rng[x], room))
            kc_tot *= kt[x]
        k0 = ks[-1]
        core = Block(idxs=(Index(m, rng[m]), Index(n, rng[n]), Index(k0, kc_tot)),
                     refs=tuple(replace(r, access=tuple(
                         Affine(tuple((v, cf) for v, cf in e.terms if v in (m, n, k0)), 0) for e in r.access))
                         for r in (c, roles.a, roles.b)))
        t = autotile.search(core, target.line_bytes, max_total_bytes=cap,
                            multiple_of={m: mr, n: nr}, fixed={k0: kc_tot}, min_count=target.cores)
        mc, nc = min(t[m], rng[m]), min(t[n], rng[n])
        others = [x for x in b.idx_names if x not in (m, n, *ks)]
        out_others = [x for x in others if x in ref_vars(c)]
        red_others = [x for x in others if x not in ref_vars(c)]
        if not (ref_vars(roles.b) & set(out_others)):
            r = _hoisted(b, roles, out_others, red_others, mc, nc, kt, mr, nr, target.vector_bytes)
            if r is not None:
                return r
        # level 1: output tiles; level 2: reduction panels; level 3: one panel
        t1 = {x: 1 for x in out_others} | {m: mc, n: nc} | {x: rng[x] for x in (*ks, *red_others)}
        outer = apply_tile(b, t1, inner_tags=("stencil_reduce",), outer_tags=("stencil",))
        order = out_others + [n, m]
        outer = replace(outer, idxs=tuple(sorted(outer.idxs, key=lambda ix: order.index(ix.name)
                                                 if ix.name in order else len(order))))
        red = outer.stmts[0]
        t2 = {x: 1 for x in red_others} | kt | {m: red.idx(m).range, n: red.idx(n).range}
        red_t = apply_tile(red, t2, inner_tags=("stencil_panel",))
        inner = red_t.stmts[0]
        red_pass = {ix.name for ix in inner.idxs
                    if ix.affine is not None and set(ix.affine.vars) & {*ks, *red_others}}
        inner = prune_unit_idxs(inner)
        micro = _micro(inner, roles, mr, nr, target.vector_bytes, red_pass)
        if micro is None:
            return b
        red_t = prune_unit_idxs(replace(red_t, stmts=(micro,)))
        return prune_unit_idxs(replace(outer, stmts=(red_t,)))

    return map_kernels(program, fn, ("kernel", "contraction", "agg_add", "comb_mul"))
