"""Derivatives and batching of user Tile programs, derived in Tile (as PlaidML does).

* :func:`jvp_program`: elementwise bodies differentiate symbolically; a tangent
  statement is linear in the tangent tensors, ``dT[o] = sum_v sum_t c_t(v) * dX_t[a_t(v)]``
  with coefficients ``c_t`` over primal values. A ``max``/``min`` contraction routes the
  tangent to the arg-extremum: ``c_t`` is multiplied by ``(body(v) == T[o]) / N[o]``,
  ``N`` counting the tied points (ties share equally, plait's rule for ``max``);
  ``prod`` uses ``T[o] / body(v)`` (nonzero factors).
* :func:`transpose_program`: each linear term transposes to a sum-contraction writing
  the cotangent at the access's index expressions: ``ctX[a_t(v)] += c_t(v) * ctT[o(v)]``
  under the same constraints (a strided or dilated access becomes a strided scatter).
* :func:`batch_program`: a batch index is prepended to every batched tensor.
"""
from __future__ import annotations

from plait.errors import TileSyntaxError
from plait.tile.affine import Affine, Constraint
from plait.tile.lang import Lit, Op, Ref, Stmt, UserProgram, expr_refs

ONE, ZERO = Lit(1.0), Lit(0.0)


# ---- symbolic helpers -------------------------------------------------------------------

def mul(a, b):
    if a == ZERO or b == ZERO:
        return ZERO
    if a == ONE:
        return b
    if b == ONE:
        return a
    return Op("mul", (a, b))


def div(a, b):
    return a if b == ONE else (ZERO if a == ZERO else Op("div", (a, b)))


def neg(a):
    return ZERO if a == ZERO else (a.args[0] if isinstance(a, Op) and a.op == "neg" else Op("neg", (a,)))


def add_all(xs):
    xs = [x for x in xs if x != ZERO]
    if not xs:
        return ZERO
    acc = xs[0]
    for x in xs[1:]:
        acc = Op("add", (acc, x))
    return acc


def lin_terms(e, wrt: set) -> list:
    """``e``'s derivative as ``[(coef, ref)]``: ``de = sum coef * d(ref)`` over the refs
    to tensors in ``wrt`` (coefficients are expressions of ``e``'s operands)."""
    if isinstance(e, Ref):
        return [(ONE, e)] if e.tensor in wrt else []
    if isinstance(e, Lit):
        return []
    a = e.args[0]
    b = e.args[1] if len(e.args) > 1 else None
    da = lin_terms(a, wrt)
    db = lin_terms(b, wrt) if b is not None else []

    def scale(ts, c):
        return [(mul(c, k), r) for k, r in ts if mul(c, k) != ZERO]
    op = e.op
    if op == "add":
        return da + db
    if op == "sub":
        return da + scale(db, Lit(-1.0))
    if op == "neg":
        return scale(da, Lit(-1.0))
    if op == "mul":
        return scale(da, b) + scale(db, a)
    if op == "div":
        return scale(da, div(ONE, b)) + scale(db, neg(div(a, Op("mul", (b, b)))))
    if op == "exp":
        return scale(da, e)
    if op == "log":
        return scale(da, div(ONE, a))
    if op == "tanh":
        return scale(da, Op("sub", (ONE, Op("mul", (e, e)))))
    if op == "sqrt":
        return scale(da, div(Lit(0.5), e))
    if op == "logistic":
        return scale(da, Op("mul", (e, Op("sub", (ONE, e)))))
    if op == "pow":
        c = b.value
        return scale(da, mul(Lit(c), Op("pow", (a, Lit(c - 1.0))) if c != 1.0 else ONE))
    if op in ("max", "min"):
        first = Op("gt", (a, b) if op == "max" else (b, a))
        tie = Op("mul", (Lit(0.5), Op("eq", (a, b))))
        wa = Op("add", (first, tie))
        return scale(da, wa) + scale(db, Op("sub", (ONE, wa)))
    if op in ("gt", "eq"):
        return []
    raise TileSyntaxError(f"no derivative for Tile operation {op!r}")


def _fresh(base: str, taken: set) -> str:
    n, k = base, 0
    while n in taken:
        k += 1
        n = f"{base}{k}"
    taken.add(n)
    return n


# ---- forward mode -----------------------------------------------------------------------

