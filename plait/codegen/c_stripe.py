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

import math
import re

import numpy as np

from plait.errors import CompileError
from plait.stripe import ir
from plait.tile.affine import Affine

C_TYPES = {"bool": "_Bool", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t",
           "i64": "int64_t", "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t",
           "u64": "uint64_t", "f16": "_Float16", "f32": "float", "f64": "double"}
# glibc's vector math library (libmvec, linked through -lm) has SIMD variants of these
# functions; declaring them lets gcc vectorize loops that call them at plain -O3 (no
# -ffast-math). glibc documents their accuracy (a few ulp) and they keep NaN/inf semantics.
_VEC_F = ("expf", "logf", "sinf", "cosf", "powf", "tanhf", "expm1f", "log1pf", "log2f",
          "log10f", "exp2f", "exp10f", "atanf", "asinf", "acosf", "sinhf", "coshf", "tanf",
          "atanhf", "asinhf", "acoshf", "cbrtf", "atan2f")
_VEC_D = tuple(n[:-1] for n in _VEC_F)
VECMATH = (
    "#if defined(__x86_64__) && defined(__GLIBC__) && "
    "(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)) && !defined(PLAIT_NO_VECMATH)\n"
    + "".join(f"__attribute__((simd(\"notinbranch\"))) extern float {n}(float{', float' if n in ('powf', 'atan2f') else ''});\n"
              for n in _VEC_F)
    + "".join(f"__attribute__((simd(\"notinbranch\"))) extern double {n}(double{', double' if n in ('pow', 'atan2') else ''});\n"
              for n in _VEC_D)
    + "#endif\n")

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

# scalars of these dtypes are computed in a wider type
COMPUTE_TYPES = dict(C_TYPES, f16="float")
_FLOAT = ("f16", "f32", "f64")
_UNSIGNED = ("u8", "u16", "u32", "u64", "bool")
_CMP = {"cmp_eq": "==", "cmp_ne": "!=", "cmp_lt": "<", "cmp_le": "<=", "cmp_gt": ">",
        "cmp_ge": ">="}
_BOOL_RESULT = set(_CMP) | {"is_finite", "is_nan"}

# float math: name -> (float function, double function)
_FMATH = {n: (n + "f", n) for n in (
    "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "tanh", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "floor", "ceil",
    "cbrt", "atan2", "pow", "nextafter", "fabs", "rint", "fmod", "copysign", "erf", "erfc",
    "lgamma")}
_FMATH["digamma"] = ("plait_digammaf", "plait_digamma")
_FMATH.update({"asin": ("asinf", "asin"), "acos": ("acosf", "acos"), "atan": ("atanf", "atan")})


def _cname(name: str, depth: int, prefix: str) -> str:
    return f"{prefix}{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{depth}"


def _lit(value, dtype: str) -> str:
    if dtype == "bool":
        return "1" if value else "0"
    if dtype in _FLOAT:
        v = float(value)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "-INFINITY"
        s = repr(v)
        return s + "f" if dtype != "f64" else s
    v = int(value)
    if dtype == "i64" and v == -(1 << 63):
        return "INT64_MIN"
    if dtype == "u64":
        return f"{v}ULL"
    if dtype == "i64":
        return f"{v}LL"
    return str(v)


def _identity(agg: str | None, dtype: str) -> str:
    return _lit(ir.agg_identity(agg, dtype).item(), dtype)


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


