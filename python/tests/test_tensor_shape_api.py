"""ef.TensorShape has TF's API, unknown rank included (reference values as TF 2.21 gives them)."""
import pickle

import pytest

import eagerflow as ef

T = ef.TensorShape


def test_known_shape_basics():
    s = T([2, None, 3])
    assert s.rank == 3 and s.ndims == 3
    assert s.as_list() == [2, None, 3]
    assert [d.value for d in s.dims] == [2, None, 3]
    assert s.dims[0].is_compatible_with(2) and not s.dims[0].is_compatible_with(5)
    assert s[1] is None and s[-1] == 3
    assert s[0:2] == T([2, None]) and isinstance(s[0:2], T)
    assert list(s) == [2, None, 3] and len(s) == 3
    assert repr(s) == "TensorShape([2, None, 3])" and str(s) == "(2, None, 3)"
    assert not s.is_fully_defined() and s.num_elements() is None
    assert T([2, 3]).num_elements() == 6 and T([]).num_elements() == 1
    assert T(3) == T([3])


def test_truth_is_known_rank():
    assert bool(T([])) and bool(T([0])) and bool(T([None]))
    assert not bool(T(None))


def test_unknown_rank():
    u = T(None)
    assert u.rank is None and u.ndims is None and u.dims is None
    assert repr(u) == "TensorShape(None)" and str(u) == "<unknown>"
    with pytest.raises(ValueError, match="unknown rank"):
        len(u)
    with pytest.raises(ValueError, match="unknown rank"):
        list(u)
    with pytest.raises(ValueError, match="unknown TensorShape"):
        u.as_list()
    assert u[0] is None
    assert u[1:3] == T([None, None])
    assert u[1:].rank is None
    assert not u.is_fully_defined() and u.num_elements() is None
    assert u == T(None) and u != T([1]) and T([1]) != u


def test_equality_with_sequences_and_hash():
    assert T([2, 3]) == [2, 3] and T([2, 3]) == (2, 3) and T([2, None]) == [2, None]
    assert not (T([2, 3]) != [2, 3])
    assert T([1, 2]) != "ab"
    assert hash(T([2, 3])) == hash(T([2, 3]))
    assert len({T([2, 3]), T([2, 3]), T(None), T(None)}) == 2


def test_merge_and_compatibility():
    s, u = T([2, None, 3]), T(None)
    assert s.merge_with([2, 4, 3]) == [2, 4, 3]
    with pytest.raises(ValueError, match="not compatible"):
        s.merge_with([2, 4])
    assert s.merge_with(u) == s and u.merge_with(s) == s
    assert s.is_compatible_with([2, 7, 3]) and not s.is_compatible_with([1, 7, 3])
    assert s.is_compatible_with(u) and u.is_compatible_with(s)
    with pytest.raises(ValueError, match="incompatible"):
        s.assert_is_compatible_with([1, 2, 3])
    assert s.most_specific_compatible_shape([2, 5, 4]) == [2, None, None]
    assert s.most_specific_compatible_shape([2, 5]).rank is None
    assert s.most_specific_common_supertype([T([2, 5, 3])]) == [2, None, 3]
    assert s.is_subtype_of(T([None, None, 3])) and not T([None, None, 3]).is_subtype_of(s)
    assert s.is_subtype_of(u) and not u.is_subtype_of(s)


def test_concatenate():
    s, u = T([2, None, 3]), T(None)
    assert s.concatenate([5]) == [2, None, 3, 5] and isinstance(s.concatenate([5]), T)
    assert s.concatenate(u).rank is None and u.concatenate(s).rank is None
    assert s + [1] == [2, None, 3, 1]
    assert [1] + s == [1, 2, None, 3] and isinstance([1] + s, T)
    assert (1,) + s == [1, 2, None, 3] and isinstance((1,) + s, T)


def test_rank_checks():
    s = T([2, None, 3])
    assert s.with_rank(3) is s
    with pytest.raises(ValueError, match="must have rank 2"):
        s.with_rank(2)
    assert T(None).with_rank(2) == [None, None]
    assert s.with_rank_at_least(2) is s
    with pytest.raises(ValueError, match="at least 4"):
        s.with_rank_at_least(4)
    with pytest.raises(ValueError, match="at most 2"):
        s.with_rank_at_most(2)
    s.assert_has_rank(3)
    with pytest.raises(ValueError, match="must have rank 2"):
        s.assert_has_rank(2)
    with pytest.raises(ValueError, match="same rank"):
        s.assert_same_rank([1])
    with pytest.raises(ValueError, match="not fully defined"):
        s.assert_is_fully_defined()


def test_bad_dims():
    with pytest.raises(TypeError, match="Dimension value must be integer"):
        T(["a"])
    with pytest.raises(TypeError, match="Dimension value must be integer"):
        T([1.5])
    with pytest.raises(ValueError, match="must be >= 0"):
        T([-1])
    assert T([ef.compat.v1.Dimension(3), ef.compat.v1.Dimension(None)]) == [3, None]


def test_pickle_keeps_unknown_rank():
    assert pickle.loads(pickle.dumps(T([2, None]))) == [2, None]
    assert pickle.loads(pickle.dumps(T(None))).rank is None


def test_tensor_shape_is_a_tensor_shape():
    s = ef.zeros([2, 3]).shape
    assert isinstance(s, T) and s == [2, 3] and s.dims[1].value == 3
    assert ef.constant(1.0).shape == [] and bool(ef.constant(1.0).shape)
