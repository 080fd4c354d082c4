"""Pytrees: nested tuples, lists, dicts, None, namedtuples and registered classes.

``tree_flatten(x) -> (leaves, treedef)`` and ``tree_unflatten(treedef, leaves)``.
Dict keys are sorted. ``TreeDef`` is hashable and comparable, so it can be part
of a cache key. Register a class with :func:`register_pytree_node`.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable

_REGISTRY: dict[type, tuple[Callable, Callable]] = {}


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """Register ``cls``: ``flatten(x) -> (children, aux)``, ``unflatten(aux, children) -> x``."""
    _REGISTRY[cls] = (flatten, unflatten)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: ``cls.tree_flatten()`` and ``cls.tree_unflatten(aux, children)``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class TreeDef:
    """The structure of a pytree without its leaves."""

    __slots__ = ("kind", "aux", "children", "num_leaves", "_hash")

    def __init__(self, kind, aux: Hashable, children: tuple):
        self.kind = kind          # "leaf", "none", tuple, list, dict, namedtuple cls, registered cls
        self.aux = aux
        self.children = children
        self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in children)
        self._hash = hash((kind, aux, children))

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return (isinstance(other, TreeDef) and self._hash == other._hash and
                self.kind == other.kind and self.aux == other.aux and
                self.children == other.children)

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        if self.kind is tuple:
            return "(" + ", ".join(map(repr, self.children)) + ("," if len(self.children) == 1 else "") + ")"
        if self.kind is list:
            return "[" + ", ".join(map(repr, self.children)) + "]"
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children)) + "}"
        return f"{getattr(self.kind, '__name__', self.kind)}({', '.join(map(repr, self.children))})"

    def unflatten(self, leaves):
        return tree_unflatten(self, leaves)


LEAF = TreeDef("leaf", None, ())
NONE = TreeDef("none", None, ())


def _flatten(x, leaves: list, is_leaf) -> TreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return LEAF
    t = type(x)
    if x is None:
        return NONE
    if t is tuple or t is list:
        return TreeDef(t, None, tuple(_flatten(c, leaves, is_leaf) for c in x))
    if t is dict:
        keys = sorted(x)
        return TreeDef(dict, tuple(keys), tuple(_flatten(x[k], leaves, is_leaf) for k in keys))
    reg = _REGISTRY.get(t)
    if reg is not None:
        children, aux = reg[0](x)
        return TreeDef(t, aux, tuple(_flatten(c, leaves, is_leaf) for c in children))
    if _is_namedtuple(x):
        return TreeDef(t, None, tuple(_flatten(c, leaves, is_leaf) for c in x))
    leaves.append(x)
    return LEAF


def tree_flatten(tree: Any, is_leaf: Callable | None = None) -> tuple[list, TreeDef]:
    """Leaves (left to right, dict keys sorted) and the tree's structure."""
    leaves: list = []
    return leaves, _flatten(tree, leaves, is_leaf)


def _unflatten(td: TreeDef, it):
    k = td.kind
    if k == "leaf":
        return next(it)
    if k == "none":
        return None
    kids = [_unflatten(c, it) for c in td.children]
    if k is tuple:
        return tuple(kids)
    if k is list:
        return kids
    if k is dict:
        return dict(zip(td.aux, kids))
    reg = _REGISTRY.get(k)
    if reg is not None:
        return reg[1](td.aux, kids)
    return k(*kids)  # namedtuple


def tree_unflatten(treedef: TreeDef, leaves) -> Any:
    """Rebuild a pytree of structure ``treedef`` from ``leaves``."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree structure {treedef} has {treedef.num_leaves} leaves, "
                         f"got {len(leaves)}")
    return _unflatten(treedef, iter(leaves))


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> TreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree, *rest, is_leaf=None):
    """Apply ``f`` leafwise over ``tree`` and trees of the same structure ``rest``."""
    leaves, td = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        rl, rtd = tree_flatten(r, is_leaf)
        if rtd != td:
            raise ValueError(f"tree_map: structures differ: {td} vs {rtd}")
        others.append(rl)
    return tree_unflatten(td, [f(*xs) for xs in zip(leaves, *others)])


def _key_str(td: TreeDef, i: int) -> str:
    if td.kind is dict:
        return f"[{td.aux[i]!r}]"
    if _is_namedtuple_type(td.kind):
        return f".{td.kind._fields[i]}"
    return f"[{i}]"


def _is_namedtuple_type(k) -> bool:
    return isinstance(k, type) and issubclass(k, tuple) and hasattr(k, "_fields")


def leaf_paths(td: TreeDef, prefix: str = "") -> list[str]:
    """Readable path of every leaf (``[0]['W']``), in flattening order."""
    if td.kind == "leaf":
        return [prefix]
    out = []
    for i, c in enumerate(td.children):
        out.extend(leaf_paths(c, prefix + _key_str(td, i)))
    return out


# --- key paths -------------------------------------------------------------------------

_KEYS_REGISTRY: dict[type, Callable] = {}


def register_pytree_with_keys(cls: type, flatten_with_keys: Callable, unflatten: Callable,
                              flatten: Callable | None = None) -> None:
    """Register ``cls`` with ``flatten_with_keys(x) -> ([(key, child), ...], aux)``.

    ``flatten`` (children without keys) is derived from ``flatten_with_keys`` when omitted.
    """
    if flatten is None:
        def flatten(x):
            kids, aux = flatten_with_keys(x)
            return [c for _, c in kids], aux
    _REGISTRY[cls] = (flatten, unflatten)
    _KEYS_REGISTRY[cls] = flatten_with_keys


def child_keys(x, make_seq, make_dict, make_attr, make_flat) -> tuple[list, list]:
    """One level of ``x``: its children and the key of each (built by the ``make_*``
    constructors). ``x`` must be a pytree node (not a leaf, not None)."""
    t = type(x)
    if t is tuple or t is list:
        return list(x), [make_seq(i) for i in range(len(x))]
    if t is dict:
        keys = sorted(x)
        return [x[k] for k in keys], [make_dict(k) for k in keys]
    if t in _KEYS_REGISTRY:
        pairs, _ = _KEYS_REGISTRY[t](x)
        return [c for _, c in pairs], [k for k, _ in pairs]
    reg = _REGISTRY.get(t)
    if reg is not None:
        children, _ = reg[0](x)
        return list(children), [make_flat(i) for i in range(len(children))]
    if _is_namedtuple(x):
        return list(x), [make_attr(f) for f in t._fields]
    raise TypeError(f"{t.__name__} is not a pytree node")


def is_node(x) -> bool:
    """True for a pytree container (tuple, list, dict, namedtuple, registered class)."""
    t = type(x)
    return t is tuple or t is list or t is dict or t in _REGISTRY or _is_namedtuple(x)
