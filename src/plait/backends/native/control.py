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


def _carry_buffers(sizes: list[int], init: list[str]) -> list[str]:
    """Two buffers per loop carry (current and next), checked, the first filled."""
    lines = ["  int64_t rc = 0;"]
    for i, sz in enumerate(sizes):
        lines.append(f"  void *A{i} = malloc({max(sz, 1)}), *B{i} = malloc({max(sz, 1)});")
    if sizes:
        total = sum(2 * max(sz, 1) for sz in sizes)
        cond = " || ".join(f"!A{i} || !B{i}" for i in range(len(sizes)))
        lines.append(f"  if ({cond}) {{ rc = {oom_status(total, 0)}LL; goto done; }}")
    for i, (sz, src) in enumerate(zip(sizes, init)):
        lines.append(f"  memcpy(A{i}, {src}, {sz});")
    return lines


def _finish(sizes: list[int], dst: list[str]) -> list[str]:
    return ([f"  memcpy({d}, A{i}, {sz});" for i, (sz, d) in enumerate(zip(sizes, dst))]
            + ["done:"] + [f"  free(A{i}); free(B{i});" for i in range(len(sizes))]
            + ["  return rc;"])


def _carry_bytes(sizes: list[int]) -> int:
    return sum(2 * max(sz, 1) for sz in sizes)


def _swap(n: int) -> str:
    return " ".join(f"{{ void *s = A{i}; A{i} = B{i}; B{i} = s; }}" for i in range(n))


def _while(cp: CProgram, eqn, name: str) -> bool:
    p = eqn.params
    g_cond, g_body = cp.graph_function(p["cond_graph"]), cp.graph_function(p["body_graph"])
    if g_cond is None or g_body is None:
        return False
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    nk = len(eqn.outputs)
    sizes = [nbytes(v.aval) for v in eqn.outputs]
    init = [f"bufs[{ncc + nbc + i}]" for i in range(nk)]
    A = [f"A{i}" for i in range(nk)]
    B = [f"B{i}" for i in range(nk)]
    cc = [f"bufs[{i}]" for i in range(ncc)]
    bc = [f"bufs[{ncc + i}]" for i in range(nbc)]
    lines = [f"int64_t {name}(void **bufs) {{", "  _Bool pred = 0;"] + _carry_buffers(sizes, init)
    lines += ["  for (;;) {",
              f"    {{ void *i[] = {{{', '.join(cc + A) or 'NULL'}}}; void *o[] = {{&pred}}; "
              f"rc = {g_cond}(i, o); }}",
              "    if (rc) goto done;",
              "    if (!pred) break;",
              f"    {{ void *i[] = {{{', '.join(bc + A) or 'NULL'}}}; "
              f"void *o[] = {{{', '.join(B) or 'NULL'}}}; rc = {g_body}(i, o); }}",
              "    if (rc) goto done;",
              f"    {_swap(nk)}", "  }"]
    lines += _finish(sizes, [f"bufs[{ncc + nbc + nk + i}]" for i in range(nk)]) + ["}"]
    cp.parts.append("\n".join(lines))
    cp.scratch[name] = _carry_bytes(sizes) + max(cp.scratch.get(g_cond, 0),
                                                 cp.scratch.get(g_body, 0))
    return True


def _scan(cp: CProgram, eqn, name: str) -> bool:
    p = eqn.params
    g = cp.graph_function(p["graph"])
    if g is None:
        return False
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    nx = len(eqn.inputs) - nc - nk
    ny = len(eqn.outputs) - nk
    sizes = [nbytes(v.aval) for v in eqn.outputs[:nk]]
    xs = [(f"bufs[{nc + nk + j}]", nbytes(eqn.inputs[nc + nk + j].aval) // max(length, 1))
          for j in range(nx)]
    out0 = len(eqn.inputs)
    ys = [(f"bufs[{out0 + nk + j}]", nbytes(eqn.outputs[nk + j].aval) // max(length, 1))
          for j in range(ny)]
    consts = [f"bufs[{i}]" for i in range(nc)]
    A = [f"A{i}" for i in range(nk)]
    B = [f"B{i}" for i in range(nk)]
    idx = f"({length} - 1 - k)" if p["reverse"] else "k"
    lines = [f"int64_t {name}(void **bufs) {{"]
    lines += _carry_buffers(sizes, [f"bufs[{nc + i}]" for i in range(nk)])
    ins = consts + A + [f"(char *){b} + (int64_t){idx} * {sz}" for b, sz in xs]
    outs = B + [f"(char *){b} + (int64_t){idx} * {sz}" for b, sz in ys]
    lines += [f"  for (int64_t k = 0; k < {length}; ++k) {{",
              f"    {{ void *i[] = {{{', '.join(ins) or 'NULL'}}}; "
              f"void *o[] = {{{', '.join(outs) or 'NULL'}}}; rc = {g}(i, o); }}",
              "    if (rc) goto done;",
              f"    {_swap(nk)}", "  }"]
    lines += _finish(sizes, [f"bufs[{out0 + i}]" for i in range(nk)]) + ["}"]
    cp.parts.append("\n".join(lines))
    cp.scratch[name] = _carry_bytes(sizes) + cp.scratch.get(g, 0)
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