class CFamilyRenderer:
    """Renders Stripe blocks and statements as C-family code (C, OpenCL C). Subclasses
    give the function around them and the target's hooks: :meth:`special_block`,
    :meth:`open_loop`, :meth:`close_loop`, :meth:`alloc_temp`, :meth:`body`."""

    def __init__(self, program: ir.Program, fn_name: str):
        self.p = program
        self.fn = fn_name
        self.lines: list[str] = []
        self.depth = 0
        self.types = C_TYPES           # storage type of each dtype

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
        vals = [a[0] for a in args]
        dts = [a[1] for a in args]
        name = st.name
        dt = dts[-1] if name in ("select", "cond") else (dts[0] if dts else "f32")
        if name in ("select", "cond"):
            expr = f"({vals[0]} ? {vals[1]} : {vals[2]})"
        elif name in _CMP:
            expr = f"({vals[0]} {_CMP[name]} {vals[1]})"
            dt = "bool"
        else:
            expr = self._arith(name, vals, dt)
            if name in _BOOL_RESULT:
                dt = "bool"
        if st.dtype is not None and st.dtype != dt:
            expr = self._cast(expr, dt, st.dtype)
            dt = st.dtype
        return expr, dt

    def _cast(self, expr: str, src: str, dst: str) -> str:
        if dst == "bool":
            return f"({expr} != 0)"
        return f"(({COMPUTE_TYPES[dst]})({expr}))"

    def _fm(self, fn: str, dt: str, *xs) -> str:
        f, d = _FMATH[fn]
        return f"{d if dt == 'f64' else f}({', '.join(xs)})"

    def _arith(self, name: str, v: list[str], dt: str) -> str:
        fl = dt in _FLOAT
        ct = COMPUTE_TYPES[dt]
        a = v[0] if v else None
        b = v[1] if len(v) > 1 else None
        simple = {"add": "+", "sub": "-", "mul": "*"}
        if name in simple:
            if dt == "bool":
                return f"({a} {'|' if name == 'add' else '&' if name == 'mul' else '^'} {b})"
            return f"(({ct})({a} {simple[name]} {b}))"
        if name == "div":
            if fl:
                return f"({a} / {b})"
            if dt in _UNSIGNED:
                return f"(({ct})({b} == 0 ? 0 : {a} / {b}))"
            return f"(({ct})({b} == 0 ? 0 : {b} == -1 ? ({ct})(0 - ({'u' if False else ''}{a})) : {a} / {b}))"
        if name == "rem":
            if fl:
                return self._fm("fmod", dt, a, b)
            if dt in _UNSIGNED:
                return f"(({ct})({b} == 0 ? 0 : {a} % {b}))"
            return f"(({ct})({b} == 0 || {b} == -1 ? 0 : {a} % {b}))"
        if name in ("max", "min"):
            if fl:
                return f"plait_{name}{'f' if dt != 'f64' else ''}({a}, {b})"
            op = ">=" if name == "max" else "<="
            return f"({a} {op} {b} ? {a} : {b})"
        if name == "neg":
            return f"(({ct})(-{a}))" if dt != "bool" else a
        if name == "abs":
            return self._fm("fabs", dt, a) if fl else f"(({ct})({a} < 0 ? -{a} : {a}))"
        if name == "sign":
            if fl:
                return f"({a} > 0 ? ({ct})1 : {a} < 0 ? ({ct})-1 : {a} == 0 ? ({ct})0 : {a})"
            return f"(({ct})(({a} > 0) - ({a} < 0)))"
        if name in ("ident", "assign", "cast"):
            return a
        if name == "not":
            return f"(!{a})" if dt == "bool" else f"(({ct})~{a})"
        if name in ("and", "or", "xor"):
            op = {"and": "&", "or": "|", "xor": "^"}[name]
            return f"(({ct})({a} {op} {b}))"
        if name in ("shl", "shr"):
            bits = 8 * np.dtype(ir.np_dtype(dt)).itemsize
            if name == "shl":
                return f"(({ct})(({b}) < 0 || ({b}) >= {bits} ? 0 : (({ct})((uint64_t){a} << {b}))))"
            fill = f"({a} < 0 ? -1 : 0)" if dt not in _UNSIGNED else "0"
            return f"(({ct})(({b}) < 0 || ({b}) >= {bits} ? {fill} : {a} >> {b}))"
        if name == "square":
            return f"(({ct})({a} * {a}))"
        if name == "reciprocal":
            return f"(({ct})1 / {a})"
        if name == "rsqrt":
            return f"(({ct})1 / {self._fm('sqrt', dt, a)})"
        if name == "logistic":
            return f"(({ct})1 / (({ct})1 + {self._fm('exp', dt, '-' + a)}))"
        if name == "round":
            return self._fm("rint", dt, a)
        if name == "is_finite":
            return f"isfinite({a})"
        if name == "is_nan":
            return f"isnan({a})"
        if name == "pow" and not fl:
            raise CompileError("integer pow is not lowered to C", locate=False)
        if name in _FMATH and fl:
            return self._fm(name, dt, *v)
        raise CompileError(f"intrinsic {name!r} on {dt} has no C rendering", locate=False)


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
        # passed-in indexes (range 1 with an offset) are constants of the iteration
        loops = []
        for idx in blk.idxs:
            if idx.range == 1 and idx.affine is not None:
                cv = _cname(idx.name, self.depth, "i_")
                self.emit(f"const int64_t {cv} = {self.affine(idx.affine, parent)};")
                scope.idxs[idx.name] = cv
            else:
                loops.append(idx)
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
                self.emit(f"{qual}{ctype} *restrict {cv} = {pv} + {off};")
            scope.views[r.into] = (cv, r.dtype, r.agg)
            scope.quals[r.into] = qual
        return frees, fills

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
            self.emit(f"{qual}{self.types[r.dtype]} *restrict {cv} = {pv} + {off};")
            scope.views[r.into] = (cv, r.dtype, r.agg)
            scope.quals[r.into] = qual
            acc = _cname(r.into, self.depth, "racc_")
            # a float sum's register accumulator starts at -0.0, the identity of IEEE
            # addition, so the memory value it is added to decides the sign of zero
            init = _lit(-0.0, r.dtype) if r.agg == "add" and r.dtype in _FLOAT else \
                _identity(r.agg, r.dtype)
            self.emit(f"{COMPUTE_TYPES[r.dtype]} {acc} = {init};")
            nan = None
            op = {"add": "+", "mul": "*", "max": "max", "min": "min"}[r.agg]
            if r.agg == "add" and r.dtype in ("f32", "f64"):
                op = "plait_addf" if r.dtype == "f32" else "plait_addd"
            clauses.append(f"reduction({op}:{acc})")
            if r.agg in ("max", "min") and r.dtype in _FLOAT:
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
                self.emit(f"{cv}[0] = {self._arith(agg, [cv + '[0]', val], dt)};")

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
                val = self._cast(val, sdt, dt)
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
                self.emit(f"{cv}[0] = {self._arith(agg, [cv + '[0]', val], dt)};")
            else:
                raise CompileError(f"unknown aggregation {agg!r}", locate=False)
        elif isinstance(st, ir.Constant):
            name = _cname(st.into, self.depth, "s_")
            self.emit(f"const {COMPUTE_TYPES[st.dtype]} {name} = {_lit(st.value, st.dtype)};")
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
