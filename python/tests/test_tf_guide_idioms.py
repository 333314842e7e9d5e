"""Idioms of TensorFlow's guides that stopped them (issue 31): gradients of a dict of targets,
pickling and copying tensors, Dataset.from_generator with args and the older output_types, and
as_numpy_iterator's NumPy scalars."""
import copy
import pickle

import numpy as np
import pytest

import eagerflow as tf


def test_gradient_of_a_structure_of_targets_adds_up():
    x = tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        y0, y1 = x ** 2, 1 / x
    np.testing.assert_allclose(tape.gradient({"y0": y0, "y1": y1}, x).numpy(), 6 - 1 / 9, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient([y0, [y1]], x).numpy(), 6 - 1 / 9, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient({"a": y0, "b": y1}, x, output_gradients={"a": 2.0, "b": 0.0}).numpy(), 12.0, rtol=1e-6)


def test_tensors_pickle_and_copy_as_values():
    t = tf.constant([[1.0, 2.0]], tf.float64)
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype == tf.float64
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    assert copy.copy(t) is t and copy.deepcopy({"k": [t]})["k"][0] is t


def test_from_generator_args_and_output_types():
    def count(n, scale):
        for i in range(int(n)):
            yield (i * float(scale),)
    ds = tf.data.Dataset.from_generator(count, args=(3, tf.constant(2.0)),
                                        output_signature=(tf.TensorSpec(shape=(), dtype=tf.float32),))
    assert [e[0] for e in ds.as_numpy_iterator()] == [0.0, 2.0, 4.0]
    first = next(iter(ds.as_numpy_iterator()))[0]
    assert isinstance(first, np.float32)  # a NumPy scalar, not a 0-d array
    old = tf.data.Dataset.from_generator(lambda: iter([[1, 2], [3, 4]]), output_types=tf.int32, output_shapes=(2,))
    assert [list(e) for e in old.as_numpy_iterator()] == [[1, 2], [3, 4]]
    with pytest.raises(TypeError):
        tf.data.Dataset.from_generator(lambda: iter([1]))
