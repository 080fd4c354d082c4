"""The cost model of a parallel split: is a Stripe block's work worth starting threads?

Starting a parallel region (an OpenMP fork, its join and barrier, and the data the
other core must fetch) costs about ``fork_ns`` per run of the block. Splitting the
block over ``threads`` cores saves ``t - t / threads`` of its serial time ``t``, so a
block is split only when that saving is at least ``fork_ns``. A step made of many small
kernels (the layers and optimizer updates of a small model) otherwise pays a fork per
kernel for microseconds of work.

The serial time is a roofline estimate of one run of the block (all its iterations):

- compute: ``ops * op_ns + transcendentals * transcendental_ns``, where every
  intrinsic executed counts one op (an intrinsic whose elementwise descriptor is
  ``transcendental``, ``exp``, ``log``, ``tanh``, ..., one transcendental instead) and
  so does every store into an aggregating refinement (a sum's add, a max);
- memory: the bytes the block's refinements touch (an ``inout`` one read and written)
  over the bandwidth of the innermost memory level whose capacity holds them all (the
  target's ``memory`` levels; a level of 0 bytes has no bound);
- ``t`` is the larger of the two.

The three prices are parameters of the ``partition`` pass in each CPU target config
(``stripe/targets/cpu-*.toml``), measured on the machine the configs were tuned on;
the memory levels' sizes and bandwidths are the config's facts.
"""
from __future__ import annotations

from dataclasses import dataclass

from plait.lax.elementwise_spec import by_intrinsic
from plait.stripe.ir import Block, Intrinsic, Store, np_dtype


@dataclass(frozen=True)
class Work:
    """What one run of a block does: operations, transcendental calls, bytes touched."""

    ops: int
    transcendentals: int
    bytes: int


def _extent(ref, ranges: dict) -> int:
    """Elements a refinement's accesses can reach over the index ``ranges`` (the
    per-dimension extents multiplied: exact for dense views, an upper bound for strided
    ones)."""
    n = 1
    for a, size in zip(ref.access, ref.shape):
        n *= sum(abs(c) * (ranges.get(v, 1) - 1) for v, c in a.terms) + size
    return n


def _counts(block: Block) -> tuple[int, int]:
    """``(ops, transcendentals)`` of one run of ``block``: its statements' counts, once
    per iteration."""
    ops = trans = 0
    aggregated = {r.into for r in block.refs if r.agg not in (None, "assign")}
    for s in block.stmts:
        if isinstance(s, Block):
            o, t = _counts(s)
            ops, trans = ops + o, trans + t
        elif isinstance(s, Intrinsic):
            op = by_intrinsic(s.name)
            if op is not None and op.transcendental:
                trans += 1
            else:
                ops += 1
        elif isinstance(s, Store) and s.into in aggregated:
            ops += 1                    # the store's aggregation (a sum's add, a max)
    n = block.iterations
    return ops * n, trans * n


def block_work(block: Block) -> Work:
    """The :class:`Work` of one run of ``block`` (every iteration of its indexes)."""
    ops, trans = _counts(block)
    ranges = {ix.name: ix.range for ix in block.idxs if ix.affine is None}
    nbytes = 0
    for r in block.refs:
        if r.dir not in ("in", "out", "inout"):
            continue
        moved = _extent(r, ranges) * np_dtype(r.dtype).itemsize
        nbytes += 2 * moved if r.dir == "inout" else moved
    return Work(ops, trans, nbytes)


def serial_ns(work: Work, target, op_ns: float, transcendental_ns: float) -> float:
    """Estimated nanoseconds of ``work`` on one core of ``target``: the larger of its
    compute time and its memory time at the bandwidth of the level its bytes fit in (no
    memory time on a target without memory levels)."""
    compute = work.ops * op_ns + work.transcendentals * transcendental_ns
    level = next((m for m in target.memory if m.bytes == 0 or work.bytes <= m.bytes), None)
    memory = work.bytes / level.bandwidth_gbs if level is not None else 0.0
    return max(compute, memory)


def worth_splitting(block: Block, target, threads: int, fork_ns: float, op_ns: float,
                    transcendental_ns: float) -> bool:
    """Whether running ``block``'s iterations on ``threads`` cores saves at least the
    ``fork_ns`` a parallel region costs (see the module docstring)."""
    if threads < 2:
        return False
    t = serial_ns(block_work(block), target, op_ns, transcendental_ns)
    return t - t / threads >= fork_ns
