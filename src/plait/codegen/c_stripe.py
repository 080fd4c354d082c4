"""The C-family renderer base: Stripe blocks and statements as C-family code.

Everything C and its dialects (OpenCL C) share lives here: type names, literals,
casts, scalar intrinsics, index arithmetic, loops with constraint bounds, views as
pointer offsets, scalar statements. ``plait.codegen.c_cpu`` (C with OpenMP) and
``plait.codegen.opencl_c`` (OpenCL C kernels) subclass :class:`CFamilyRenderer` with
the function around the blocks and the target-specific hooks. Semantics follow
``plait.stripe.ir``: a block is a loop nest over its indexes, skipping iterations
that fail a constraint; a refinement is a pointer offset into its parent view; a
``none`` refinement is a fresh allocation filled with the identity of its aggregation
op (unless tagged ``overwritten``: its first user assigns every element); a store
combines with the refinement's aggregation op. Integer division, remainder and
shifts are guarded so no input can trap. The allocation-failure status convention
(:func:`oom_status`) of generated functions is also defined here.
"""
from __future__ import annotations

import re

from plait.codegen.c_expr import (C_TYPES, COMPUTE_TYPES, FLOAT_DTYPES, arith, cast, literal,
                                  intrinsic as c_intrinsic)
from plait.errors import CompileError
from plait.stripe import ir
from plait.tile.affine import Affine


# an allocation-failure status is bytes * OOM_WHERE + where (1-based function number,
# 0 for a driver's intermediate buffer); 0 means success
OOM_WHERE = 4096


def oom_status(nbytes: int, where: int) -> int:
    """The status a generated function returns when ``nbytes`` cannot be allocated in
    function number ``where`` (0: a driver's intermediate buffer)."""
    return max(int(nbytes), 1) * OOM_WHERE + min(max(int(where), 0), OOM_WHERE - 1)


def decode_status(status: int) -> tuple[int, int]:
    """``(bytes, where)`` of a nonzero status returned by generated code."""
    return status // OOM_WHERE, status % OOM_WHERE



def _cname(name: str, depth: int, prefix: str) -> str:
    return f"{prefix}{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{depth}"


def _identity(agg: str | None, dtype: str) -> str:
    return literal(ir.agg_identity(agg, dtype).item(), dtype)


class _Scope:
    """Names visible in one block: views (pointer, dtype), indexes, scalars (name, dtype)."""

    def __init__(self, parent: "_Scope | None" = None):
        self.views: dict[str, tuple[str, str, tuple]] = dict(parent.views) if parent else {}
        # address-space qualifier of a view's pointer ("" on a CPU), by view name
        self.quals: dict[str, str] = dict(parent.quals) if parent else {}
        # refinements refine the PARENT's views, even when they reuse a parent's name
        self.outer: dict[str, tuple[str, str, tuple]] = parent.views if parent else {}
        self.idxs: dict[str, str] = {}
        self.scalars: dict[str, tuple[str, str]] = {}
        # views reduced over the innermost loop: name -> (accumulator, NaN flag or None)
        self.reductions: dict[str, tuple[str, str | None]] = {}
        # the allocation each view points into: a program buffer's name, or the C
        # name of a temporary (two views of different roots never overlap)
        self.roots: dict[str, str] = dict(parent.roots) if parent else {}
        self.outer_roots: dict[str, str] = parent.roots if parent else {}


def loop_indexes(blk: ir.Block) -> list:
    """The indexes of ``blk`` its C renders as loops, in order; the others (range 1 with
    an offset: passed in by the parent) are constants of the iteration."""
    return [i for i in blk.idxs if not (i.range == 1 and i.affine is not None)]


