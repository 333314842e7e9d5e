"""Layer.add_weight with Keras 3's arguments in layers and models written in Python: the name
optional, (shape, initializer, dtype) positionally, regularizer into the layer's losses, and
eagerflow's add_weight(name, shape, ...) still taking the name first."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


class _Linear(keras.layers.Layer):
    def __init__(self, units=2, regularizer=None, **kwargs):
        super().__init__(**kwargs)
        self.units, self.regularizer = units, regularizer

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones", trainable=True,
                                 regularizer=self.regularizer)
        self.b = self.add_weight(shape=(self.units,), initializer="zeros")

    def call(self, x):
        return ef.matmul(x, self.w) + self.b


def test_unnamed_weights_get_keras_default_names():
    layer = _Linear(name="lin")
    out = layer(np.ones((1, 3), np.float32))
    np.testing.assert_allclose(out.numpy(), [[3.0, 3.0]])
    assert [v.path for v in layer.weights] == ["lin/variable", "lin/variable_1"]
    assert [v.name for v in layer.weights] == ["variable", "variable_1"]  # Keras 3: .name is the short name
    assert [v.shape.as_list() for v in layer.trainable_weights] == [[3, 2], [2]]


def test_positional_shape_initializer_dtype_and_eagerflow_name_first():
    class L(keras.layers.Layer):
        def build(self, input_shape):
            self.a = self.add_weight((2,), "ones", "float64")
            self.c = self.add_weight("c", (3,))
            self.s = self.add_weight(initializer="zeros", trainable=False)

        def call(self, x):
            return x

    layer = L(name="l")
    layer(np.zeros((1, 1), np.float32))
    assert layer.a.dtype == ef.float64
    np.testing.assert_array_equal(layer.a.numpy(), [1.0, 1.0])
    assert layer.c.path == "l/c" and layer.c.name == "c" and layer.c.shape.as_list() == [3]
    assert layer.s.shape.as_list() == [] and len(layer.non_trainable_weights) == 1


def test_initializer_objects_and_callables():
    class L(keras.layers.Layer):
        def build(self, input_shape):
            self.k = self.add_weight(shape=(2, 2), initializer=keras.initializers.Constant(0.5))
            self.t = self.add_weight(shape=(2,), initializer=ef.constant_initializer([1.0, 2.0]))

        def call(self, x):
            return x

    layer = L()
    layer(np.zeros((1, 2), np.float32))
    np.testing.assert_array_equal(layer.k.numpy(), np.full((2, 2), 0.5, np.float32))
    np.testing.assert_array_equal(layer.t.numpy(), [1.0, 2.0])


def test_regularizer_joins_the_losses_each_call():
    layer = _Linear(regularizer=keras.regularizers.L2(0.1))
    layer(np.ones((1, 3), np.float32))
    assert len(layer.losses) == 1
    np.testing.assert_allclose(float(layer.losses[0]), 0.1 * 6.0, rtol=1e-6)  # six ones in the kernel


def test_regularizer_counts_in_fit_loss():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, _Linear(units=1, regularizer=keras.regularizers.L2(1.0))(inputs))
    model.compile("sgd", "mse")
    x, y = np.zeros((4, 3), np.float32), np.zeros((4, 1), np.float32)
    # The data loss is 0 (zero inputs and targets): what fit reports is the penalty, 1.0 * 3 ones.
    assert model.evaluate(x, y, verbose=0) == pytest.approx(3.0, rel=1e-5)


def test_argument_errors():
    class L(keras.layers.Layer):
        def __init__(self, bad, **kwargs):
            super().__init__(**kwargs)
            self.bad = bad

        def build(self, input_shape):
            self.add_weight(**self.bad)

        def call(self, x):
            return x

    with pytest.raises(NotImplementedError, match="overwrite_with_gradient"):
        L({"shape": (2,), "overwrite_with_gradient": True})(np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match="aggregation"):
        L({"shape": (2,), "aggregation": "max"})(np.zeros((1, 2), np.float32))


def test_trains_inside_a_model():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, _Linear(units=1)(inputs))
    model.compile("sgd", "mse")
    x = np.random.RandomState(0).rand(32, 3).astype("float32")
    y = x.sum(axis=1, keepdims=True) * 0.5
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=5, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
