"""tf.data's names: FixedLengthRecordDataset, Iterator (iter(dataset)), NumpyIterator,
DatasetSpec, IteratorSpec, Options/ThreadingOptions with Dataset.with_options/options, and the
cardinality constants."""
import gzip
import zlib

import numpy as np
import pytest

import eagerflow as ef


def _files(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"HH" + b"abcdefghij" + b"FFF")
    b.write_bytes(b"HH" + b"klmno" + b"FFF")
    return [str(a), str(b)]


def test_fixed_length_records_with_header_and_footer(tmp_path):
    ds = ef.data.FixedLengthRecordDataset(_files(tmp_path), 5, header_bytes=2, footer_bytes=3)
    assert ds.element_spec == ef.TensorSpec([], ef.string)
    assert int(ds.cardinality()) == ef.data.UNKNOWN_CARDINALITY
    assert list(ds.as_numpy_iterator()) == [b"abcde", b"fghij", b"klmno"]


@pytest.mark.parametrize("kind,compress", [("GZIP", gzip.compress), ("ZLIB", zlib.compress)])
def test_fixed_length_records_compressed(tmp_path, kind, compress):
    path = tmp_path / "c.z"
    body = bytes(range(256)) * 40  # records across the reader's chunks
    path.write_bytes(compress(b"H" * 7 + body + b"F"))
    ds = ef.data.FixedLengthRecordDataset(str(path), 16, header_bytes=7, footer_bytes=1, compression_type=kind)
    got = list(ds.as_numpy_iterator())
    assert got == [body[i:i + 16] for i in range(0, len(body), 16)]


def test_fixed_length_errors(tmp_path):
    files = _files(tmp_path)
    with pytest.raises(ef.errors.InvalidArgumentError, match="body length 10 bytes, which is not an exact multiple"):
        list(ef.data.FixedLengthRecordDataset(files[0], 4, header_bytes=2, footer_bytes=3))
    with pytest.raises(ef.errors.NotFoundError):
        list(ef.data.FixedLengthRecordDataset(str(tmp_path / "missing"), 4))
    with pytest.raises(ValueError):
        ef.data.FixedLengthRecordDataset(files, 0)


def test_iterator_type_and_get_next():
    it = iter(ef.data.Dataset.range(2))
    assert isinstance(it, ef.data.Iterator)
    assert it.element_spec == ef.TensorSpec([], ef.int64)
    assert int(it.get_next()) == 0
    opt = it.get_next_as_optional()
    assert bool(opt.has_value()) and int(opt.get_value()) == 1
    empty = it.get_next_as_optional()
    assert not bool(empty.has_value())
    assert empty.element_spec == ef.TensorSpec([], ef.int64)
    with pytest.raises(ef.errors.InvalidArgumentError, match="does not have a value"):
        empty.get_value()
    with pytest.raises(ef.errors.OutOfRangeError):
        it.get_next()
    with pytest.raises(StopIteration):
        next(it)


def test_numpy_iterator():
    ds = ef.data.Dataset.from_tensor_slices((np.array([1, 2], np.int32), np.array([0.5, 1.5], np.float32)))
    n = ds.as_numpy_iterator()
    assert isinstance(n, ef.data.NumpyIterator) and iter(n) is n
    first = next(n)
    assert isinstance(first[0], np.integer) and first == (1, 0.5)
    assert n.next() == (2, 1.5)
    with pytest.raises(StopIteration):
        next(n)
    assert repr(n).startswith("NumpyIterator(iterator=")


def test_dataset_and_iterator_specs():
    spec = ef.data.DatasetSpec(ef.TensorSpec([], ef.int64))
    ds = ef.data.Dataset.range(3)
    assert ef.data.DatasetSpec.from_value(ds) == spec
    assert spec.is_compatible_with(ds)
    assert not spec.is_compatible_with(ef.data.Dataset.from_tensor_slices(np.zeros((2, 3), np.float32)))
    assert spec.value_type is ef.data.Dataset
    assert repr(spec).endswith(", TensorShape([]))")
    it_spec = ef.data.IteratorSpec(ef.TensorSpec([], ef.int64))
    assert ef.data.IteratorSpec.from_value(iter(ds)) == it_spec
    assert isinstance(iter(ds), it_spec.value_type)


def test_options_fields_types_and_merge():
    o = ef.data.Options()
    assert o.deterministic is None and o.threading.private_threadpool_size is None
    o.deterministic = False
    o.threading.private_threadpool_size = 4
    assert o.experimental_threading is o.threading  # TF's deprecated alias
    with pytest.raises(AttributeError, match="Cannot set the property foo on Options"):
        o.foo = 1
    with pytest.raises(TypeError, match='Property "deterministic" must be of type'):
        o.deterministic = "yes"
    with pytest.raises(TypeError):
        o.threading.max_intra_op_parallelism = True
    p = ef.data.Options()
    p.experimental_slack = True
    p.deterministic = True
    m = o.merge(p)
    assert (m.deterministic, m.experimental_slack, m.threading.private_threadpool_size) == (True, True, 4)
    assert ef.data.Options() == ef.data.Options() and o != ef.data.Options()
    t = ef.data.ThreadingOptions()
    t.max_intra_op_parallelism = 1
    assert t.max_intra_op_parallelism == 1