class CFamilyRenderer:
    """Renders Stripe blocks and statements as C-family code (C, OpenCL C). Subclasses
    give the function around them and the target's hooks: :meth:`special_block`,
    :meth:`open_loop`, :meth:`close_loop`, :meth:`alloc_temp`, :meth:`body`; ``cpu``
    picks the descriptors' CPU-only spellings (plait's own vector math)."""

    cpu = False

    def __init__(self, program: ir.Program, fn_name: str, shared: frozenset = frozenset()):
        self.p = program
        self.fn = fn_name
        self.shared = shared           # buffers that may share memory: no restrict
        self.lines: list[str] = []
        self.depth = 0
        self.types = C_TYPES           # storage type of each dtype

    def restrict(self, root: str) -> str:
        """``restrict`` for pointers into ``root``, unless it may share memory with another
        buffer (an output written over an input, ``alias.pointwise_update``)."""
        return "" if root in self.shared else "restrict "

    def emit(self, s: str) -> None:
        self.lines.append("  " * self.depth + s)

    # --- expressions ---------------------------------------------------------------
    def affine(self, a: Affine, scope: _Scope) -> str:
        parts = []
        for n, c in a.terms:
            if n not in scope.idxs:
                raise CompileError(f"Stripe index {n!r} is not visible in its block", locate=False)
            v = scope.idxs[n]
            parts.append(v if c == 1 else f"{c}*{v}" if c >= 0 else f"({c})*{v}")
        if a.const or not parts:
            parts.append(f"({a.const})")
        return "(" + " + ".join(parts) + ")"

    def intrinsic(self, st: ir.Intrinsic, scope: _Scope) -> tuple[str, str]:
        args = [scope.scalars[i] for i in st.inputs]
        return c_intrinsic(st.name, [a[0] for a in args], [a[1] for a in args], st.dtype,
                           self.cpu)


    # --- blocks -------------------------------------------------------------------------
    def block(self, blk: ir.Block, parent: _Scope) -> None:
        if self.special_block(blk, parent):
            return
        scope = _Scope(parent)
        d = self.depth
        if blk.comments:
            self.emit(f"/* {blk.name}: {' '.join(blk.comments)[:200].replace('*/', '')} */")
        self.emit("{")
        self.depth += 1
        # passed-in indexes are constants of the iteration
        loops = loop_indexes(blk)
        for idx in blk.idxs:
            if idx not in loops:
                cv = _cname(idx.name, self.depth, "i_")
                self.emit(f"const int64_t {cv} = {self.affine(idx.affine, parent)};")
                scope.idxs[idx.name] = cv
        bounds, checks = _split_constraints(blk, [i.name for i in loops])
        guarded = bool(checks.get(0))
        if guarded:
            self.emit(f"if ({self._conds(checks[0], scope)}) {{")
        for k, idx in enumerate(loops):
            cv = _cname(idx.name, self.depth, "i_")
            rng = self._loop_range(idx, bounds[idx.name], parent, scope)
            self.open_loop(blk, loops, k, cv, rng, scope)
            scope.idxs[idx.name] = cv
            self.depth += 1
            if checks.get(k + 1):
                self.emit(f"if (!({self._conds(checks[k + 1], scope)})) continue;")
        frees, fills = self.refinements(blk, scope)
        if frees:      # a block whose temporaries are missing does nothing
            self.emit(f"if ({' && '.join(frees)}) {{")
            self.depth += 1
        for line in fills:
            self.emit(line)
        self.body(blk, scope)
        if frees:
            self.depth -= 1
            self.emit("}")
        for cv in frees:
            self.emit(f"free({cv});")
        for k in range(len(loops)):
            self.depth -= 1
            self.emit("}")
            self.close_loop(k, scope)
        if guarded:
            self.emit("}")
        self.depth -= 1
        self.emit("}")
        assert self.depth == d

    def _conds(self, cs: list, scope: _Scope) -> str:
        return " && ".join(f"{self.affine(c, scope)} >= 0" for c in cs)

    def _loop_range(self, idx: ir.Index, bounds: list, parent: _Scope,
                    scope: _Scope) -> tuple[str, str]:
        """C expressions ``(lo, hi)`` of a loop: the index's range narrowed by the
        constraints that involve only it (and outer indexes)."""
        base = self.affine(idx.affine, parent) if idx.affine is not None else "0"
        lo, hi = base, f"{base} + {idx.range}" if base != "0" else str(idx.range)
        for c in bounds:
            coef = c.coeff(idx.name)
            rest = self.affine(c - Affine(((idx.name, coef),)), scope)
            if coef > 0:
                lo = f"plait_imax({lo}, {'-' + rest if coef == 1 else f'plait_ceildiv(-{rest}, {coef})'})"
            else:
                lim = rest if coef == -1 else f"plait_floordiv({rest}, {-coef})"
                hi = f"plait_imin({hi}, {lim} + 1)"
        return lo, hi

    def refinements(self, blk: ir.Block, scope: _Scope) -> tuple[list, list]:
        """Declare the block's views; ``(temporaries to free, fill statements)``."""
        frees, fills = [], []
        for r in blk.refs:
            if r.into in scope.reductions:
                continue
            cv = _cname(r.into, self.depth, "v_")
            ctype = self.types[r.dtype]
            if r.from_ is None:
                size = temp_elements(r)
                qual = self.alloc_temp(r, cv, size, frees)
                scope.roots[r.into] = "#" + cv    # no buffer name starts with #
                if "overwritten" not in r.tags:
                    fills.append(f"for (int64_t z = 0; z < {size}; ++z) {cv}[z] = "
                                 f"{_identity(r.agg, r.dtype)};")
            else:
                if r.from_ not in scope.outer:
                    raise CompileError(f"refinement {r.into!r} refines unknown view {r.from_!r}",
                                       locate=False)
                pv = scope.outer[r.from_][0]
                qual = scope.quals.get(r.from_, "")
                off = " + ".join(f"{self.affine(a, scope)}*{st}"
                                 for a, st in zip(r.access, r.strides)) or "0"
                scope.roots[r.into] = self.root_of(r.from_, scope)
                self.emit(f"{qual}{ctype} *{self.restrict(scope.roots[r.into])}{cv} = {pv} + {off};")
            scope.views[r.into] = (cv, r.dtype, r.agg)
            scope.quals[r.into] = qual
        return frees, fills

    @staticmethod
    def root_of(view: str, scope: _Scope) -> str:
        """The allocation the parent's ``view`` points into (refinements refine the
        parent's views: a parent root, never one this block's refinements rebind)."""
        return scope.outer_roots.get(view, view)

    # --- target hooks ---------------------------------------------------------------------
    def special_block(self, blk: ir.Block, parent: _Scope) -> bool:
        """Render ``blk`` in a target-specific way; False to render it as loops."""
        return False

    def open_loop(self, blk: ir.Block, loops: list, k: int, cv: str, rng: tuple,
                  scope: _Scope) -> None:
        """Open loop ``k`` of ``blk`` (over ``loops[k]``) as ``cv`` in ``[rng[0], rng[1])``."""
        self.emit(f"for (int64_t {cv} = {rng[0]}; {cv} < {rng[1]}; ++{cv}) {{")

    def close_loop(self, k: int, scope: _Scope) -> None:
        """After closing a loop (``k`` = 0 is the innermost): store register reductions."""
        if k == 0 and scope.reductions:
            self.reduction_epilogue(scope)

    def reduction_pragma(self, clauses: list) -> None:
        """Annotate the reduction loop (``clauses``: OpenMP-style reduction clauses)."""

    def reduction_prologue(self, blk: ir.Block, v: str, scope: _Scope) -> None:
        """Before the innermost loop ``v``: accumulate views that ``v`` does not address in
        registers (any order is legal: the block's iterations are unordered and the
        aggregation is commutative); :meth:`reduction_pragma` may vectorize the loop."""
        if any(isinstance(st, (ir.Block, ir.Special)) for st in blk.stmts):
            return
        loaded = {st.from_ for st in blk.stmts if isinstance(st, ir.Load)}
        stored = [st.into for st in blk.stmts if isinstance(st, ir.Store)]
        clauses = []
        for r in blk.refs:
            if (r.dir not in ("out", "inout") or r.agg not in ("add", "max", "min", "mul")
                    or r.from_ is None or r.into in loaded or stored.count(r.into) != 1
                    or any(a.coeff(v) for a in r.access) or r.dtype in ("bool", "f16")):
                continue
            if any(n not in scope.idxs for a in r.access for n in a.vars):
                continue
            cv = _cname(r.into, self.depth, "v_")
            qual = scope.quals.get(r.from_, "")
            pv = scope.outer[r.from_][0]
            off = " + ".join(f"{self.affine(a, scope)}*{st}" for a, st in zip(r.access, r.strides)) or "0"
            root = self.root_of(r.from_, scope)
            self.emit(f"{qual}{self.types[r.dtype]} *{self.restrict(root)}{cv} = {pv} + {off};")
            scope.views[r.into] = (cv, r.dtype, r.agg)
            scope.quals[r.into] = qual
            acc = _cname(r.into, self.depth, "racc_")
            # a float sum's register accumulator starts at -0.0, the identity of IEEE
            # addition, so the memory value it is added to decides the sign of zero
            init = literal(-0.0, r.dtype) if r.agg == "add" and r.dtype in FLOAT_DTYPES else \
                _identity(r.agg, r.dtype)
            self.emit(f"{COMPUTE_TYPES[r.dtype]} {acc} = {init};")
            nan = None
            op = {"add": "+", "mul": "*", "max": "max", "min": "min"}[r.agg]
            if r.agg == "add" and r.dtype in ("f32", "f64"):
                op = "plait_addf" if r.dtype == "f32" else "plait_addd"
            clauses.append(f"reduction({op}:{acc})")
            if r.agg in ("max", "min") and r.dtype in FLOAT_DTYPES:
                nan = _cname(r.into, self.depth, "rnan_")
                self.emit(f"int {nan} = 0;")
                clauses.append(f"reduction(|:{nan})")
            scope.reductions[r.into] = (acc, nan)
        if clauses:
            self.reduction_pragma(clauses)

    def reduction_epilogue(self, scope: _Scope) -> None:
        """After the innermost loop: combine each register accumulator into memory once."""
        for name, (acc, nan) in scope.reductions.items():
            cv, dt, agg = scope.views[name]
            val = f"({nan} ? NAN : {acc})" if nan else acc
            if agg in ("add", "mul"):
                op = "+" if agg == "add" else "*"
                self.emit(f"{cv}[0] = {cv}[0] {op} {val};")
            else:
                self.emit(f"{cv}[0] = {arith(agg, [cv + '[0]', val], dt)};")

    def alloc_temp(self, r: ir.Refinement, cv: str, size: int, frees: list) -> str:
        """Declare the fresh allocation ``cv`` of ``size`` elements for ``r`` (append its
        name to ``frees`` if it must be freed); its address-space qualifier."""
        self.emit(f"{self.types[r.dtype]} {cv}[{size}];")
        return ""

    def body(self, blk: ir.Block, scope: _Scope) -> None:
        """The block's statements, in order."""
        for st in blk.stmts:
            self.stmt(st, scope)

    def stmt(self, st, scope: _Scope) -> None:
        if isinstance(st, ir.Block):
            self.block(st, scope)
            return
        if isinstance(st, ir.Load):
            cv, dt, _ = scope.views[st.from_]
            name = _cname(st.into, self.depth, "s_")
            self.emit(f"{COMPUTE_TYPES[dt]} {name} = {cv}[0];")
            scope.scalars[st.into] = (name, dt)
        elif isinstance(st, ir.Store):
            cv, dt, agg = scope.views[st.into]
            val, sdt = scope.scalars[st.from_]
            if sdt != dt:
                val = cast(val, dt, sdt)
            if st.into in scope.reductions:
                acc, nan = scope.reductions[st.into]
                if agg in ("add", "mul"):
                    self.emit(f"{acc} = {acc} {'+' if agg == 'add' else '*'} {val};")
                else:
                    cmp = ">" if agg == "max" else "<"
                    self.emit(f"{{ const {COMPUTE_TYPES[dt]} rv = {val}; {acc} = rv {cmp} {acc} ? rv : {acc};"
                              + (f" {nan} |= (rv != rv); }}" if nan else " }"))
                return
            if agg in (None, "assign"):
                self.emit(f"{cv}[0] = {val};")
            elif agg == "add":
                self.emit(f"{cv}[0] = {'(' + cv + '[0] | ' + val + ')' if dt == 'bool' else cv + '[0] + ' + val};")
            elif agg == "mul":
                self.emit(f"{cv}[0] = {'(' + cv + '[0] & ' + val + ')' if dt == 'bool' else cv + '[0] * ' + val};")
            elif agg in ("max", "min"):
                self.emit(f"{cv}[0] = {arith(agg, [cv + '[0]', val], dt)};")
            else:
                raise CompileError(f"unknown aggregation {agg!r}", locate=False)
        elif isinstance(st, ir.Constant):
            name = _cname(st.into, self.depth, "s_")
            self.emit(f"const {COMPUTE_TYPES[st.dtype]} {name} = {literal(st.value, st.dtype)};")
            scope.scalars[st.into] = (name, st.dtype)
        elif isinstance(st, ir.LoadIndex):
            name = _cname(st.into, self.depth, "s_")
            self.emit(f"const {COMPUTE_TYPES[st.dtype]} {name} = "
                      f"({COMPUTE_TYPES[st.dtype]}){self.affine(st.expr, scope)};")
            scope.scalars[st.into] = (name, st.dtype)
        elif isinstance(st, ir.Intrinsic):
            expr, dt = self.intrinsic(st, scope)
            if dt == "f16":   # float16 math runs in float; round each op's result as NumPy does
                expr = f"((float)(_Float16)({expr}))"
            (out,) = st.outputs
            name = _cname(out, self.depth, "s_")
            self.emit(f"const {COMPUTE_TYPES[dt]} {name} = {expr};")
            scope.scalars[out] = (name, dt)
        else:
            raise CompileError(f"Stripe statement {type(st).__name__} ({getattr(st, 'name', '')}) "
                               f"has no C rendering", locate=False)


def _split_constraints(blk: ir.Block, loop_names: list) -> tuple[dict, dict]:
    """Constraints on one loop index become its bounds; the others are checked after
    the innermost loop they mention (position 0: before any loop)."""
    bounds: dict[str, list] = {n: [] for n in loop_names}
    checks: dict[int, list] = {}
    for c in blk.constraints:
        lv = [n for n in c.vars if n in bounds]
        if len(lv) == 1:
            bounds[lv[0]].append(c)
        else:
            pos = max((loop_names.index(n) + 1 for n in lv), default=0)
            checks.setdefault(pos, []).append(c)
    return bounds, checks


def temp_elements(r: ir.Refinement) -> int:
    """Elements of the fresh allocation a ``none`` refinement makes."""
    return 1 + sum((s - 1) * st for s, st in zip(r.shape, r.strides) if s > 0)
