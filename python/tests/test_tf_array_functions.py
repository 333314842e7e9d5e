"""TF's array functions and small top-level names (issue 31): reverse, roll, split, unstack,
sequence_mask, searchsorted, boolean_mask, where with one argument, unique, and the helpers
(is_tensor, executing_eagerly, ensure_shape, truncatediv, histograms, assertions, as_dtype...)."""
import numpy as np
import pytest

import eagerflow as tf

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_reverse_roll_split_unstack_as_numpy():
    np.testing.assert_array_equal(tf.reverse(X, [1, 2]).numpy(), X[:, ::-1, ::-1])
    np.testing.assert_array_equal(tf.roll(X, shift=[1, -2], axis=[1, 2]).numpy(), np.roll(X, [1, -2], [1, 2]))
    np.testing.assert_array_equal(tf.roll(X, 2, axis=[0, 2]).numpy(), np.roll(X, [2, 2], [0, 2]))
    parts = tf.split(X, [1, -1], axis=2)
    np.testing.assert_array_equal(parts[1].numpy(), X[:, :, 1:])
    assert len(tf.split(X, 2, axis=2)) == 2
    with pytest.raises(ValueError):
        tf.split(X, 3, axis=2)
    rows = tf.unstack(X, axis=1)
    assert len(rows) == 3 and rows[0].shape == (2, 4)
    with pytest.raises(ValueError):
        tf.unstack(X, num=4, axis=1)
    traced = tf.function(lambda x: tf.concat(tf.split(tf.reverse(x, [0]), 2, axis=2), 0))(X)
    np.testing.assert_array_equal(traced.numpy(), np.concatenate(np.split(X[::-1], 2, axis=2), 0))


def test_sequence_mask_searchsorted():
    np.testing.assert_array_equal(tf.sequence_mask([1, 3, 2], 5).numpy(), np.arange(5) < np.array([[1], [3], [2]]))
    assert tf.sequence_mask([1, 3]).shape == (2, 3)
    assert tf.sequence_mask([1, 3], 4, dtype=tf.float32).dtype == tf.float32
    seq = np.array([[0.0, 3.0, 9.0, 9.0, 10.0], [1.0, 2.0, 3.0, 4.0, 5.0]])
    vals = np.array([[2.0, 4.0, 9.0], [0.0, 2.0, 6.0]])
    for side in ("left", "right"):
        want = np.stack([np.searchsorted(seq[i], vals[i], side=side) for i in range(2)])
        np.testing.assert_array_equal(tf.searchsorted(seq, vals, side=side).numpy(), want)
    assert tf.searchsorted(seq, vals).dtype == tf.int32


def test_value_dependent_functions():
    np.testing.assert_array_equal(tf.boolean_mask(X, X[:, :, 0] > 5).numpy(), X[X[:, :, 0] > 5])
    np.testing.assert_array_equal(tf.boolean_mask(X, np.array([True, False, True]), axis=1).numpy(), X[:, [0, 2]])
    np.testing.assert_array_equal(tf.where(X > 20).numpy(), np.argwhere(X > 20))
    assert tf.where(X > 20).dtype == tf.int64
    np.testing.assert_array_equal(tf.where(X > 5, X, 0.0).numpy(), np.where(X > 5, X, 0.0))
    y, idx = tf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
    np.testing.assert_array_equal(y.numpy(), [1, 2, 4, 7, 8])
    np.testing.assert_array_equal(idx.numpy(), [0, 0, 1, 2, 2, 2, 3, 4, 4])
    y, idx, count = tf.unique_with_counts([3, 1, 3])
    np.testing.assert_array_equal(count.numpy(), [2, 1])
    with pytest.raises(NotImplementedError):
        tf.function(lambda x: tf.boolean_mask(x, x > 3))(X)
    with pytest.raises(ValueError):
        tf.where(X > 1, X)


def test_small_top_level_names():
    assert tf.is_tensor(tf.constant(1.0)) and not tf.is_tensor(np.ones(2))
    assert tf.executing_eagerly()
    seen = []
    tf.function(lambda x: seen.append(tf.executing_eagerly()) or x)(tf.constant(1.0))
    assert seen == [False]
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.ensure_shape(tf.zeros([2, 3]), [2, 4])
    assert tf.ensure_shape(tf.zeros([2, 3]), [None, 3]).shape == (2, 3)
    np.testing.assert_array_equal(tf.truncatediv([7, -7], [2, 2]).numpy(), [3, -3])
    np.testing.assert_array_equal(tf.truncatemod([7, -7], [2, 2]).numpy(), [1, -1])
    np.testing.assert_array_equal(tf.histogram_fixed_width([-1.0, 0.0, 1.5, 2.0, 5.0], [0.0, 5.0], nbins=5).numpy(), [2, 1, 1, 0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.debugging.assert_equal(1, 2) if hasattr(tf, "debugging") else tf.assert_equal(tf.constant(1), 2)
    tf.assert_less(tf.constant([1, 2]), 3)
    with pytest.raises(ValueError):
        tf.assert_rank(tf.zeros([2]), 2)
    assert tf.as_dtype("float32") == tf.float32 and tf.as_dtype(np.float64) == tf.float64 and tf.double == tf.float64
    assert tf.as_dtype("complex64") == tf.complex64
    with pytest.raises(TypeError):
        tf.as_dtype("qint8")
    np.testing.assert_array_equal(tf.unravel_index([5, 7], [3, 4]).numpy(), [[1, 1], [1, 3]])
    assert tf.broadcast_static_shape(tf.TensorShape([2, 1]), tf.TensorShape([3])) == (2, 3)
    np.testing.assert_array_equal(tf.broadcast_dynamic_shape([2, 1], [1, 3]).numpy(), [2, 3])
    x = np.arange(12).reshape(3, 4)
    got = tf.reverse_sequence(x, [2, 4, 1], seq_axis=1, batch_axis=0).numpy()
    np.testing.assert_array_equal(got, [[1, 0, 2, 3], [7, 6, 5, 4], [8, 9, 10, 11]])
    with tf.control_dependencies([tf.constant(1)]):
        assert float(tf.identity(2.0)) == 2.0
    assert len(tf.identity_n([tf.constant(1), tf.constant(2)])) == 2
    # TF 2.21: float32's largest value below 2^31 (2^31 - 1 rounds up to 2^31 in float32).
    assert int(tf.saturate_cast(tf.constant(1e20), tf.int32).numpy()) == 2147483520
    assert int(tf.saturate_cast(tf.constant(1e20, tf.float64), tf.int32).numpy()) == 2 ** 31 - 1
    assert tf.UnconnectedGradients.ZERO.value == "zero"
