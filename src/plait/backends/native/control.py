"""``native`` rules of the control-flow primitives: C loops and branches over drivers.

A rule ``rule(cprog, eqn, name) -> bool`` renders ``int64_t name(void **bufs)`` (the
equation's inputs, then its outputs) when every sub-graph has a native driver, and
returns False otherwise (the equation then runs on the host). Like every generated
function it returns 0 or the first allocation-failure status (its own carry buffers
or a sub-graph's), after freeing what it holds; ``cprog.scratch[name]`` is the peak
it allocates.
"""
from __future__ import annotations

from plait.backends.native.cprogram import CProgram, nbytes, storage_type
from plait.codegen.c_stripe import oom_status
from plait.lax.control_flow import cond_p, scan_p, while_p


def _carry_buffers(sizes: list[int], init: list[str], same: frozenset) -> list[str]:
    """Two scratch buffers per loop carry (A, B), checked, or only A for the carries the
    body updates in place (``same``: ``inplace.carry_updates``), and the current carry C
    starting at its initial value in place: no copy of it (a loop carrying a model's
    parameters read them straight from the caller's buffers)."""
    lines = ["  int64_t rc = 0;"]
    for i, sz in enumerate(sizes):
        b = "NULL" if i in same else f"malloc({max(sz, 1)})"
        lines.append(f"  void *A{i} = malloc({max(sz, 1)}), *B{i} = {b};")
    if sizes:
        cond = " || ".join(f"!A{i}" if i in same else f"!A{i} || !B{i}"
                           for i in range(len(sizes)))
        lines.append(f"  if ({cond}) {{ rc = {oom_status(_carry_bytes(sizes, same), 0)}LL; "
                     f"goto done; }}")
    for i, src in enumerate(init):
        lines.append(f"  void *C{i} = {src};")
    return lines


def _finish(sizes: list[int], dst: list[str], copy: bool = True) -> list[str]:
    """The current carries copied to ``dst`` (unless the last iteration wrote them
    there), then the scratch buffers freed."""
    copies = [f"  memcpy({d}, C{i}, {sz});" for i, (sz, d) in enumerate(zip(sizes, dst))]
    return ((copies if copy else []) + ["done:"]
            + [f"  free(A{i}); free(B{i});" for i in range(len(sizes))] + ["  return rc;"])


def _carry_bytes(sizes: list[int], same: frozenset) -> int:
    return sum((1 if i in same else 2) * max(sz, 1) for i, sz in enumerate(sizes))


def _next(n: int, same: frozenset, last: str | None = None, dst: list[str] | None = None) -> str:
    """``D_i``, where this iteration writes carry i: the scratch buffer C_i is not, or A_i
    for a carry updated in place (``same``: the first iteration reads the caller's
    buffer, the others read A_i), or ``dst[i]`` when ``last`` (a C condition) holds."""
    def one(i: int) -> str:
        other = f"A{i}" if i in same else f"(C{i} == A{i} ? B{i} : A{i})"
        return f"void *D{i} = {last} ? {dst[i]} : {other};" if last else f"void *D{i} = {other};"
    return " ".join(one(i) for i in range(n))


def _advance(n: int) -> str:
    return " ".join(f"C{i} = D{i};" for i in range(n))


def _while(cp: CProgram, eqn, name: str) -> bool:
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    nk = len(eqn.outputs)
    g_cond = cp.graph_function(p["cond_graph"])
    g_body = cp.graph_function(p["body_graph"], tuple((nbc + i, i) for i in range(nk)))
    if g_cond is None or g_body is None:
        return False
    same = cp.in_place[g_body]
    sizes = [nbytes(v.aval) for v in eqn.outputs]
    init = [f"bufs[{ncc + nbc + i}]" for i in range(nk)]
    C = [f"C{i}" for i in range(nk)]
    D = [f"D{i}" for i in range(nk)]
    cc = [f"bufs[{i}]" for i in range(ncc)]
    bc = [f"bufs[{ncc + i}]" for i in range(nbc)]
    lines = [f"int64_t {name}(void **bufs) {{", "  _Bool pred = 0;"]
    lines += _carry_buffers(sizes, init, same)
    lines += ["  for (;;) {",
              f"    {{ void *i[] = {{{', '.join(cc + C) or 'NULL'}}}; void *o[] = {{&pred}}; "
              f"rc = {g_cond}(i, o); }}",
              "    if (rc) goto done;",
              "    if (!pred) break;",
              f"    {_next(nk, same)}",
              f"    {{ void *i[] = {{{', '.join(bc + C) or 'NULL'}}}; "
              f"void *o[] = {{{', '.join(D) or 'NULL'}}}; rc = {g_body}(i, o); }}",
              "    if (rc) goto done;",
              f"    {_advance(nk)}", "  }"]
    lines += _finish(sizes, [f"bufs[{ncc + nbc + nk + i}]" for i in range(nk)]) + ["}"]
    cp.parts.append("\n".join(lines))
    cp.scratch[name] = _carry_bytes(sizes, same) + max(cp.scratch.get(g_cond, 0),
                                                 cp.scratch.get(g_body, 0))
    return True


