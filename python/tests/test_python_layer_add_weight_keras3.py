"""Layer.add_weight as Keras 3 takes it in layers written in Python: shape first, the name
optional, dtype-dependent default initializer, and constraint= projected after each
optimizer step of fit and train_on_batch (before the user's callbacks see the batch).
Expected values were recorded from keras 3.15 (TensorFlow backend) or computed with NumPy."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


class _Constrained(keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], 1), initializer="ones", constraint=keras.constraints.NonNeg(),
                                 name="w")
        self.v = self.add_weight(shape=(input_shape[-1], 1), initializer="ones",
                                 constraint=lambda w: ef.clip_by_value(w, -0.5, 0.5), name="v")

    def call(self, x):
        return ef.matmul(x, self.w) + ef.matmul(x, self.v)


def _model():
    model = keras.Sequential([keras.Input((2,)), _Constrained()])
    model.compile(keras.optimizers.SGD(10.0), "mse")
    return model


_X = np.ones((4, 2), np.float32)
_Y = np.full((4, 1), -5.0, np.float32)


def test_keras3_signature_names_and_default_initializers():
    class Weights(keras.layers.Layer):
        def build(self, input_shape):
            self.a = self.add_weight(shape=(input_shape[-1], 1), initializer="ones")
            self.b = self.add_weight((1,), "zeros", name="b")  # Keras 3: (shape, initializer, dtype, ...)
            self.c = self.add_weight("c", (1,), initializer="ones")  # Keras 2's order still works
            self.i = self.add_weight(shape=(2,), dtype="int32", trainable=False)

        def call(self, x):
            return ef.matmul(x, self.a) + self.b + self.c

    keras.backend.clear_session()
    layer = Weights(name="weights")
    out = layer(np.ones((1, 2), np.float32))
    assert float(out[0, 0]) == 3.0
    # keras 3.15: [('variable', 'weights/variable'), ('b', 'weights/b'), ('c', ...), ('variable_1', ...)]
    assert [(w.name, w.path) for w in layer.weights] == [("variable", "weights/variable"), ("b", "weights/b"),
                                                         ("c", "weights/c"), ("variable_1", "weights/variable_1")]
    assert layer.i.dtype == ef.int32 and np.all(layer.i.numpy() == 0)  # Keras: zeros for non-float weights
    assert not layer.i.trainable
    with pytest.raises(ValueError, match="must be a string"):
        layer.add_weight(shape=(1,), name=3)
    regularized = layer.add_weight(shape=(1,), regularizer="l2", name="r")  # joins the layer's losses at calls
    assert regularized.path.endswith("/r")


def test_constraints_after_each_fit_step_before_user_callbacks():
    model = _model()
    seen = []

    class Peek(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(model.layers[0].w.numpy().ravel().copy())

    model.fit(_X, _Y, batch_size=4, epochs=1, verbose=0, callbacks=[Peek()])
    # keras 3.15: the callback already sees [0, 0]; v ends at -0.5
    np.testing.assert_array_equal(seen[0], [0.0, 0.0])
    np.testing.assert_array_equal(model.layers[0].w.numpy().ravel(), [0.0, 0.0])
    np.testing.assert_array_equal(model.layers[0].v.numpy().ravel(), [-0.5, -0.5])


def test_constraints_in_train_on_batch_and_dataset_fit():
    model = _model()
    model.train_on_batch(_X, _Y)
    np.testing.assert_array_equal(model.layers[0].w.numpy().ravel(), [0.0, 0.0])
    model.layers[0].w.assign(np.ones((2, 1), np.float32))
    model.fit(ef.data.Dataset.from_tensor_slices((_X, _Y)).batch(4), verbose=0)
    np.testing.assert_array_equal(model.layers[0].w.numpy().ravel(), [0.0, 0.0])


def test_unconstrained_step_matches_numpy_sgd():
    class Plain(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], 1), initializer="ones")

        def call(self, x):
            return ef.matmul(x, self.w)

    model = keras.Sequential([keras.Input((2,)), Plain()])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.fit(_X, _Y, batch_size=4, verbose=0)
    # d/dw mean((x w - y)^2) = 2 x^T (x w - y) / n; the weight was not projected
    w = np.ones((2, 1), np.float32)
    grad = 2 * _X.T @ (_X @ w - _Y) / 4
    np.testing.assert_allclose(model.layers[0].w.numpy(), w - 0.1 * grad, rtol=1e-6)


def test_project_for_a_custom_loop_step():
    # what an optimizer's apply ends with in Keras (its hook for optimizers.py: _layer_add_weight.project)
    from eagerflow._layer_add_weight import project

    layer = _Constrained()
    layer(_X)
    keras.optimizers.SGD(10.0).apply_gradients([(ef.ones((2, 1)), layer.w)])
    np.testing.assert_array_equal(layer.w.numpy().ravel(), [0.0, 0.0])  # projected by the step, as Keras'
    layer.w.assign([[-3.0], [-4.0]])
    project([layer.w])
    np.testing.assert_array_equal(layer.w.numpy().ravel(), [0.0, 0.0])
    np.testing.assert_array_equal(layer.v.numpy().ravel(), [1.0, 1.0])  # not among the variables given
