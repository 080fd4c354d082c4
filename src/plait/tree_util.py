"""``plait.tree_util``: pytree utilities, named as in ``jax.tree_util``.

Flatten/unflatten/map over nested containers, key paths (``SequenceKey``, ``DictKey``,
``GetAttrKey``, ``FlattenedIndexKey``) with the ``*_with_path`` variants and ``keystr``,
registration of custom nodes (classes, dataclasses, keyed nodes, static values),
``Partial`` (a ``functools.partial`` that is a pytree), reductions and transposition.
The registry itself lives in :mod:`plait.core.pytree`.
"""

import dataclasses as _dataclasses
import functools as _functools
from typing import Any as _Any, Callable as _Callable, Iterable as _Iterable, Sequence as _Sequence

from plait.core import pytree as _pytree
from plait.core.pytree import (tree_flatten, tree_unflatten, tree_map, tree_leaves,
                               tree_structure, register_pytree_node_class, TreeDef, leaf_paths,
                               LEAF as _LEAF, NONE as _NONE, child_keys as _child_keys,
                               is_node as _is_node, register_pytree_with_keys as _register_keys)

PyTreeDef = TreeDef


# --- key path entries ---------------------------------------------------------------

@_dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Index of a tuple/list child: ``[0]``."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@_dataclasses.dataclass(frozen=True)
class DictKey:
    """Key of a dict child: ``['a']``."""
    key: _Any

    def __str__(self):
        return f"[{self.key!r}]"


@_dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Attribute of a namedtuple/dataclass child: ``.x``."""
    name: str

    def __str__(self):
        return f".{self.name}"


@_dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """Position of a child of a node registered without keys: ``[1]``."""
    key: int

    def __str__(self):
        return f"[{self.key!r}]"


KeyEntry = _Any
KeyPath = tuple


def _simple(k) -> str:
    for attr in ("idx", "key", "name"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: ``"['a'][0].x"``, or with ``simple=True`` ``"a/0/x"`` (with
    ``separator="/"``)."""
    if simple:
        return separator.join(_simple(k) for k in keys)
    return separator.join(str(k) for k in keys)


def _children_with_keys(x):
    return _child_keys(x, SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey)


def _walk(x, path: tuple, out: list, is_leaf) -> None:
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return
    if x is None:
        return
    if not _is_node(x):
        out.append((path, x))
        return
    kids, keys = _children_with_keys(x)
    for k, c in zip(keys, kids):
        _walk(c, path + (k,), out, is_leaf)


def tree_flatten_with_path(tree: _Any, is_leaf: _Callable | None = None
                           ) -> tuple[list[tuple[KeyPath, _Any]], TreeDef]:
    """``([(key_path, leaf), ...], treedef)`` in flattening order."""
    out: list = []
    _walk(tree, (), out, is_leaf)
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: _Any, is_leaf: _Callable | None = None) -> list:
    """``[(key_path, leaf), ...]`` in flattening order."""
    out: list = []
    _walk(tree, (), out, is_leaf)
    return out


def tree_map_with_path(f: _Callable, tree: _Any, *rest: _Any, is_leaf: _Callable | None = None,
                       is_leaf_takes_path: bool = False) -> _Any:
    """``f(key_path, leaf, *other_leaves)`` over every leaf of ``tree`` (and of ``rest``,
    which must have ``tree``'s structure)."""
    if is_leaf is not None and is_leaf_takes_path:
        pairs: list = []
        _walk_path_leaf(tree, (), pairs, is_leaf)
        td = _structure_path_leaf(tree, (), is_leaf)
    else:
        pairs, td = tree_flatten_with_path(tree, is_leaf)
    others = []
    for r in rest:
        rl, rtd = tree_flatten(r, None if is_leaf_takes_path else is_leaf)
        if len(rl) != len(pairs):
            raise ValueError(f"tree_map_with_path: structures differ: {td} vs {rtd}")
        others.append(rl)
    return tree_unflatten(td, [f(p, x, *o) for (p, x), *o in zip(pairs, *others)])


def _walk_path_leaf(x, path, out, is_leaf) -> None:
    if is_leaf(path, x) or x is None or not _is_node(x):
        if x is not None or is_leaf(path, x):
            out.append((path, x))
        return
    kids, keys = _children_with_keys(x)
    for k, c in zip(keys, kids):
        _walk_path_leaf(c, path + (k,), out, is_leaf)


def _structure_path_leaf(x, path, is_leaf) -> TreeDef:
    if is_leaf(path, x):
        return _LEAF
    if x is None:
        return _NONE
    if not _is_node(x):
        return _LEAF
    kids, keys = _children_with_keys(x)
    shell = tree_structure(x, is_leaf=lambda y: y is not x)
    return TreeDef(shell.kind, shell.aux,
                   tuple(_structure_path_leaf(c, path + (k,), is_leaf)
                         for k, c in zip(keys, kids)))


