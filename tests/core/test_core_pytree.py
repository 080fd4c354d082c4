"""Pytrees: flatten/unflatten round trips, namedtuples, registered classes, paths."""
from collections import namedtuple

import pytest

from plait import tree_util as tu

Point = namedtuple("Point", "x y")


@tu.register_pytree_node_class
class Box:
    def __init__(self, a, b, tag):
        self.a, self.b, self.tag = a, b, tag

    def tree_flatten(self):
        return (self.a, self.b), self.tag

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, aux)


@pytest.mark.parametrize("tree", [
    1, None, (), [], {}, (1, 2), [1, (2, 3)], {"b": 1, "a": [2, 3]},
    Point(1, (2, 3)), {"p": Point(None, 4)}, [None, {"x": (1,)}],
])
def test_roundtrip(tree):
    leaves, td = tu.tree_flatten(tree)
    assert tu.tree_unflatten(td, leaves) == tree
    assert td.num_leaves == len(leaves)


def test_dict_keys_sorted_and_structure_hashable():
    l1, t1 = tu.tree_flatten({"b": 2, "a": 1})
    l2, t2 = tu.tree_flatten({"a": 5, "b": 6})
    assert l1 == [1, 2] and t1 == t2 and hash(t1) == hash(t2)
    assert tu.tree_structure((1, 2)) != tu.tree_structure([1, 2])


def test_registered_class():
    b = Box(1, [2, 3], "t")
    leaves, td = tu.tree_flatten(b)
    assert leaves == [1, 2, 3]
    b2 = tu.tree_unflatten(td, [4, 5, 6])
    assert (b2.a, b2.b, b2.tag) == (4, [5, 6], "t")


def test_tree_map_and_mismatch():
    assert tu.tree_map(lambda x, y: x + y, (1, [2]), (10, [20])) == (11, [22])
    with pytest.raises(ValueError):
        tu.tree_map(lambda x, y: x, (1, 2), [1, 2])


def test_leaf_paths():
    _, td = tu.tree_flatten({"w": [1, 2], "p": Point(3, 4)})
    assert tu.leaf_paths(td) == ["['p'].x", "['p'].y", "['w'][0]", "['w'][1]"]


def test_unflatten_wrong_count():
    _, td = tu.tree_flatten((1, 2))
    with pytest.raises(ValueError, match="2 leaves"):
        tu.tree_unflatten(td, [1])
