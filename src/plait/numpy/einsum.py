"""``einsum`` and ``einsum_path``: Einstein summation lowered to ``lax.dot_general``.

Subscripts are parsed into one list of labels per operand (``...`` becomes
labels of its own, aligned from the right so broadcasting works). Each operand
is first simplified alone: repeated labels take a diagonal, size-1 dimensions
whose label is larger elsewhere are dropped (NumPy broadcasting), and labels
no other operand or the output needs are summed. Operands are then contracted
pairwise along a path (greedy by intermediate size for three or more
operands, as opt_einsum's greedy strategy); every pairwise step is one
``dot_general`` whose batch dimensions are the shared labels still needed.
"""
from __future__ import annotations

import itertools
from typing import Sequence

from plait import lax
from plait.core import dtypes
from plait.core.trace import get_aval
from plait.errors import PlaitValueError
from plait.lax.precision import check_precision
from plait.numpy import _promote

_ELL = "\u2026"   # label prefix of dimensions covered by an ellipsis


# --- parsing ---------------------------------------------------------------------
def _split_interleaved(args) -> tuple[str, list]:
    """``einsum(op0, sub0, op1, sub1, ..., [out])`` -> ``(subscripts, operands)``."""
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):
        out = ops.pop()

    def conv(sub) -> str:
        s = []
        for v in sub:
            if v is Ellipsis:
                s.append("...")
            else:
                i = _promote.static_int(v, "einsum", "subscript")
                if not 0 <= i < 52:
                    raise PlaitValueError(f"einsum: subscript {i} is not in [0, 52)")
                s.append(chr(ord("A") + i) if i < 26 else chr(ord("a") + i - 26))
        return "".join(s)

    text = ",".join(conv(s) for s in subs)
    if out is not None:
        text += "->" + conv(out)
    return text, ops


def _term_labels(term: str, ndim: int, n_ell: int, which: str) -> list[str]:
    """Labels of one input term; ``...`` expands to the last ``k`` of ``n_ell`` labels."""
    if term.count("...") > 1 or "." in term.replace("...", ""):
        raise PlaitValueError(f"einsum: invalid ellipsis in subscripts {term!r} of {which}")
    head, _, tail = term.partition("...")
    for c in head + tail:
        if not c.isalpha() or not c.isascii():
            raise PlaitValueError(f"einsum: invalid subscript {c!r} in {term!r}; subscripts "
                                  f"must be letters a-z, A-Z")
    if "..." not in term:
        if len(term) != ndim:
            raise PlaitValueError(
                f"einsum: {which} has {ndim} dimensions but subscripts {term!r} name "
                f"{len(term)}")
        return list(term)
    k = ndim - len(head) - len(tail)
    if k < 0:
        raise PlaitValueError(f"einsum: {which} has {ndim} dimensions, fewer than the "
                              f"{len(head) + len(tail)} subscripts in {term!r}")
    return list(head) + [f"{_ELL}{n_ell - k + j}" for j in range(k)] + list(tail)


def parse_subscripts(subscripts: str, ndims: Sequence[int]) -> tuple[list[list[str]], list[str]]:
    """Parse ``subscripts`` for operands of ranks ``ndims`` -> (input labels, output labels)."""
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise PlaitValueError(f"einsum: {len(terms)} operand subscripts in {subscripts!r} but "
                              f"{len(ndims)} operands were given")
    n_ell = max([nd - len(t.replace("...", "")) for t, nd in zip(terms, ndims) if "..." in t],
                default=0)
    ins = [_term_labels(t, nd, n_ell, f"operand {i}")
           for i, (t, nd) in enumerate(zip(terms, ndims))]
    ell = [f"{_ELL}{j}" for j in range(n_ell)]
    used_ell = [l for l in ell if any(l in lab for lab in ins)]
    if arrow:
        if rhs.count("...") > 1 or "." in rhs.replace("...", ""):
            raise PlaitValueError(f"einsum: invalid ellipsis in output subscripts {rhs!r}")
        head, has_ell, tail = rhs.partition("...")
        if not has_ell and used_ell:
            raise PlaitValueError(
                "einsum: output has more dimensions than subscripts given in einstein sum, "
                "but no '...' ellipsis provided to broadcast the extra dimensions.")
        out = list(head) + (used_ell if has_ell else []) + list(tail)
        seen = set()
        all_in = set(itertools.chain.from_iterable(ins))
        for c in head + tail:
            if not c.isalpha() or not c.isascii():
                raise PlaitValueError(f"einsum: invalid output subscript {c!r}")
            if c in seen:
                raise PlaitValueError(f"einsum: output subscript {c!r} appears more than once")
            if c not in all_in:
                raise PlaitValueError(f"einsum: output subscript {c!r} never appeared in an "
                                      f"input")
            seen.add(c)
    else:
        counts: dict[str, int] = {}
        for lab in ins:
            for c in lab:
                counts[c] = counts.get(c, 0) + 1
        out = used_ell + sorted(c for c, n in counts.items() if n == 1 and not c.startswith(_ELL))
    return ins, out


