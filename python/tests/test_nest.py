"""tf.nest: flatten / pack / map over nested structures with TF's order and errors (issue 32)."""
import collections

import numpy as np
import pytest

import eagerflow as tf

Point = collections.namedtuple("Point", ["y", "x"])


def test_flatten_order_is_tfs():
    s = {"b": 1, "a": [2, (3, 4)], "c": Point(5, 6)}
    assert tf.nest.flatten(s) == [2, 3, 4, 1, 5, 6]  # dicts by sorted key, namedtuples by field
    assert tf.nest.flatten(None) == [None]
    assert tf.nest.flatten("ab") == ["ab"]  # strings are leaves
    assert tf.nest.flatten({1, 2}) == [{1, 2}]  # sets too
    assert tf.nest.flatten([[], {}, ()]) == []
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    assert tf.nest.flatten(od) == [2, 1]  # sorted even for an OrderedDict
    t = tf.constant([1, 2])
    assert tf.nest.flatten(t)[0] is t


def test_flatten_refuses_unsortable_keys():
    with pytest.raises(TypeError):
        tf.nest.flatten({1: 1, "a": 2})


def test_pack_sequence_as_round_trips():
    s = {"b": 1, "a": [2, 3], "p": Point(4, 5)}
    packed = tf.nest.pack_sequence_as(s, [10, 20, 30, 40, 50])
    assert packed == {"b": 30, "a": [10, 20], "p": Point(40, 50)} and isinstance(packed["p"], Point)
    od = tf.nest.pack_sequence_as(collections.OrderedDict([("b", 1), ("a", 2)]), [10, 20])
    assert list(od.items()) == [("b", 20), ("a", 10)] and isinstance(od, collections.OrderedDict)
    dd = tf.nest.pack_sequence_as(collections.defaultdict(list, {"z": 1, "y": 2}), [5, 6])
    assert isinstance(dd, collections.defaultdict) and dd == {"z": 6, "y": 5} and dd["new"] == []
    assert tf.nest.pack_sequence_as(1, [5]) == 5
    assert tf.nest.pack_sequence_as([[], {}, (1,)], [9]) == [[], {}, (9,)]


def test_pack_sequence_as_errors():
    with pytest.raises(ValueError, match="Structure had 3 atoms, but flat_sequence had 2 items"):
        tf.nest.pack_sequence_as({"b": 1, "a": [2, 3]}, [1, 2])
    with pytest.raises(TypeError, match="Attempted to pack value"):
        tf.nest.pack_sequence_as([1, 2], 5)
    with pytest.raises(ValueError, match="The target structure is of type"):
        tf.nest.pack_sequence_as(1, [5, 6])


def test_map_structure():
    assert tf.nest.map_structure(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)]) == [11, (22, 33)]
    assert tf.nest.map_structure(lambda v: v * 2, {"b": 1, "a": Point(2, 3)}) == {"b": 2, "a": Point(4, 6)}
    # check_types=False lets a list line up with a tuple; the first structure's types win.
    assert tf.nest.map_structure(lambda x, y: x + y, [1, (2, 3)], [10, [20, 30]], check_types=False) == [11, (22, 33)]
    out = tf.nest.map_structure(lambda t: t * 2, {"w": tf.constant([1.0, 2.0])})
    np.testing.assert_array_equal(out["w"].numpy(), [2.0, 4.0])


def test_map_structure_errors():
    with pytest.raises(TypeError, match="don't have the same sequence type"):
        tf.nest.map_structure(lambda x, y: x + y, [1, (2, 3)], [10, [20, 30]])
    with pytest.raises(ValueError, match="Only valid keyword arguments are `check_types` and `expand_composites`"):
        tf.nest.map_structure(lambda x: x, [1], foo=1)
    with pytest.raises(ValueError, match="Must provide at least one structure"):
        tf.nest.map_structure(lambda x: x)
    with pytest.raises(TypeError, match="func must be callable"):
        tf.nest.map_structure(3, [1])


def test_assert_same_structure():
    tf.nest.assert_same_structure([1, (2, {"a": 3})], [4, (5, {"a": 6})])
    tf.nest.assert_same_structure({"a": 1}, collections.OrderedDict(a=1))  # mappings line up
    Twin = collections.namedtuple("Point", ["y", "x"])
    tf.nest.assert_same_structure(Point(1, 2), Twin(1, 2))  # same name and fields
    with pytest.raises(ValueError, match='Substructure "type=list str=\\[2\\]" is a sequence, while substructure'):
        tf.nest.assert_same_structure([1, [2]], [1, 2])
    with pytest.raises(ValueError, match="don't have the same number of elements"):
        tf.nest.assert_same_structure([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="don't have the same set of keys"):
        tf.nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(TypeError, match="don't have the same sequence type"):
        tf.nest.assert_same_structure((1, 2), [1, 2])
    with pytest.raises(TypeError, match="don't have the same sequence type"):
        tf.nest.assert_same_structure(Point(1, 2), (1, 2))
    tf.nest.assert_same_structure((1, 2), [1, 2], check_types=False)
    with pytest.raises(ValueError) as info:
        tf.nest.assert_same_structure([1, [2]], [1, 2])
    assert "Entire first structure:\n[., [.]]\nEntire second structure:\n[., .]" in str(info.value)


def test_is_nested():
    got = [tf.nest.is_nested(x) for x in [1, [], (), {}, "a", Point(1, 2), None, {1}, tf.constant([1])]]
    assert got == [False, True, True, True, False, True, False, False, False]


def test_structures_of_tensors_under_function():
    @tf.function
    def f(d):
        flat = tf.nest.flatten(d)
        return tf.nest.pack_sequence_as(d, [t * 2.0 for t in flat])
    d = {"b": tf.constant(1.0), "a": tf.constant(2.0)}
    out = f(d)
    assert float(out["a"]) == 4.0 and float(out["b"]) == 2.0


def test_composites_are_leaves_and_expanding_them_is_refused():
    sp = tf.sparse.SparseTensor(indices=[[0, 0]], values=[1.0], dense_shape=[2, 2])
    assert tf.nest.flatten([sp, 1])[0] is sp  # a leaf, as TF's default
    with pytest.raises(NotImplementedError, match="expand_composites=True on a SparseTensor"):
        tf.nest.flatten([sp], expand_composites=True)
    with pytest.raises(NotImplementedError, match="expand_composites"):
        tf.nest.map_structure(lambda x: x, [sp], expand_composites=True)
    assert tf.nest.flatten([1, 2], expand_composites=True) == [1, 2]
