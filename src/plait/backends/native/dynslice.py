"""``native`` rules of ``dynamic_slice`` and ``dynamic_update_slice``: block copies at
start indices read at run time.

Each equation renders as ``int64_t name(void **bufs)`` (operand, [update,] the start
indices, then the output). The starts are read from their buffers in the generated
code and clamped as the primitives' ``impl`` clamps them (into ``[0, dim - size]``, so
every access stays in bounds for any start value, of any integer type). The block is
copied as ``memcpy`` runs: the trailing dimensions the slice covers whole are one
contiguous run with the last dimension it cuts, and loops walk the leading ones. A
loop body holding such a slice (a ``fori_loop`` over minibatches) thus stays one C
loop instead of returning to Python each step.
"""
from __future__ import annotations

import math

import numpy as np

from plait.backends.native.cprogram import CProgram, storage_type
from plait.backends.native.conv import row_major_strides
from plait.lax.shape_ops import dynamic_slice_p, dynamic_update_slice_p


def _cut(shape, sizes) -> int:
    """The last dimension the block does not cover whole (0 if it covers all): the
    block's contiguous runs span it and every later one."""
    return max((j for j in range(len(shape)) if sizes[j] != shape[j]), default=0)


def _read_starts(idx_avals, shape, sizes, first_buf: int) -> list[str]:
    """C lines setting ``int64_t s{j}`` to the clamped start of each dimension ``j`` up
    to ``_cut`` (a later one covers its dimension whole: its start clamps to 0)."""
    lines = []
    for j, (a, d, z) in enumerate(zip(idx_avals, shape, sizes)):
        if j > _cut(shape, sizes):
            break
        hi = d - z
        ctype = storage_type(a)
        src = f"*({ctype} *)bufs[{first_buf + j}]"
        if np.dtype(a.dtype).kind == "u":     # no negative values; compare unsigned
            lines.append(f"  uint64_t u{j} = (uint64_t){src};")
            lines.append(f"  int64_t s{j} = u{j} > (uint64_t){hi} ? {hi} : (int64_t)u{j};")
        else:
            lines.append(f"  int64_t s{j} = (int64_t){src};")
            lines.append(f"  s{j} = s{j} < 0 ? 0 : s{j} > {hi} ? {hi} : s{j};")
    return lines


def _block_copy(shape, sizes, itemsize: int, big: str, small: str, to_big: bool) -> list[str]:
    """C lines copying the ``sizes`` block at starts ``s*`` between the array ``big``
    (of ``shape``) and the dense array ``small`` (of ``sizes``), into ``big`` when
    ``to_big``."""
    n = len(shape)
    if n == 0:
        return [f"  memcpy({big if to_big else small}, {small if to_big else big}, {itemsize});"]
    cut = _cut(shape, sizes)
    run = math.prod(sizes[cut:]) * itemsize
    bst, sst = row_major_strides(shape), row_major_strides(sizes)
    off_big = [f"s{cut} * {bst[cut]}"] + [f"(s{j} + i{j}) * {bst[j]}" for j in range(cut)]
    off_small = ["0"] + [f"i{j} * {sst[j]}" for j in range(cut)]
    b = f"(char *){big} + ({' + '.join(off_big)}) * {itemsize}"
    s = f"(char *){small} + ({' + '.join(off_small)}) * {itemsize}"
    dst, src = (b, s) if to_big else (s, b)
    lines = []
    for j in range(cut):
        lines.append(f"  {'  ' * j}for (int64_t i{j} = 0; i{j} < {sizes[j]}; ++i{j})")
    lines.append(f"  {'  ' * cut}memcpy({dst}, {src}, {run});")
    return lines


def _dynamic_slice(cp: CProgram, eqn, name: str) -> bool:
    x = eqn.inputs[0].aval
    sizes = eqn.params["slice_sizes"]
    n = len(sizes)
    lines = [f"int64_t {name}(void **bufs) {{"]
    if math.prod(sizes):
        lines += _read_starts([a.aval for a in eqn.inputs[1:]], x.shape, sizes, 1)
        lines += _block_copy(x.shape, sizes, np.dtype(x.dtype).itemsize, "bufs[0]",
                             f"bufs[{n + 1}]", to_big=False)
    lines += ["  return 0;", "}"]
    cp.parts.append("\n".join(lines))
    cp.scratch[name] = 0
    return True


def _dynamic_update_slice(cp: CProgram, eqn, name: str) -> bool:
    x, upd = eqn.inputs[0].aval, eqn.inputs[1].aval
    n = len(x.shape)
    nb = math.prod(x.shape) * np.dtype(x.dtype).itemsize
    out = f"bufs[{n + 2}]"
    lines = [f"int64_t {name}(void **bufs) {{"]
    if nb:
        lines.append(f"  if ({out} != bufs[0]) memcpy({out}, bufs[0], {nb});")
    if math.prod(upd.shape):
        lines += _read_starts([a.aval for a in eqn.inputs[2:]], x.shape, upd.shape, 2)
        lines += _block_copy(x.shape, upd.shape, np.dtype(x.dtype).itemsize, out, "bufs[1]",
                             to_big=True)
    lines += ["  return 0;", "}"]
    cp.parts.append("\n".join(lines))
    cp.scratch[name] = 0
    return True


dynamic_slice_p.def_rule("native", _dynamic_slice)
dynamic_update_slice_p.def_rule("native", _dynamic_update_slice)
