"""The arguments of Keras' base Layer on the simple C++ layers: Flatten(input_shape=(28, 28)) as the
first layer of a Sequential (Keras 2's tutorials), trainable=False, dtype=."""
import numpy as np
import pytest

from eagerflow import keras

L = keras.layers


def test_flatten_with_input_shape_builds_the_sequential():
    m = keras.Sequential([L.Flatten(input_shape=(28, 28)), L.Dense(10)])
    assert [tuple(w.shape) for w in m.weights] == [(784, 10), (10,)]
    assert np.asarray(m(np.zeros((2, 28, 28), np.float32))).shape == (2, 10)


def test_trainable_false_freezes_the_layer():
    bn = L.BatchNormalization(trainable=False)
    m = keras.Sequential([L.Dense(4, input_shape=(3,)), bn, L.Dense(1)])
    assert bn.trainable is False and bn.trainable_weights == []
    before = [np.asarray(w) for w in bn.weights]
    m.compile(optimizer="sgd", loss="mse")
    m.fit(np.ones((8, 3), np.float32), np.zeros((8, 1), np.float32), epochs=1, verbose=0)
    gamma_beta = [np.asarray(w) for w in bn.weights][:2]
    for b, a in zip(before[:2], gamma_beta):
        np.testing.assert_array_equal(a, b)
    assert L.Dropout(0.5, trainable=False).trainable is False


@pytest.mark.parametrize("make", [lambda **k: L.Activation("relu", **k), lambda **k: L.Flatten(**k),
                                  lambda **k: L.Dropout(0.1, **k), lambda **k: L.MaxPooling2D(**k),
                                  lambda **k: L.LayerNormalization(**k)])
def test_dtype_policy_and_bad_arguments(make):
    assert make(dtype="float32").dtype_policy.name == "float32"
    with pytest.raises(ValueError, match="dtype"):
        make(dtype="float8")
    with pytest.raises(TypeError):
        make(kernel_initializr="zeros")
