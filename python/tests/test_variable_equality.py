"""Variables compare by the variable they wrap: a layer's weights list equals its attributes
(as Keras' objects do), sets and dicts key them consistently, and distinct variables differ."""
import eagerflow as tf
from eagerflow import keras


def test_a_layers_weights_equal_its_attributes():
    layer = keras.layers.Dense(2)
    layer(tf.ones([1, 3]))
    assert layer.weights == [layer.kernel, layer.bias]
    assert layer.kernel in layer.trainable_weights
    assert layer.kernel != layer.bias
    assert len({layer.kernel, layer.weights[0], layer.bias}) == 2
    assert {layer.kernel: 1}[layer.weights[0]] == 1


def test_distinct_variables_and_other_values_are_not_equal():
    a, b = tf.Variable(1.0), tf.Variable(1.0)
    assert a != b and not (a == b)
    assert a == a
    assert (a == "x") is False
