"""``plait.tree``: short names for the pytree utilities (like ``jax.tree``):
``plait.tree.map``, ``leaves``, ``structure``, ``flatten``, ``unflatten``, ...
"""
import dataclasses as _dataclasses

from plait.tree_util import (tree_map as map, tree_leaves as leaves,  # noqa: A001
                             tree_structure as structure, tree_flatten as flatten,
                             tree_unflatten as unflatten, tree_reduce as reduce,
                             tree_reduce_associative as reduce_associative,
                             tree_all as all, tree_transpose as transpose,
                             tree_broadcast as broadcast,
                             tree_map_with_path as map_with_path,
                             tree_flatten_with_path as flatten_with_path,
                             tree_leaves_with_path as leaves_with_path)


def static(**kwargs):
    """A ``dataclasses.field`` marked static (``metadata={'static': True}``) for
    :func:`plait.tree_util.register_dataclass`."""
    meta = dict(kwargs.pop("metadata", None) or {})
    meta["static"] = True
    return _dataclasses.field(metadata=meta, **kwargs)


__all__ = ["map", "leaves", "structure", "flatten", "unflatten", "reduce",
           "reduce_associative", "all", "transpose", "broadcast", "map_with_path",
           "flatten_with_path", "leaves_with_path", "static"]
