"""keras.layers.LeakyReLU(alpha=...): Keras 2's name for negative_slope, taken with Keras 3's
warning; a negative slope is a ValueError."""
import os
import warnings

import numpy as np
import pytest

import eagerflow as ef

layers = ef.keras.layers


def test_alpha_is_the_negative_slope_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layer = layers.LeakyReLU(alpha=0.2)
    assert any("negative_slope" in str(w.message) for w in caught)
    x = np.array([-2.0, 0.0, 3.0], np.float32)
    np.testing.assert_allclose(layer(x).numpy(), np.where(x > 0, x, 0.2 * x), rtol=1e-6)
    assert layer.get_config()["negative_slope"] == pytest.approx(0.2)


def test_default_and_positional_slope():
    x = np.array([-1.0], np.float32)
    np.testing.assert_allclose(layers.LeakyReLU()(x).numpy(), [-0.3], rtol=1e-6)
    np.testing.assert_allclose(layers.LeakyReLU(0.1)(x).numpy(), [-0.1], rtol=1e-6)


def test_negative_slope_is_rejected():
    with pytest.raises(ValueError, match="negative_slope"):
        layers.LeakyReLU(negative_slope=-0.5)


def test_model_with_alpha_saves_and_loads(tmp_path):
    model = ef.keras.Sequential([ef.keras.Input((2,)), layers.Dense(2), layers.LeakyReLU(alpha=0.5)])
    x = np.array([[1.0, -1.0]], np.float32)
    path = os.path.join(tmp_path, "m.keras")
    model.save(path)
    again = ef.keras.models.load_model(path)
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