def label_sizes(ins: list[list[str]], shapes: Sequence[tuple]) -> dict[str, int]:
    """Size of each label (size-1 dimensions broadcast); mismatches are errors."""
    sizes: dict[str, int] = {}
    for i, (lab, shape) in enumerate(zip(ins, shapes)):
        for c, d in zip(lab, shape):
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = d
            elif d not in (1, prev):
                name = "..." if c.startswith(_ELL) else repr(c)
                raise PlaitValueError(f"einsum: size of label {name} for operand {i} ({d}) "
                                      f"does not match previous terms ({prev})")
    return sizes


# --- contraction path --------------------------------------------------------------
def _size(labels, sizes) -> int:
    n = 1
    for c in labels:
        n *= sizes[c]
    return n


def greedy_path(ins: list[frozenset], out: frozenset, sizes: dict) -> list[tuple[int, int]]:
    """Pairwise contraction order: each step contracts the pair whose result removes the
    most memory (``size(result) - size(a) - size(b)``, ties by fewer flops); pairs
    sharing no label are only considered when no pair shares one. Returns positions in
    the shrinking operand list (NumPy's ``einsum_path`` convention: the result is
    appended at the end).
    """
    rem = list(ins)
    path = []
    while len(rem) > 1:
        best = None
        for sharing in (True, False):
            for i, j in itertools.combinations(range(len(rem)), 2):
                if sharing and not (rem[i] & rem[j]):
                    continue
                keep = frozenset(out).union(*[rem[k] for k in range(len(rem)) if k not in (i, j)])
                res = (rem[i] | rem[j]) & keep
                key = (_size(res, sizes) - _size(rem[i], sizes) - _size(rem[j], sizes),
                       _size(rem[i] | rem[j], sizes), i, j)
                if best is None or key < best[0]:
                    best = (key, i, j, res)
            if best is not None:
                break
        _, i, j, res = best
        path.append((i, j))
        rem = [r for k, r in enumerate(rem) if k not in (i, j)] + [res]
    return path


def _resolve_path(optimize, ins, out, sizes) -> list[tuple]:
    n = len(ins)
    if n == 1:
        return [(0,)]
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        path = [tuple(int(i) for i in step) for step in optimize[1:]]
        m = n
        for step in path:
            if len(step) != 2 or len(set(step)) != 2 or not all(0 <= i < m for i in step):
                raise PlaitValueError(f"einsum: invalid contraction {step} in path {optimize} "
                                      f"(plait contracts pairs of operands)")
            m -= 1
        if m != 1:
            raise PlaitValueError(f"einsum: path {optimize} does not contract all {n} operands")
        return path
    if optimize not in (True, False, None, "greedy", "optimal", "auto"):
        raise PlaitValueError(f"einsum: optimize must be a bool, 'greedy', 'optimal' or an "
                              f"explicit ['einsum_path', ...] list, got {optimize!r}")
    if n == 2 or optimize is False:
        return [(0, 1)] * (n - 1)     # left to right
    return greedy_path([frozenset(l) for l in ins], frozenset(out), sizes)


# --- execution ---------------------------------------------------------------------
def _sum_out(x, labels: list, drop: set):
    axes = tuple(i for i, c in enumerate(labels) if c in drop)
    if not axes:
        return x, labels
    if dtypes.is_bool(get_aval(x).dtype):
        x = lax.reduce_or(x, axes)
    else:
        x = lax.reduce_sum(x, axes)
    return x, [c for c in labels if c not in drop]


def _prepare(x, labels: list, sizes: dict, needed: set):
    """Diagonals for repeated labels, drop broadcast size-1 dims, sum unneeded labels."""
    from plait.numpy.indexing import diagonal
    while len(set(labels)) < len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)
        x = diagonal(x, 0, i, j)
        labels = [l for k, l in enumerate(labels) if k not in (i, j)] + [c]
    shape = get_aval(x).shape
    squeeze = [i for i, c in enumerate(labels) if shape[i] == 1 and sizes[c] != 1]
    if squeeze:
        x = lax.squeeze(x, squeeze)
        labels = [c for i, c in enumerate(labels) if i not in squeeze]
    return _sum_out(x, labels, set(labels) - needed)


