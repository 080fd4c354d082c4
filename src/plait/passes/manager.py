"""The pass manager: the ordered list of graph passes ``jit`` runs before compiling."""
from __future__ import annotations

from plait.core.graph import ClosedGraph
from plait.passes.cse import cse
from plait.passes.dce import dce
from plait.passes.erase import erase
from plait.passes.inline import inline
from plait.passes.licm import licm

PASSES = [("inline", inline), ("licm", licm), ("cse", cse), ("dce", dce), ("erase", erase)]


def optimize(closed: ClosedGraph) -> ClosedGraph:
    """Run every pass in ``PASSES`` in order."""
    for _, p in PASSES:
        closed = p(closed)
    return closed