def jvp_program(p: UserProgram, nonzero: tuple):
    """``(primal, tangent, out_nonzero)``.

    ``primal`` computes every statement's tensor (and the tie counts of max/min
    statements): its outputs are the residuals. ``tangent`` takes
    ``[*p's inputs, *residuals, *tangents of nonzero inputs]`` and returns the tangents
    of ``p``'s outputs marked in ``out_nonzero``."""
    taken = set(p.tensor_names())
    stmts = list(p.stmts)
    count = {}
    for s in p.stmts:
        if s.agg in ("max", "min"):
            n = _fresh(f"n_{s.out}", taken)
            count[s.out] = n
            eq = Op("eq", (s.body, Ref(s.out, s.out_idxs)))
            stmts.append(Stmt(n, s.out_idxs, s.shape, "sum", eq, s.where, s.source))
    residuals = tuple(s.out for s in stmts)
    primal = UserProgram(p.name, p.dtype, p.inputs, tuple(stmts), residuals, len(residuals))
    tan = {}
    tan_inputs = []
    for (n, shp), nz in zip(p.inputs, nonzero):
        if nz:
            tan[n] = _fresh(f"d{n}", taken)
            tan_inputs.append((tan[n], shp))
    tstmts = []
    for s in p.stmts:
        terms = lin_terms(s.body, set(tan))
        if not terms:
            continue
        if s.agg in ("max", "min"):
            sel = div(Op("eq", (s.body, Ref(s.out, s.out_idxs))), Ref(count[s.out], s.out_idxs))
            terms = [(mul(sel, c), r) for c, r in terms]
        elif s.agg == "prod":
            terms = [(mul(div(Ref(s.out, s.out_idxs), s.body), c), r) for c, r in terms]
        tan[s.out] = _fresh(f"d{s.out}", taken)
        body = add_all([mul(c, Ref(tan[r.tensor], r.idxs)) for c, r in terms])
        tstmts.append(Stmt(tan[s.out], s.out_idxs, s.shape,
                           "assign" if s.agg == "assign" else "sum", body, s.where, s.source))
    out_nz = tuple(o in tan for o in p.outputs)
    ins = p.inputs + tuple((s.out, s.shape) for s in stmts) + tuple(tan_inputs)
    outs = tuple(tan[o] for o in p.outputs if o in tan)
    tangent = UserProgram(f"{p.name}_jvp", p.dtype, ins, tuple(tstmts), outs, len(outs)) \
        if outs else None
    return primal, tangent, out_nz


# ---- reverse mode -----------------------------------------------------------------------

def transpose_program(p: UserProgram, linear: tuple, ct_present: tuple):
    """``(program, has_ct)``: the transpose of ``p`` in its ``linear`` inputs.

    The program takes ``[*non-linear inputs, *cotangents of outputs in ct_present]`` and
    returns the cotangent of every linear input marked in ``has_ct``; statements not
    reading linear values are computed first (they are residual computations)."""
    taken = set(p.tensor_names())
    lin = {n for (n, _), l in zip(p.inputs, linear) if l}
    fwd, lin_stmts = [], []
    for s in p.stmts:
        if any(r.tensor in lin for r in expr_refs(s.body)):
            if s.agg not in ("sum", "assign"):
                raise TileSyntaxError(f"{s.out}: a {s.agg!r} contraction is not linear")
            lin.add(s.out)
            lin_stmts.append(s)
        else:
            fwd.append(s)
    contrib: dict = {}
    ct_inputs = []
    for o, c in zip(p.outputs, ct_present):
        if c and o in lin:
            n = _fresh(f"ct_{o}", taken)
            ct_inputs.append((n, p.shape(o)))
            contrib.setdefault(o, []).append(n)
    out_stmts = list(fwd)

    def total(t: str):
        """The tensor holding ``t``'s whole cotangent (summing contributions), or None."""
        parts = contrib.get(t)
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        shape = p.shape(t)
        vs = tuple(Affine(((f"a{d}", 1),)) for d in range(len(shape)))
        n = _fresh(f"ct_{t}", taken)
        body = add_all([Ref(q, vs) for q in parts])
        where = tuple(Constraint(v, m) for v, m in zip(vs, shape))
        out_stmts.append(Stmt(n, vs, shape, "assign", body, where, "(cotangent sum)"))
        contrib[t] = [n]
        return n

    for s in reversed(lin_stmts):
        ct = total(s.out)
        if ct is None:
            continue
        for coef, r in lin_terms(s.body, lin):
            if any(q.tensor in lin for q in expr_refs(coef)):
                raise TileSyntaxError(f"{s.out}: the statement is not linear in {r.tensor!r}")
            n = _fresh(f"ct_{r.tensor}", taken)
            body = mul(coef, Ref(ct, s.out_idxs))
            out_stmts.append(Stmt(n, r.idxs, p.shape(r.tensor), "sum", body, s.where, s.source))
            contrib.setdefault(r.tensor, []).append(n)
    outs, has_ct = [], []
    for (n, _), l in zip(p.inputs, linear):
        if l:
            t = total(n)
            has_ct.append(t is not None)
            if t is not None:
                outs.append(t)
    ins = tuple(i for i, l in zip(p.inputs, linear) if not l) + tuple(ct_inputs)
    prog = UserProgram(f"{p.name}_T", p.dtype, ins, tuple(out_stmts), tuple(outs), len(outs)) \
        if outs else None
    return prog, tuple(has_ct)


# ---- vmap -------------------------------------------------------------------------------

def batch_program(p: UserProgram, batched: tuple, size: int):
    """``(program, out_batched)``: inputs marked ``batched`` carry a leading batch axis."""
    names = set()
    for s in p.stmts:
        names.update(s.vars)
    b = _fresh("b", names)
    bv = Affine(((b, 1),))
    bat = {n for (n, _), x in zip(p.inputs, batched) if x}
    inputs = tuple((n, ((size,) + tuple(s)) if n in bat else s) for n, s in p.inputs)

    def rw(e):
        if isinstance(e, Ref):
            return Ref(e.tensor, (bv,) + e.idxs) if e.tensor in bat else e
        if isinstance(e, Op):
            return Op(e.op, tuple(rw(a) for a in e.args))
        return e
    stmts = []
    for s in p.stmts:
        if any(r.tensor in bat for r in expr_refs(s.body)):
            bat.add(s.out)
            s = Stmt(s.out, (bv,) + s.out_idxs, (size,) + tuple(s.shape), s.agg, rw(s.body),
                     s.where + (Constraint(bv, size),), s.source)
        stmts.append(s)
    out_b = tuple(o in bat for o in p.outputs)
    return UserProgram(p.name, p.dtype, inputs, tuple(stmts), p.outputs, p.out_tree), out_b