def test_with_options_kept_through_transformations():
    o = ef.data.Options()
    o.deterministic = False
    base = ef.data.Dataset.range(5)
    ds = base.with_options(o)
    assert base.options() == ef.data.Options()  # the original is unchanged
    assert ds.options().deterministic is False
    derived = ds.map(lambda x: x * 2).batch(2)
    assert derived.options().deterministic is False
    assert [b.tolist() for b in derived.as_numpy_iterator()] == [[0, 2], [4, 6], [8]]
    q = ef.data.Options()
    q.experimental_slack = True
    both = ds.with_options(q).options()
    assert both.deterministic is False and both.experimental_slack is True
    with pytest.raises(TypeError):
        base.with_options({"deterministic": False})


def test_cardinality_constants():
    assert ef.data.INFINITE_CARDINALITY == -1 and ef.data.UNKNOWN_CARDINALITY == -2
    assert int(ef.data.Dataset.range(3).repeat().cardinality()) == ef.data.INFINITE_CARDINALITY
    assert int(ef.data.Dataset.range(3).filter(lambda x: x > 0).cardinality()) == ef.data.UNKNOWN_CARDINALITY
    assert int(ef.data.Dataset.range(3).cardinality()) == 3


def test_options_of_dropped_datasets_are_let_go():
    from eagerflow import _data_options
    o = ef.data.Options()
    o.deterministic = True
    kept = ef.data.Dataset.range(2).with_options(o)
    for _ in range(20):
        ef.data.Dataset.range(2).with_options(o)
    assert len(_data_options._by_dataset) <= 3  # kept, and the last ones made
    assert kept.options().deterministic is True


def test_experimental_single_element_structure_and_optional():
    E = ef.data.experimental
    assert int(E.get_single_element(ef.data.Dataset.range(1))) == 0
    assert int(ef.data.Dataset.from_tensors(ef.constant(7)).get_single_element()) == 7
    with pytest.raises(ef.errors.InvalidArgumentError, match="more than one element"):
        E.get_single_element(ef.data.Dataset.range(2))
    with pytest.raises(ef.errors.InvalidArgumentError, match="Dataset was empty"):
        ef.data.Dataset.range(0).get_single_element()
    ds = ef.data.Dataset.range(1)
    assert E.get_structure(ds) == E.get_structure(iter(ds)) == ef.TensorSpec([], ef.int64)
    with pytest.raises(TypeError):
        E.get_structure(3)
    it = iter(ds)
    assert bool(E.get_next_as_optional(it).has_value()) and not bool(E.get_next_as_optional(it).has_value())
    assert isinstance(E.Optional.from_value(ef.constant(1.0)), E.Optional)
    assert int(E.cardinality(ds)) == 1
    assert (E.AUTOTUNE, E.INFINITE_CARDINALITY, E.UNKNOWN_CARDINALITY) == (ef.data.AUTOTUNE, -1, -2)


def test_experimental_from_list_and_enumerate():
    E = ef.data.experimental
    ds = E.from_list([(1, "a"), (2, "b")])
    assert ds.element_spec == (ef.TensorSpec([], ef.int32), ef.TensorSpec([], ef.string))
    assert list(ds.as_numpy_iterator()) == [(1, b"a"), (2, b"b")]
    rows = list(E.from_list([{"a": [1.0, 2.0]}, {"a": [3.0, 4.0]}]).as_numpy_iterator())
    np.testing.assert_array_equal(rows[1]["a"], [3.0, 4.0])
    with pytest.raises(ValueError, match="should not be empty"):
        E.from_list([])
    with pytest.raises(ValueError, match="same structure"):
        E.from_list([1, (1, 2)])
    assert list(ef.data.Dataset.range(3).apply(E.enumerate_dataset(5)).as_numpy_iterator()) == [(5, 0), (6, 1), (7, 2)]
    with pytest.raises(TypeError, match="must return a `tf.data.Dataset`"):
        ef.data.Dataset.range(3).apply(lambda d: 3)


def test_experimental_tfrecord_writer_and_option_enums(tmp_path):
    E = ef.data.experimental
    path = str(tmp_path / "r.tfrecord")
    assert E.TFRecordWriter(path).write(ef.data.Dataset.from_tensor_slices(["a", "bc"])) is None
    assert list(ef.data.TFRecordDataset(path).as_numpy_iterator()) == [b"a", b"bc"]
    with pytest.raises(TypeError, match="scalar `tf.string` elements"):
        E.TFRecordWriter(path).write(ef.data.Dataset.range(3))
    o = ef.data.Options()
    o.experimental_distribute.auto_shard_policy = E.AutoShardPolicy.DATA
    o.autotune.autotune_algorithm = E.AutotuneAlgorithm.HILL_CLIMB
    assert int(o.experimental_distribute.auto_shard_policy) == 2 and int(E.AutoShardPolicy.OFF) == -1
    with pytest.raises(TypeError):
        o.experimental_distribute.auto_shard_policy = 2  # TF wants the enum
    from eagerflow.data.experimental import ExternalStatePolicy
    o.experimental_external_state_policy = ExternalStatePolicy.FAIL
    assert o.experimental_external_state_policy == ExternalStatePolicy.FAIL
