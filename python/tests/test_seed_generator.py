"""A layer's own random sequence (Keras 3's SeedGenerator): equal seeds repeat masks."""
import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


def _masks(layer, calls, n=64):
    x = np.ones((2, n), np.float32)
    return [layer(x, training=True).numpy() for _ in range(calls)]


def test_two_dropouts_with_one_seed_draw_the_same_masks():
    ef.random.set_seed(3)
    first = _masks(keras.layers.Dropout(0.5, seed=7), 3)
    assert not np.array_equal(first[0], first[1])
    ef.random.uniform([4], seed=7)  # an op with the same seed does not disturb a new layer
    second = _masks(keras.layers.Dropout(0.5, seed=7), 3)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(_masks(keras.layers.Dropout(0.5, seed=8), 1)[0], first[0])


def test_seeded_dropout_inside_a_function_matches_eager():
    ef.random.set_seed(1)
    eager = _masks(keras.layers.Dropout(0.4, seed=11), 3, n=32)
    layer = keras.layers.Dropout(0.4, seed=11)
    f = ef.function(lambda x: layer(x, training=True))
    x = np.ones((2, 32), np.float32)
    for want in eager:
        np.testing.assert_array_equal(f(x).numpy(), want)


def test_seed_generator_as_a_seed():
    g = ef.random.SeedGenerator(5)
    a = ef.random.uniform([6], seed=g).numpy()
    b = ef.random.normal([6], seed=g).numpy()
    assert g.draws == 2 and g.seed == 5
    h = ef.random.SeedGenerator(5)
    np.testing.assert_array_equal(ef.random.uniform([6], seed=h).numpy(), a)
    np.testing.assert_array_equal(ef.random.normal([6], seed=h).numpy(), b)
    g.draws = 0
    np.testing.assert_array_equal(ef.random.uniform_like(np.zeros(6, np.float32), seed=g).numpy(), a)
    ef.random.set_seed(2)
    s1 = ef.random.SeedGenerator().seed
    ef.random.set_seed(2)
    assert ef.random.SeedGenerator().seed == s1
    with pytest.raises((TypeError, ValueError)):
        ef.random.SeedGenerator("seven")
