"""Keras layers take padding in any case ("SAME", "Valid"), as Keras' standardize_padding does."""
import numpy as np

import eagerflow as tf
from eagerflow import keras


def test_upper_case_padding_is_keras_lower_case_padding():
    x = np.random.RandomState(0).normal(size=(1, 5, 5, 2)).astype("float32")
    tf.keras.utils.set_random_seed(1)
    upper = keras.layers.Conv2D(3, 3, padding="SAME")
    lower = keras.layers.Conv2D(3, 3, padding="same")
    upper(x)
    lower(x)
    lower.set_weights(upper.get_weights())
    np.testing.assert_allclose(upper(x).numpy(), lower(x).numpy())
    assert upper(x).shape == (1, 5, 5, 3)
    assert keras.layers.Conv2D(3, 3, 1, "VALID")(x).shape == (1, 3, 3, 3)
    assert keras.layers.MaxPooling2D(2, padding="Same")(x).shape == (1, 3, 3, 2)
