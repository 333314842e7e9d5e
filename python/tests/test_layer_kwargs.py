"""Keyword arguments of the C++ layers from Python: Keras' names reach the layer, a misspelt or
unknown one is a TypeError (as Keras), never dropped silently."""
import numpy as np
import pytest

import eagerflow as ef

L = ef.keras.layers


def test_unknown_keyword_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="Dense.*kernel_initalizer"):
        L.Dense(3, kernel_initalizer="zeros")
    with pytest.raises(TypeError, match="Conv2D.*strides2"):
        L.Conv2D(4, 3, strides2=2)


def test_conv2d_initializers_are_used():
    conv = L.Conv2D(4, 3, kernel_initializer="zeros", bias_initializer="ones")
    y = conv(ef.Tensor(np.random.default_rng(0).normal(size=(2, 5, 5, 3)).astype(np.float32)))
    np.testing.assert_array_equal(conv.kernel.numpy(), np.zeros((3, 3, 3, 4), np.float32))
    np.testing.assert_array_equal(y.numpy(), np.ones((2, 3, 3, 4), np.float32))


def test_unknown_initializer_name_is_an_error():
    with pytest.raises(ValueError, match="unknown initializer 'he_nromal'"):
        L.Dense(3, kernel_initializer="he_nromal")


def test_base_layer_keywords():
    d = L.Dense(3, trainable=False)
    d(ef.Tensor(np.ones((1, 2), np.float32)))
    assert d.trainable_weights == [] and len(d.non_trainable_weights) == 2
    with pytest.raises(ValueError, match="float32"):
        L.Dense(3, dtype="int32")


def test_input_shape_on_the_first_layer_builds_a_sequential():
    model = ef.keras.Sequential([L.Dense(5, input_shape=(4,)), L.Dense(2)])
    assert model.built
    assert [tuple(w.shape) for w in model.weights] == [(4, 5), (5,), (5, 2), (2,)]
    model2 = ef.keras.Sequential([L.Dense(5, input_dim=7)])
    assert tuple(model2.weights[0].shape) == (7, 5)
