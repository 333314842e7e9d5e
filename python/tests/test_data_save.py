"""Dataset.save / Dataset.load and tf.data.experimental.save / load (python/eagerflow/_data_save.py)."""
import os

import numpy as np
import pytest

import eagerflow as tf
from eagerflow import errors


def as_lists(ds):
    out = []
    for e in ds.as_numpy_iterator():
        if isinstance(e, tuple):
            out.append(tuple(np.asarray(x).tolist() for x in e))
        elif isinstance(e, dict):
            out.append({k: np.asarray(v).tolist() for k, v in e.items()})
        else:
            out.append(np.asarray(e).tolist())
    return out


def test_round_trip_of_tuples_dicts_and_strings(tmp_path):
    images = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    cases = [tf.data.Dataset.from_tensor_slices((images, np.array([b"a", b"bc", b"", b"d"]))),
             tf.data.Dataset.from_tensor_slices({"x": images, "y": np.arange(4, dtype=np.int32)}).batch(3),
             tf.data.Dataset.range(7)]
    for i, ds in enumerate(cases):
        path = str(tmp_path / f"d{i}")
        ds.save(path)
        loaded = tf.data.Dataset.load(path)
        assert loaded.element_spec == ds.element_spec
        assert as_lists(loaded) == as_lists(ds)


def test_dynamic_shapes_and_gzip(tmp_path):
    ds = tf.data.Dataset.from_generator(lambda: (np.arange(n) for n in range(1, 5)),
                                        output_signature=tf.TensorSpec([None], tf.int64))
    path = str(tmp_path / "g")
    tf.data.experimental.save(ds, path, compression="GZIP")
    loaded = tf.data.experimental.load(path)
    assert as_lists(loaded) == [list(range(n)) for n in range(1, 5)]
    raw = open(tmp_path / "g" / "shard_0.tfrecord", "rb").read()
    assert raw[:2] == b"\x1f\x8b"  # a gzip stream


def test_shards_read_round_robin(tmp_path):
    ds = tf.data.Dataset.range(10)
    path = str(tmp_path / "s")
    ds.save(path, shard_func=lambda x: x % 2)
    # TF's default reader_func: the shards interleaved one element at a time (cycle: the CPUs)
    loaded = as_lists(tf.data.Dataset.load(path))
    if (os.cpu_count() or 1) >= 2:
        assert loaded == list(range(10))
    else:
        assert loaded == [0, 2, 4, 6, 8, 1, 3, 5, 7, 9]


def test_save_again_replaces(tmp_path):
    path = str(tmp_path / "r")
    tf.data.Dataset.range(10).save(path, shard_func=lambda x: x % 4)
    tf.data.Dataset.range(3).save(path)
    assert as_lists(tf.data.Dataset.load(path)) == [0, 1, 2]


def test_errors(tmp_path):
    with pytest.raises(errors.NotFoundError, match="no saved dataset"):
        tf.data.Dataset.load(str(tmp_path / "missing"))
    ds = tf.data.Dataset.range(3)
    with pytest.raises(ValueError, match="compression"):
        ds.save(str(tmp_path / "c"), compression="SNAPPY")
    with pytest.raises(NotImplementedError, match="checkpoint_args"):
        ds.save(str(tmp_path / "c"), checkpoint_args={})
    ds.save(str(tmp_path / "ok"))
    with pytest.raises(errors.InvalidArgumentError, match="does not match"):
        tf.data.Dataset.load(str(tmp_path / "ok"), element_spec=tf.TensorSpec([], tf.float32))
    with pytest.raises(NotImplementedError, match="reader_func"):
        tf.data.Dataset.load(str(tmp_path / "ok"), reader_func=lambda d: d)
    with pytest.raises(errors.InvalidArgumentError, match="negative shard"):
        ds.save(str(tmp_path / "neg"), shard_func=lambda x: x - 5)


def test_loaded_dataset_in_a_pipeline_and_its_iterator_checkpoint(tmp_path):
    path = str(tmp_path / "p")
    tf.data.Dataset.range(12).save(path)
    loaded = tf.data.Dataset.load(path, element_spec=tf.TensorSpec([], tf.int64))
    it = iter(loaded.map(lambda x: x * 2).batch(5))
    ckpt = tf.train.Checkpoint(iterator=it)
    next(it)
    saved = ckpt.save(str(tmp_path / "ck"))
    rest = as_lists(tf.data.Dataset.range(12).map(lambda x: x * 2).batch(5))[1:]
    next(it)
    ckpt.restore(saved)
    assert [x.numpy().tolist() for x in it] == rest
