"""Slots and lifetimes of a straight-line program: the one planner every backend uses.

A backend runs a graph as a sequence of steps, each reading some values and writing
others. Three questions are answered here, once, for the reference interpreter
(``backends/interp.py``), the native executable (``backends/native/compile.py``) and
the C drivers the native backend generates (``backends/native/cprogram.py``):

- where each value lives: :class:`Slots` numbers a graph's values for a flat
  environment list (constants, arguments, then literals and step outputs in order)
  and keeps the values known before a call (constants, literals, folded results);
- when each value dies: :func:`lifetimes` gives, per step, the values to free after
  it (the last reader frees a value; a value nobody reads dies where it is made);
- how much memory that takes: :func:`peak_bytes` replays the steps, counting what
  each makes and frees plus what a step allocates while it runs.

The functions work on any hashable keys: slot numbers for executables, graph
variables for the C drivers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Hashable, Iterable, Mapping, Sequence

from plait.core.graph import Literal


class Slots:
    """Numbers a graph's values for a flat environment list.

    Slots ``0..len(constvars)-1`` hold the constants, the next ``len(invars)`` the
    arguments; every later slot is either *fixed* (a value known before the call: a
    literal operand or a result folded at compile time) or written by a step.
    """

    def __init__(self, constvars: Sequence, consts: Sequence, invars: Sequence):
        self.index: dict = {}                     # value -> its (latest) slot
        self.count = 0                            # slots numbered so far
        self.fixed: dict[int, object] = {}       # slot -> value known before a call
        for v, c in zip(constvars, consts):
            self.fixed[self.write(v)] = c
        for v in invars:
            self.write(v)

    def __len__(self) -> int:
        return self.count

    def write(self, key: Hashable) -> int:
        """A new slot for ``key`` (a variable a step writes; a literal object read
        twice gets a second slot)."""
        s = self.index[key] = self.count
        self.count += 1
        return s

    def bind(self, key: Hashable, value) -> int:
        """A new fixed slot holding ``value``, named by ``key``."""
        s = self.write(key)
        self.fixed[s] = value
        return s

    def read(self, atom) -> int:
        """The slot of an operand: a literal gets a fixed slot of its value."""
        if isinstance(atom, Literal):
            return self.bind(atom, atom.val)          # a 0-d array: C-contiguous already
        return self.index[atom]

    def is_fixed(self, slot: int) -> bool:
        return slot in self.fixed

    def environment(self) -> list:
        """A fresh environment: the fixed values in place, every other slot None."""
        env = [None] * self.count
        for s, v in self.fixed.items():
            env[s] = v
        return env


@dataclass(frozen=True)
class Lifetimes:
    """When each value of a step sequence dies.

    ``last_use[k]`` is the index of the last step reading ``k``; ``frees[n]`` the
    values to drop after step ``n``.
    """

    last_use: Mapping
    frees: tuple[tuple, ...]


def lifetimes(reads: Sequence[Iterable], writes: Sequence[Iterable],
              keep: Collection = ()) -> Lifetimes:
    """Lifetimes of the values of steps reading ``reads[n]`` and writing ``writes[n]``:
    a value not in ``keep`` is freed after the last step reading it, or after the step
    writing it when no step reads it (values that outlive the steps — outputs,
    constants — go in ``keep``)."""
    last: dict = {}
    for n, ks in enumerate(reads):
        for k in ks:
            last[k] = n
    frees: list[list] = [[] for _ in reads]
    for k, n in last.items():
        if k not in keep:
            frees[n].append(k)
    for n, ks in enumerate(writes):
        for k in ks:
            if k not in last and k not in keep and k not in frees[n]:
                frees[n].append(k)
    return Lifetimes(last, tuple(tuple(f) for f in frees))


def peak_bytes(writes: Sequence[Iterable], frees: Sequence[Iterable],
               size: Callable[[Hashable], int], scratch: Sequence[int] | None = None,
               forwards: Sequence[Mapping | None] | None = None) -> int:
    """Peak bytes held while the steps run: step ``n`` makes a buffer of ``size(k)``
    bytes for each ``k`` in ``writes[n]`` (a value made twice counts once), allocates
    ``scratch[n]`` more while it runs, then frees ``frees[n]``. A value in
    ``forwards[n]`` (``{written: read}``) gets no buffer but names its operand's
    buffer again: the buffer is freed when its last name is. ``size`` is 0 for what
    is not counted (arguments, outputs, constants)."""
    live = peak = 0
    held: set = set()
    root: dict = {}        # a forwarded name -> the buffer it names
    refs: dict = {}        # a buffer -> how many live names it has, when more than one
    for n, ks in enumerate(writes):
        fw = (forwards[n] if forwards is not None else None) or {}
        for out, src in fw.items():
            b = root[out] = root.get(src, src)
            refs[b] = refs.get(b, 1) + 1
        for k in ks:
            if k not in fw and k not in held:
                held.add(k)
                live += size(k)
        peak = max(peak, live + (scratch[n] if scratch is not None else 0))
        for k in frees[n]:
            b = root.get(k, k)
            left = refs.pop(b, 1) - 1
            if left > 0:
                refs[b] = left
            else:
                live -= size(b)
                held.discard(b)
    return peak
