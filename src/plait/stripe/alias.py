"""Whether a Stripe program may write an output into the memory of one of its inputs.

A loop carrying a model's state (parameters, optimizer moments) updates each carry with
an elementwise kernel that reads the old value and writes the new one. Writing the new
value over the old (one buffer per carry instead of two, and no write into lines the
cache does not hold) is correct when every element of the output is written once, by
the iteration that reads the same element of the input, after its last read of it.
:func:`pointwise_update` proves that from the program, or says no.
"""
from __future__ import annotations

import math
from typing import Collection

from plait.stripe.ir import Block, Load, Program, Special, Store


def pointwise_update(program: Program, reads: Collection[str], write: str) -> bool:
    """Whether output buffer ``write`` may share memory with the input buffers ``reads``.

    True when: every load of ``reads`` and every store to ``write`` sits in one block,
    through refinements with the same accesses and strides at every level (so each
    iteration touches the same element of both); each load comes before the first
    store in that block's statements; the blocks around the stores run exactly as many
    iterations as ``write`` has elements, without constraints, and the program writes
    every element of ``write`` (its refinement is ``overwritten``: no identity fill
    first), so each element is stored once; and no special statement touches them."""
    buffers = {b.name: b for b in program.buffers}
    if write not in buffers or not reads:
        return False
    if not any(r.from_ == write and "overwritten" in r.tags for r in program.entry.refs):
        return False          # filled with its identity before the kernel's loads
    uses: list = []          # (kind, root, block, position, refinement chain, path)
    roots = set(reads) | {write}
    top = {b.name: (b.name, ()) for b in program.buffers}
    if not _collect(program.entry, top, (), roots, uses):
        return False
    loads = [u for u in uses if u[0] == "load" and u[1] in reads]
    stores = [u for u in uses if u[0] == "store" and u[1] == write]
    if not stores:
        return False
    _, _, block, _, chain, path = stores[0]
    place = [(access, strides) for access, strides, _ in chain]
    if any(u[2] is not block or [(a, s) for a, s, _ in u[4]] != place for u in loads + stores):
        return False
    if any(agg not in (None, "assign") for u in stores for _, _, agg in u[4]):
        return False
    if loads and max(u[3] for u in loads) > min(u[3] for u in stores):
        return False
    if any(b.constraints for b in path):
        return False
    return math.prod(b.iterations for b in path) == math.prod(buffers[write].shape)


def _collect(block: Block, outer: dict, path: tuple, roots: set, uses: list) -> bool:
    """Record the loads and stores of ``roots`` under ``block`` with their refinement
    chains; False if a special statement touches one of them."""
    views = {}
    for r in block.refs:
        if r.from_ is None:
            views[r.into] = ("", ())
        else:
            root, chain = outer[r.from_]
            views[r.into] = (root, chain + ((r.access, r.strides, r.agg),))
    path = path + (block,)
    for k, st in enumerate(block.stmts):
        name = st.from_ if isinstance(st, Load) else st.into if isinstance(st, Store) else None
        if name is not None and views[name][0] in roots:
            root, chain = views[name]
            uses.append(("load" if isinstance(st, Load) else "store", root, block, k, chain, path))
        if isinstance(st, Special):
            if any(views.get(n, ("", ()))[0] in roots for n in st.inputs + st.outputs):
                return False
        elif isinstance(st, Block) and not _collect(st, views, path, roots, uses):
            return False
    return True