# --- registration -------------------------------------------------------------------

def register_pytree_node(nodetype: type, flatten_func: _Callable, unflatten_func: _Callable,
                         flatten_with_keys_func: _Callable | None = None) -> None:
    """Register ``nodetype``: ``flatten_func(x) -> (children, aux)``,
    ``unflatten_func(aux, children) -> x``; with ``flatten_with_keys_func`` its children
    get those keys in key paths (else ``FlattenedIndexKey`` s)."""
    if flatten_with_keys_func is None:
        _pytree.register_pytree_node(nodetype, flatten_func, unflatten_func)
    else:
        _register_keys(nodetype, flatten_with_keys_func, unflatten_func, flatten_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: _Callable,
                              unflatten_func: _Callable,
                              flatten_func: _Callable | None = None) -> None:
    """Register ``nodetype``: ``flatten_with_keys(x) -> ([(key, child), ...], aux)``,
    ``unflatten_func(aux, children) -> x``."""
    _register_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func)


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: ``cls.tree_flatten_with_keys()`` and ``cls.tree_unflatten``."""
    flatten = getattr(cls, "tree_flatten", None)
    _register_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                   (lambda x: x.tree_flatten()) if flatten is not None else None)
    return cls


def register_dataclass(nodetype: type, data_fields: _Sequence[str] | None = None,
                       meta_fields: _Sequence[str] | None = None,
                       drop_fields: _Sequence[str] = ()) -> type:
    """Register a dataclass: ``data_fields`` are children, ``meta_fields`` are static
    (part of the treedef, must be hashable). Without field lists, fields with
    ``metadata={'static': True}`` are meta and the rest are data."""
    if data_fields is None or meta_fields is None:
        if not _dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {nodetype.__name__} is not a dataclass; "
                            f"pass data_fields and meta_fields explicitly")
        fields = [f for f in _dataclasses.fields(nodetype) if f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten_with_keys(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def unflatten(aux, children):
        return nodetype(**dict(zip(meta_fields, aux)), **dict(zip(data_fields, children)))

    _register_keys(nodetype, flatten_with_keys, unflatten)
    return nodetype


def register_static(cls: type) -> type:
    """Register ``cls`` as a node with no children: its (hashable) instances are part of
    the treedef, never leaves."""
    register_pytree_node(cls, lambda x: ((), x), lambda aux, _: aux)
    return cls


class Partial(_functools.partial):
    """``functools.partial`` whose bound arguments are pytree children (so it can be
    passed into and out of ``jit``/``grad``); the function is static."""

    def __new__(cls, func, *args, **kw):
        if isinstance(func, _functools.partial):   # flatten nested partials
            args = func.args + args
            kw = {**func.keywords, **kw}
            func = func.func
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, kids: Partial(func, *kids[0], **kids[1]))


# --- queries, reductions, structure ---------------------------------------------------

def tree_reduce(function: _Callable, tree: _Any, initializer: _Any = ...,
                is_leaf: _Callable | None = None) -> _Any:
    """``functools.reduce(function, leaves[, initializer])``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is ...:
        return _functools.reduce(function, leaves)
    return _functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: _Callable, tree: _Any, *, identity: _Any = ...,
                            is_leaf: _Callable | None = None) -> _Any:
    """Reduce the leaves pairwise as a balanced tree (``operation`` must be associative)."""
    xs = tree_leaves(tree, is_leaf)
    if not xs:
        if identity is ...:
            raise TypeError("tree_reduce_associative of an empty tree needs identity=")
        return identity
    while len(xs) > 1:
        xs = [operation(xs[i], xs[i + 1]) if i + 1 < len(xs) else xs[i]
              for i in range(0, len(xs), 2)]
    return xs[0]


def tree_all(tree: _Any, *, is_leaf: _Callable | None = None) -> bool:
    """True when every leaf is truthy."""
    return all(tree_leaves(tree, is_leaf))


def all_leaves(iterable: _Iterable, is_leaf: _Callable | None = None) -> bool:
    """True when every element of ``iterable`` is a leaf (None is not a leaf)."""
    return all(treedef_is_leaf(tree_structure(x, is_leaf)) and
               tree_structure(x, is_leaf).kind == "leaf" for x in iterable)


def treedef_is_leaf(treedef: TreeDef) -> bool:
    """True for the structure of a leaf or of None (a node with no children)."""
    return treedef.kind in ("leaf", "none")


def treedef_children(treedef: TreeDef) -> list[TreeDef]:
    """The treedefs of the root's children."""
    return list(treedef.children)