def _contract(a, la: list, b, lb: list, keep: set):
    """One pairwise contraction of labelled operands with ``dot_general``."""
    a, la = _sum_out(a, la, set(la) - set(lb) - keep)
    b, lb = _sum_out(b, lb, set(lb) - set(la) - keep)
    batch = [c for c in la if c in lb and c in keep]
    contract = [c for c in la if c in lb and c not in keep]
    dn = (([la.index(c) for c in contract], [lb.index(c) for c in contract]),
          ([la.index(c) for c in batch], [lb.index(c) for c in batch]))
    out = lax.dot_general(a, b, dn)
    labels = batch + [c for c in la if c not in lb] + [c for c in lb if c not in la]
    return out, labels


def einsum_path(subscripts, *operands, optimize="greedy"):
    """The contraction order einsum uses: ``(['einsum_path', (i, j), ...], report)``.

    Like ``numpy.einsum_path`` (greedy strategy); the report lists each pairwise
    contraction with the size of its result.
    """
    ins, out, sizes, _ = _setup(subscripts, operands)
    path = _resolve_path(optimize if optimize is not False else "greedy", ins, out, sizes)
    lines = [f"  Complete contraction:  {_fmt_eq(ins, out)}"]
    rem = [list(l) for l in ins]
    for step in path:
        if len(step) == 1:
            lines.append(f"  {_fmt_eq([rem[0]], out)}")
            continue
        i, j = step
        others = [rem[k] for k in range(len(rem)) if k not in (i, j)]
        keep = set(out).union(*others)
        res = [c for c in dict.fromkeys(rem[i] + rem[j]) if c in keep]
        lines.append(f"  {_fmt_eq([rem[i], rem[j]], res)}  (result: "
                     f"{_size(res, sizes)} elements)")
        rem = others + [res]
    return ["einsum_path", *path], "\n".join(lines)


def _fmt_eq(ins, out) -> str:
    def fmt(lab):
        s, in_ell = "", False
        for c in lab:
            if c.startswith(_ELL):
                if not in_ell:
                    s += "..."
                in_ell = True
            else:
                s += c
                in_ell = False
        return s
    return ",".join(fmt(l) for l in ins) + "->" + fmt(out)


def _setup(subscripts, operands):
    if not isinstance(subscripts, str):
        subscripts, operands = _split_interleaved((subscripts,) + tuple(operands))
    if not operands:
        raise PlaitValueError("einsum: no operands given")
    ops = [_promote.arg(o, "einsum") for o in operands]
    ops = [_promote.asarray_strong(o) if _promote.is_python_scalar(o) else o for o in ops]
    shapes = [get_aval(o).shape for o in ops]
    ins, out = parse_subscripts(subscripts, [len(s) for s in shapes])
    sizes = label_sizes(ins, shapes)
    return ins, out, sizes, ops


def einsum(subscripts, *operands, optimize="greedy", dtype=None, precision=None,
           preferred_element_type=None):
    """Einstein summation over ``operands`` (NumPy's ``einsum``, every subscripts form).

    Accepts ``"ij,jk->ik"`` strings (with ``...`` and implicit output) and the
    interleaved ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` form. ``optimize`` is
    ``"greedy"`` (default), ``False`` (left to right) or an explicit path from
    :func:`einsum_path`. The result dtype is NumPy's promotion of the operands
    (or ``dtype``). ``precision`` is accepted as in ``jax.numpy`` (products are in the
    operands' dtype); ``preferred_element_type`` acts as ``dtype``.
    """
    check_precision(precision, "einsum")
    if preferred_element_type is not None:
        dtype = dtype if dtype is not None else preferred_element_type
    ins, out, sizes, ops = _setup(subscripts, operands)
    if dtype is not None:
        dt = dtypes.canonical_dtype(dtype)
        ops = [_promote.cast(o, dt) for o in ops]
    else:
        ops = _promote.promote_dtypes("einsum", *ops)
    path = _resolve_path(optimize, ins, out, sizes)
    counts: dict[str, int] = {}
    for lab in ins:
        for c in set(lab):
            counts[c] = counts.get(c, 0) + 1
    items = []
    for x, lab in zip(ops, ins):
        needed = set(out) | {c for c in lab if counts[c] > 1}
        items.append(_prepare(x, list(lab), sizes, needed))
    for step in path:
        if len(step) == 1:
            break
        i, j = step
        (a, la), (b, lb) = items[i], items[j]
        rest = [items[k] for k in range(len(items)) if k not in (i, j)]
        keep = set(out).union(*[set(l) for _, l in rest])
        items = rest + [_contract(a, la, b, lb, keep)]
    x, labels = items[0]
    x, labels = _sum_out(x, labels, set(labels) - set(out))
    return lax.transpose(x, [labels.index(c) for c in out])


__all__ = ["einsum", "einsum_path"]
