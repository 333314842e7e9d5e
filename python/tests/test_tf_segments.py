"""tf.math's segment reductions, bincount, confusion_matrix, argmin, floordiv/floormod (issue 31):
against NumPy loops, eager == traced, gradients, TF's empty-segment values and errors."""
import numpy as np
import pytest

import eagerflow as tf

DATA = np.array([[1.0, -2.0], [3.0, 4.0], [-5.0, 6.0], [0.5, 0.0], [2.0, -1.0]])
IDS = np.array([2, 0, 2, -1, 0])


def reference(kind, data, ids, n):
    out = []
    for s in range(n):
        rows = data[ids == s]
        if len(rows) == 0:
            empty = {"sum": 0.0, "mean": 0.0, "sqrt_n": 0.0, "prod": 1.0,
                     "max": np.finfo(data.dtype).min, "min": np.finfo(data.dtype).max}[kind]
            out.append(np.full(data.shape[1:], empty))
            continue
        out.append({"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0), "min": rows.min(0), "prod": rows.prod(0),
                    "sqrt_n": rows.sum(0) / np.sqrt(len(rows))}[kind])
    return np.stack(out)


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod", "sqrt_n"])
def test_unsorted_segments_as_numpy(kind):
    fn = getattr(tf.math, "unsorted_segment_" + kind)
    eager = fn(DATA, IDS, num_segments=4).numpy()
    traced = tf.function(lambda d, i: fn(d, i, 4))(DATA, IDS).numpy()
    np.testing.assert_array_equal(eager, traced)
    np.testing.assert_allclose(eager, reference(kind, DATA, IDS, 4), rtol=1e-12)


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
def test_sorted_segments_leave_empty_segments_zero(kind):
    ids = np.array([0, 0, 2, 2, 2])
    got = getattr(tf.math, "segment_" + kind)(DATA, ids).numpy()
    want = reference(kind, DATA, ids, 3)
    want[1] = 0.0
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(ValueError, match="sorted"):
        getattr(tf.math, "segment_" + kind)(DATA, np.array([0, 2, 1, 2, 2]))


def test_segment_errors_and_gradients():
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_segments"):
        tf.math.unsorted_segment_sum(DATA, np.array([0, 1, 5, 0, 0]), 3)
    with pytest.raises(ValueError):
        tf.math.unsorted_segment_sum(DATA, np.array([0, 1]), 3)
    with pytest.raises(NotImplementedError):
        tf.function(lambda d, i: tf.math.segment_sum(d, i))(DATA, np.array([0, 0, 1, 1, 1]))
    v = tf.Variable(DATA)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.math.unsorted_segment_mean(v, IDS, 3) * tf.constant([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], tf.float64))
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [[1.5, 1.5], [0.5, 0.5], [1.5, 1.5], [0, 0], [0.5, 0.5]])


def test_bincount_confusion_argmin_floordiv():
    np.testing.assert_array_equal(tf.math.bincount([1, 1, 3, 0]).numpy(), [1, 2, 0, 1])
    assert tf.math.bincount([1, 1, 3]).dtype == tf.int32
    np.testing.assert_array_equal(tf.math.bincount([1, 1, 3], minlength=6).numpy(), [0, 2, 0, 1, 0, 0])
    np.testing.assert_array_equal(tf.math.bincount([1, 1, 3], maxlength=2).numpy(), [0, 2])
    np.testing.assert_allclose(tf.math.bincount([0, 2, 2], weights=[0.5, 1.0, 2.0]).numpy(), [0.5, 0.0, 3.0])
    cm = tf.math.confusion_matrix([0, 1, 2, 2], [0, 2, 2, 1], num_classes=3).numpy()
    np.testing.assert_array_equal(cm, [[1, 0, 0], [0, 0, 1], [0, 1, 1]])
    assert tf.math.confusion_matrix([0, 1], [1, 1]).shape == (2, 2)
    x = np.array([[3.0, -1.0, 2.0], [0.0, 5.0, -7.0]])
    np.testing.assert_array_equal(tf.argmin(x).numpy(), np.argmin(x, 0))
    np.testing.assert_array_equal(tf.math.argmin(x, axis=1).numpy(), np.argmin(x, 1))
    assert tf.math.argmin(x, 1, output_type=tf.int32).dtype == tf.int32
    a, b = np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])
    np.testing.assert_array_equal(tf.math.floordiv(a, b).numpy(), a // b)
    np.testing.assert_array_equal(tf.math.floormod(a, b).numpy(), a % b)
    np.testing.assert_allclose(tf.math.floormod(np.array([5.5, -5.5]), 2.0).numpy(), np.mod([5.5, -5.5], 2.0))
    np.testing.assert_allclose(tf.math.softsign(np.array([-3.0, 1.0])).numpy(), [-0.75, 0.5])
