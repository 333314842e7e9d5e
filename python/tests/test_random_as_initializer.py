"""ef.random.normal / uniform / truncated_normal passed as a layer's initializer, as Keras
accepts them (it calls initializer(shape, dtype=dtype)): the weights get the layer's shape and
dtype, drawn from the function's distribution with its defaults."""
import numpy as np
import pytest

import eagerflow as ef


def test_dense_kernel_from_random_normal_and_fit():
    ef.random.set_seed(5)
    model = ef.keras.Sequential([ef.keras.Input(shape=(2,)),
                                 ef.keras.layers.Dense(units=300, kernel_initializer=ef.random.normal)])
    kernel = model.layers[-1].kernel.numpy()
    assert kernel.shape == (2, 300) and kernel.dtype == np.float32
    # Standard normal draws: mean near 0, standard deviation near 1 (600 draws).
    assert abs(kernel.mean()) < 0.2 and 0.85 < kernel.std() < 1.15
    model.compile(loss="mse", optimizer=ef.keras.optimizers.SGD(learning_rate=0.01))
    x = np.random.default_rng(0).standard_normal((16, 2)).astype(np.float32)
    history = model.fit(x, np.zeros((16, 300), np.float32), epochs=2, batch_size=8, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]


@pytest.mark.parametrize("draw,check", [
    (ef.random.uniform, lambda v: (v >= 0).all() and (v < 1).all()),
    (ef.random.truncated_normal, lambda v: (np.abs(v) <= 2).all()),
    (ef.random.normal, lambda v: np.isfinite(v).all() and v.std() > 0.5),
])
def test_add_weight_with_random_function(draw, check):
    class Layer(ef.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(20, 10), initializer=draw)

        def call(self, x):
            return x @ self.w

    layer = Layer()
    out = layer(ef.ones([1, 20]))
    assert out.shape == (1, 10)
    values = layer.w.numpy()
    assert values.shape == (20, 10) and values.dtype == np.float32
    assert check(values)
    assert len(np.unique(values)) > 100  # drawn, not constant


def test_functions_still_take_their_own_arguments():
    x = ef.random.normal([1000], 5.0, 0.5, seed=1)
    assert abs(float(ef.reduce_mean(x)) - 5.0) < 0.1
    with pytest.raises(ValueError):
        ef.random.normal([2], ef.float32)  # a dtype is not a mean, as in TF