def treedef_tuple(treedefs: _Iterable[TreeDef]) -> TreeDef:
    """The treedef of a tuple whose children have ``treedefs``."""
    return TreeDef(tuple, None, tuple(treedefs))


def _node(treedef: TreeDef, kids: list) -> _Any:
    """Rebuild ``treedef``'s root node with ``kids`` as its (already built) children."""
    shell = TreeDef(treedef.kind, treedef.aux, (_LEAF,) * len(treedef.children))
    return tree_unflatten(shell, kids)


def build_tree(treedef: TreeDef, xs: _Any) -> _Any:
    """Build a tree of ``treedef``'s structure from nested iterables ``xs`` (one iterable
    of children per node, a value per leaf)."""
    if treedef.kind == "leaf":
        return xs
    if treedef.kind == "none":
        return None
    xs = list(xs)
    if len(xs) != len(treedef.children):
        raise ValueError(f"build_tree: node {treedef} has {len(treedef.children)} "
                         f"children, got {len(xs)}")
    return _node(treedef, [build_tree(c, x) for c, x in zip(treedef.children, xs)])


def flatten_one_level(tree: _Any) -> tuple[list, _Any]:
    """The root's children and its node data (dict keys, registered aux, ...)."""
    if tree is None or not _is_node(tree):
        raise ValueError(f"flatten_one_level: {type(tree).__name__} is a leaf")
    kids, _ = _children_with_keys(tree)
    return kids, tree_structure(tree, is_leaf=lambda y: y is not tree).aux


def flatten_one_level_with_keys(tree: _Any) -> tuple[list, _Any]:
    """Like :func:`flatten_one_level` with ``(key, child)`` pairs."""
    kids, data = flatten_one_level(tree)
    _, keys = _children_with_keys(tree)
    return list(zip(keys, kids)), data


def is_tree_node(x: _Any) -> bool:
    """True when ``x`` is a pytree container (None included), not a leaf."""
    return x is None or _is_node(x)


def _flatten_up_to(td: TreeDef, x: _Any) -> list:
    if td.kind == "leaf":
        return [x]
    if td.kind == "none":
        return []
    kids, _ = _children_with_keys(x)
    if len(kids) != len(td.children):
        raise ValueError(f"tree does not match the structure {td}")
    return [y for c, k in zip(td.children, kids) for y in _flatten_up_to(c, k)]


def tree_transpose(outer_treedef: TreeDef, inner_treedef: TreeDef | None,
                   pytree_to_transpose: _Any) -> _Any:
    """Turn an outer tree of inner trees into an inner tree of outer trees."""
    subs = _flatten_up_to(outer_treedef, pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(subs[0])
    cols = []
    for s in subs:
        leaves, td = tree_flatten(s)
        if td != inner_treedef:
            raise TypeError(f"tree_transpose: inner structure {td} is not {inner_treedef}")
        cols.append(leaves)
    return tree_unflatten(inner_treedef, [tree_unflatten(outer_treedef, list(row))
                                          for row in zip(*cols)])


def tree_broadcast(prefix_tree: _Any, full_tree: _Any,
                   is_leaf: _Callable | None = None) -> _Any:
    """Each leaf of ``prefix_tree`` repeated over the matching subtree of ``full_tree``."""
    if is_leaf is not None and is_leaf(prefix_tree):
        return tree_map(lambda _: prefix_tree, full_tree, is_leaf=is_leaf)
    if prefix_tree is None:
        return None
    if not _is_node(prefix_tree):
        return tree_map(lambda _: prefix_tree, full_tree, is_leaf=is_leaf)
    pk, _ = _children_with_keys(prefix_tree)
    fk, _ = _children_with_keys(full_tree)
    if type(prefix_tree) is not type(full_tree) or len(pk) != len(fk):
        raise ValueError(f"tree_broadcast: {type(prefix_tree).__name__} prefix does not "
                         f"match {type(full_tree).__name__}")
    td = tree_structure(full_tree, is_leaf=lambda y: y is not full_tree)
    return _node(td, [tree_broadcast(p, f, is_leaf) for p, f in zip(pk, fk)])


__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "tree_structure",
           "register_pytree_node", "register_pytree_node_class", "TreeDef", "PyTreeDef",
           "leaf_paths", "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey",
           "KeyEntry", "KeyPath", "keystr", "tree_flatten_with_path",
           "tree_leaves_with_path", "tree_map_with_path", "register_pytree_with_keys",
           "register_pytree_with_keys_class", "register_dataclass", "register_static",
           "Partial", "tree_reduce", "tree_reduce_associative", "tree_all", "all_leaves",
           "treedef_is_leaf", "treedef_children", "treedef_tuple", "build_tree",
           "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node",
           "tree_transpose", "tree_broadcast"]
