"""Indexing with a tensor whose value exists only when the graph runs (x[i], x[i, :], x[:, -i]
inside ef.function, as AutoGraph's loops index), and tf.shape / tf.size's int32 default."""
import numpy as np
import pytest

import eagerflow as tf


def test_symbolic_scalar_indices_select_like_python_ints():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    @tf.function
    def pick(t, i, j):
        return t[i], t[1, j], t[:, j, 1:3], t[i, :, -1], t[-i]

    for i, j in [(0, 1), (1, 2), (1, -1)]:
        got = pick(tf.constant(x), tf.constant(i), tf.constant(j))
        want = (x[i], x[1, j], x[:, j, 1:3], x[i, :, -1], x[-i])
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
    assert pick.experimental_get_tracing_count() == 1


def test_a_loop_indexes_with_its_counter():
    @tf.function
    def running(xs):
        total = tf.constant(0.0)
        for i in tf.range(tf.shape(xs)[0]):
            total += xs[i] * tf.cast(i, tf.float32)
        return total

    assert running(tf.constant([1.0, 2.0, 3.0])).numpy() == 8.0


def test_bad_symbolic_indices_are_clear_errors():
    @tf.function
    def vector_index(t, i):
        return t[i, 0]

    with pytest.raises(TypeError, match="indices"):
        vector_index(tf.zeros([3, 3]), tf.constant([0, 1]))

    @tf.function
    def out_of_range(t, i):
        return t[i]

    with pytest.raises(tf.errors.InvalidArgumentError):
        out_of_range(tf.zeros([3]), tf.constant(5))


def test_shape_and_size_are_int32_by_default():
    x = tf.zeros([2, 3])
    assert tf.shape(x).dtype == tf.int32 and tf.shape(x).numpy().tolist() == [2, 3]
    assert tf.size(x).dtype == tf.int32 and tf.size(x).numpy() == 6
    assert tf.shape(x, out_type=tf.int64).dtype == tf.int64
    with pytest.raises(TypeError):
        tf.shape(x, out_type=tf.float32)


def test_clear_session_restarts_layer_names():
    tf.keras.backend.clear_session()
    first = tf.keras.layers.Dense(2)
    second = tf.keras.layers.Dense(2)
    assert (first.name, second.name) == ("dense", "dense_1")
    tf.keras.backend.clear_session()
    assert tf.keras.layers.Dense(2).name == "dense"


def test_layers_autocast_floating_inputs_to_their_compute_dtype():
    import numpy as np
    layer = tf.keras.layers.Dense(3)
    out = layer(np.ones((2, 4)))  # a float64 NumPy batch, float32 weights: Keras casts the input
    assert out.dtype == tf.float32 and out.shape == (2, 3)
    model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)])
    assert model(np.ones((1, 2, 2)) / 3.0).dtype == tf.float32
    np.testing.assert_allclose(layer(np.full((1, 4), 0.5)).numpy(), layer(np.full((1, 4), 0.5, np.float32)).numpy())
