"""``plait.tree_util``: pytree utilities (like ``jax.tree_util``)."""
from plait.core.pytree import (tree_flatten, tree_unflatten, tree_map, tree_leaves,
                               tree_structure, register_pytree_node,
                               register_pytree_node_class, TreeDef, leaf_paths)

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "tree_structure",
           "register_pytree_node", "register_pytree_node_class", "TreeDef", "leaf_paths"]
