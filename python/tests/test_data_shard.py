"""Dataset.shard: every num_shards-th element from index, with TF's argument errors."""
import numpy as np
import pytest

import eagerflow as ef


def _values(ds):
    return [np.asarray(x).tolist() for x in ds.as_numpy_iterator()]


@pytest.mark.parametrize("n,index", [(3, 0), (3, 1), (3, 2), (4, 3), (1, 0), (20, 5)])
def test_shard_takes_every_nth_element(n, index):
    assert _values(ef.data.Dataset.range(10).shard(n, index)) == list(range(10))[index::n]


def test_shards_partition_the_dataset():
    shards = [_values(ef.data.Dataset.range(11).shard(3, i)) for i in range(3)]
    assert sorted(sum(shards, [])) == list(range(11))


def test_tensor_arguments():
    ds = ef.data.Dataset.range(10).shard(ef.constant(4, ef.int64), ef.constant(2, ef.int64))
    assert _values(ds) == [2, 6]


def test_structured_elements_keep_their_structure():
    pairs = ef.data.Dataset.from_tensor_slices(([1, 2, 3, 4], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]))
    got = list(pairs.shard(2, 1).as_numpy_iterator())
    assert [int(a) for a, _ in got] == [2, 4]
    np.testing.assert_array_equal(np.stack([b for _, b in got]), [[3.0, 4.0], [7.0, 8.0]])
    assert pairs.shard(2, 1).element_spec == pairs.element_spec
    records = ef.data.Dataset.from_tensor_slices({"b": [1, 2, 3], "a": [4.0, 5.0, 6.0]})
    got = list(records.shard(2, 0).as_numpy_iterator())
    assert [sorted(g) for g in got] == [["a", "b"], ["a", "b"]]
    assert [int(g["b"]) for g in got] == [1, 3] and [float(g["a"]) for g in got] == [4.0, 6.0]


def test_shard_of_batches():
    assert _values(ef.data.Dataset.range(10).batch(4).shard(2, 1)) == [[4, 5, 6, 7]]


def test_bad_arguments_raise_tfs_errors():
    ds = ef.data.Dataset.range(10)
    with pytest.raises(ef.errors.InvalidArgumentError, match=r"Number of shards must be greater than zero \(currently num_shards = 0\)"):
        ds.shard(0, 0)
    with pytest.raises(ef.errors.InvalidArgumentError, match=r"Index must be between 0 and 2 \(currently index = 3\)"):
        ds.shard(3, 3)
    with pytest.raises(ef.errors.InvalidArgumentError, match=r"currently index = -1"):
        ds.shard(3, -1)
    with pytest.raises(ef.errors.FailedPreconditionError, match="SHARD_HINT"):
        ds.shard(-1, 0)
    with pytest.raises(TypeError, match="Cannot convert 2.5"):
        ds.shard(2.5, 0)
