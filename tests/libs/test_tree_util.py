"""plait.tree_util / plait.tree against jax.tree_util behaviour (expected values were
recorded from JAX 0.10.2; JAX is not imported here)."""
import collections
import dataclasses

import numpy as np
import pytest

import plait
import plait.numpy as pnp
from plait import tree_util as tu
from plait.tree_util import SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey

P = collections.namedtuple("P", "x y")


def _tree():
    return {"a": [1, (2, 3)], "b": P(4, None), "c": tu.Partial(max, 5)}


def test_flatten_with_path_matches_jax():
    pairs, td = tu.tree_flatten_with_path(_tree())
    # recorded: jax.tree_util.tree_flatten_with_path of the same tree
    assert pairs == [((DictKey("a"), SequenceKey(0)), 1),
                     ((DictKey("a"), SequenceKey(1), SequenceKey(0)), 2),
                     ((DictKey("a"), SequenceKey(1), SequenceKey(1)), 3),
                     ((DictKey("b"), GetAttrKey("x")), 4),
                     ((DictKey("c"), FlattenedIndexKey(0), SequenceKey(0)), 5)]
    assert td == tu.tree_structure(_tree())
    assert tu.tree_leaves_with_path(_tree()) == pairs
    p = pairs[2][0]
    assert tu.keystr(p) == "['a'][1][1]"
    assert tu.keystr(p, simple=True, separator="/") == "a/1/1"
    assert repr(SequenceKey(0)) == "SequenceKey(idx=0)" and str(GetAttrKey("x")) == ".x"


def test_map_with_path_and_rest():
    t = {"w": [1.0, 2.0], "b": 3.0}
    out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y), t, t)
    assert out == {"w": [("['w'][0]", 2.0), ("['w'][1]", 4.0)], "b": ("['b']", 6.0)}
    out = plait.tree.map_with_path(lambda p, x: x, t,
                                   is_leaf=lambda p, x: isinstance(x, list),
                                   is_leaf_takes_path=True)
    assert out == t


def test_keyed_registration_and_dataclass():
    @tu.register_pytree_with_keys_class
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten_with_keys(self):
            return [(GetAttrKey("a"), self.a), (GetAttrKey("b"), self.b)], None

        @classmethod
        def tree_unflatten(cls, aux, kids):
            return cls(*kids)

    pairs = tu.tree_leaves_with_path(Box(1, [2]))
    assert pairs == [((GetAttrKey("a"),), 1), ((GetAttrKey("b"), SequenceKey(0)), 2)]
    b2 = tu.tree_map(lambda x: x * 10, Box(1, [2]))
    assert (b2.a, b2.b) == (10, [20])

    @tu.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: object
        y: object
        op: str = plait.tree.static(default="add")

    leaves, td = tu.tree_flatten(Op(1, 2, "mul"))
    assert leaves == [1, 2]
    assert tu.tree_unflatten(td, [3, 4]) == Op(3, 4, "mul")
    assert td != tu.tree_structure(Op(1, 2, "add"))
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Op(1, 2))] == [".x", ".y"]


def test_register_pytree_node_with_keys_func():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    tu.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, k: Pair(*k),
                            lambda p: (((DictKey("a"), p.a), (DictKey("b"), p.b)), None))
    assert [tu.keystr(k) for k, _ in tu.tree_leaves_with_path(Pair(1, 2))] == ["['a']", "['b']"]

    class Plain:
        def __init__(self, a):
            self.a = a

    tu.register_pytree_node(Plain, lambda p: ((p.a,), None), lambda _, k: Plain(*k))
    assert tu.tree_leaves_with_path(Plain(5)) == [((FlattenedIndexKey(0),), 5)]


def test_partial_through_jit_and_grad():
    f = tu.Partial(lambda a, x: pnp.sum(a * x * x), pnp.asarray([1.0, 2.0]))

    @plait.jit
    def run(fn, x):
        return fn(x)

    x = pnp.asarray([3.0, 4.0])
    assert float(run(f, x)) == 1 * 9 + 2 * 16
    g = plait.grad(lambda x: f(x))(x)
    np.testing.assert_allclose(np.asarray(g), [6.0, 16.0])
    assert tu.tree_leaves(tu.Partial(tu.Partial(max, 1), 2)) == [1, 2]


def test_reduce_transpose_queries():
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tu.tree_reduce(lambda a, b: a + b, [], 7) == 7
    assert plait.tree.reduce_associative(lambda a, b: a + b, [1, 2, 3]) == 6
    # recorded from jax.tree_util.tree_transpose
    out = tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure((0, 0, 0)),
                            [(1, 2, 3), (4, 5, 6)])
    assert out == ([1, 4], [2, 5], [3, 6])
    assert plait.tree.transpose(tu.tree_structure([0, 0]), None,
                                [{"a": 1}, {"a": 2}]) == {"a": [1, 2]}
    assert tu.tree_broadcast([1, {"a": 2}], [(1, 2), {"a": [3, 4]}]) == \
        [(1, 1), {"a": [2, 2]}]
    assert tu.all_leaves([1, 2]) and not tu.all_leaves([[1], 2]) \
        and not tu.all_leaves([None])
    assert tu.tree_all([True, (1, 2)]) and not plait.tree.all([True, {"a": 0}])
    assert tu.treedef_is_leaf(tu.tree_structure(1)) and tu.treedef_is_leaf(
        tu.tree_structure(None)) and not tu.treedef_is_leaf(tu.tree_structure([1]))
    td = tu.tree_structure((1, [2, 3]))
    assert tu.treedef_children(td) == [tu.tree_structure(1), tu.tree_structure([1, 2])]
    assert tu.treedef_tuple(tu.treedef_children(td)) == td
    assert tu.build_tree(td, [7, [8, 9]]) == (7, [8, 9])
    assert tu.flatten_one_level({"a": 1, "b": [2]}) == ([1, [2]], ("a", "b"))
    assert tu.flatten_one_level_with_keys({"a": 1}) == ([(DictKey("a"), 1)], ("a",))
    assert tu.is_tree_node([1]) and tu.is_tree_node(None) and not tu.is_tree_node(1)


def test_tree_namespace():
    t = {"a": 1, "b": (2, None)}
    leaves, td = plait.tree.flatten(t)
    assert leaves == [1, 2] and plait.tree.unflatten(td, [5, 6]) == {"a": 5, "b": (6, None)}
    assert plait.tree.leaves(t) == [1, 2] and plait.tree.structure(t) == td
    assert plait.tree.map(lambda x: -x, t) == {"a": -1, "b": (-2, None)}
    assert plait.tree.reduce(max, t) == 2
    assert [tu.keystr(p) for p, _ in plait.tree.leaves_with_path(t)] == ["['a']", "['b'][0]"]
    assert plait.tree.flatten_with_path(t)[1] == td
    with pytest.raises(ValueError):
        tu.build_tree(td, [1])
