"""tf.while_loop's shape_invariants: loop variables whose dims change between iterations, in and
out of ef.function (one trace for every trip count), with TF's structure rules and errors."""
import numpy as np
import pytest

import eagerflow as tf


def _collect(n):
    def cond(i, acc):
        return i < n

    def body(i, acc):
        return i + 1, tf.concat([acc, tf.reshape(tf.cast(i, tf.float32), [1])], 0)

    return tf.while_loop(cond, body, (tf.constant(0), tf.zeros([0])),
                         shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))


def test_a_growing_loop_variable_eagerly_and_traced():
    i, acc = _collect(tf.constant(3))
    np.testing.assert_array_equal(acc.numpy(), [0, 1, 2])
    traced = tf.function(lambda n: _collect(n)[1])
    np.testing.assert_array_equal(traced(tf.constant(5)).numpy(), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(traced(tf.constant(1)).numpy(), [0])
    assert traced(tf.constant(0)).shape == (0,)
    assert traced.experimental_get_tracing_count() == 1


def test_rows_of_a_matrix_grow_with_list_invariants():
    @tf.function
    def doubling(x):
        return tf.while_loop(lambda m: tf.shape(m)[0] < 8, lambda m: [tf.concat([m, m * 2.0], 0)], [x],
                             shape_invariants=[[None, 2]])[0]

    out = doubling(tf.ones([1, 2]))
    np.testing.assert_array_equal(out.numpy()[:, 0], [1, 2, 2, 4, 2, 4, 4, 8])


def test_without_an_invariant_the_shape_must_stay_and_bad_invariants_are_errors():
    body = lambda x: tf.concat([x, x], 0)  # noqa: E731
    cond = lambda x: tf.size(x) < 8  # noqa: E731
    traced = tf.function(lambda x: tf.while_loop(cond, body, [x]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="shapes"):
        traced(tf.ones([2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape invariant"):
        tf.function(lambda x: tf.while_loop(cond, body, [x], shape_invariants=[[None, 1]]))(tf.ones([2]))
    with pytest.raises(ValueError, match="shape_invariants"):
        tf.while_loop(cond, body, [tf.ones([2]), tf.ones([2])], shape_invariants=[[None]])