def _scan(cp: CProgram, eqn, name: str) -> bool:
    """A scan whose last iteration writes the carries into the outputs (and whose first
    reads them from the inputs): no copy of the carries unless it runs no iteration."""
    p = eqn.params
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    g = cp.graph_function(p["graph"], tuple((nc + i, i) for i in range(nk)))
    if g is None:
        return False
    same = cp.in_place[g]
    nx = len(eqn.inputs) - nc - nk
    ny = len(eqn.outputs) - nk
    sizes = [nbytes(v.aval) for v in eqn.outputs[:nk]]
    xs = [(f"bufs[{nc + nk + j}]", nbytes(eqn.inputs[nc + nk + j].aval) // max(length, 1))
          for j in range(nx)]
    out0 = len(eqn.inputs)
    ys = [(f"bufs[{out0 + nk + j}]", nbytes(eqn.outputs[nk + j].aval) // max(length, 1))
          for j in range(ny)]
    consts = [f"bufs[{i}]" for i in range(nc)]
    C = [f"C{i}" for i in range(nk)]
    D = [f"D{i}" for i in range(nk)]
    final = [f"bufs[{out0 + i}]" for i in range(nk)]
    idx = f"({length} - 1 - k)" if p["reverse"] else "k"
    lines = [f"int64_t {name}(void **bufs) {{"]
    lines += _carry_buffers(sizes, [f"bufs[{nc + i}]" for i in range(nk)], same)
    ins = consts + C + [f"(char *){b} + (int64_t){idx} * {sz}" for b, sz in xs]
    outs = D + [f"(char *){b} + (int64_t){idx} * {sz}" for b, sz in ys]
    lines += [f"  for (int64_t k = 0; k < {length}; ++k) {{",
              f"    {_next(nk, same, f'k == {length - 1}', final)}",
              f"    {{ void *i[] = {{{', '.join(ins) or 'NULL'}}}; "
              f"void *o[] = {{{', '.join(outs) or 'NULL'}}}; rc = {g}(i, o); }}",
              "    if (rc) goto done;",
              f"    {_advance(nk)}", "  }"]
    lines += _finish(sizes, final, copy=length == 0) + ["}"]
    cp.parts.append("\n".join(lines))
    cp.scratch[name] = _carry_bytes(sizes, same) + cp.scratch.get(g, 0)
    return True


def _cond(cp: CProgram, eqn, name: str) -> bool:
    branches = [cp.graph_function(b) for b in eqn.params["branches"]]
    if any(b is None for b in branches):
        return False
    nops = len(eqn.inputs) - 1
    ctype = storage_type(eqn.inputs[0].aval)
    lines = [f"int64_t {name}(void **bufs) {{",
             f"  int64_t i = (int64_t)*({ctype} *)bufs[0];",
             "  if (i < 0) i = 0;",
             f"  if (i > {len(branches) - 1}) i = {len(branches) - 1};",
             "  switch (i) {"]
    for k, b in enumerate(branches):
        lines.append(f"  case {k}: return {b}(bufs + 1, bufs + {1 + nops});")
    lines += ["  }", "  return 0;", "}"]
    cp.parts.append("\n".join(lines))
    cp.scratch[name] = max(cp.scratch.get(b, 0) for b in branches)
    return True


while_p.def_rule("native", _while)
scan_p.def_rule("native", _scan)
cond_p.def_rule("native", _cond)
