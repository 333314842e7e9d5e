"""A Python layer's build runs eagerly even while a functional model or ef.function traces its
call (as Keras builds from shapes before tracing): variables made in build from op results
(ef.random.normal, ef.zeros) get concrete initial values, and the model computes with them."""
import numpy as np

import eagerflow as ef


class RandomDense(ef.keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = ef.Variable(ef.random.normal([input_shape[-1], self.units]), name="w")
        self.b = ef.Variable(ef.zeros([self.units]) + 0.5, name="b")

    def call(self, inputs):
        return ef.matmul(inputs, self.w) + self.b


def test_functional_model_builds_from_symbolic_input():
    inputs = ef.keras.Input(shape=[3])
    first = RandomDense(4)
    second = RandomDense(2)
    model = ef.keras.Model(inputs=inputs, outputs=second(first(inputs)))
    assert first.w.shape == (3, 4) and second.w.shape == (4, 2)
    np.testing.assert_array_equal(first.b.numpy(), np.full(4, 0.5, np.float32))
    x = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]], np.float32)
    want = (x @ first.w.numpy() + 0.5) @ second.w.numpy() + 0.5
    np.testing.assert_allclose(model(ef.constant(x)).numpy(), want, rtol=1e-5, atol=1e-5)


def test_first_call_inside_function_builds_eagerly_and_traces_once():
    layer = RandomDense(2)
    f = ef.function(lambda x: layer(x))
    x = ef.constant([[1.0, 2.0, 3.0]])
    y1 = f(x)
    w = layer.w.numpy()
    np.testing.assert_allclose(y1.numpy(), x.numpy() @ w + 0.5, rtol=1e-5)
    np.testing.assert_allclose(f(x).numpy(), y1.numpy())
    assert f.experimental_get_tracing_count() == 1
