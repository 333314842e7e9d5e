"""ef.keras.initializers: Keras' names and classes, in layers and called directly."""
import numpy as np
import pytest

import eagerflow as ef

init = ef.keras.initializers
L = ef.keras.layers


def test_called_directly_with_keras_variances():
    w = np.asarray(init.HeNormal(seed=1)((3, 3, 64, 128)))
    assert w.shape == (3, 3, 64, 128) and w.dtype == np.float32
    assert w.std() == pytest.approx(np.sqrt(2 / 576), rel=0.02)
    assert np.abs(w).max() <= 2 * np.sqrt(2 / 576) / 0.87962566103423978 * (1 + 1e-6)
    u = np.asarray(init.GlorotUniform()((100, 300)))
    assert np.abs(u).max() <= np.sqrt(6 / 400)
    np.testing.assert_array_equal(np.asarray(init.Identity(3.0)((2, 2))), 3 * np.eye(2))


def test_seeded_initializers_repeat():
    a = np.asarray(init.HeUniform(seed=5)((8, 4)))
    b = np.asarray(init.HeUniform(seed=5)((8, 4)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, np.asarray(init.HeUniform(seed=6)((8, 4))))


def test_layers_take_names_objects_and_callables():
    x = ef.Tensor(np.ones((2, 5), np.float32))
    d1 = L.Dense(3, kernel_initializer="he_normal", bias_initializer="ones")
    d1(x)
    np.testing.assert_array_equal(d1.bias.numpy(), np.ones(3, np.float32))
    d2 = L.Dense(3, kernel_initializer=init.Constant(0.25))
    d2(x)
    np.testing.assert_array_equal(d2.kernel.numpy(), np.full((5, 3), 0.25, np.float32))
    d3 = L.Dense(3, kernel_initializer=lambda shape, dtype=None: np.arange(np.prod(shape), dtype=np.float32).reshape(shape))
    d3(x)
    np.testing.assert_array_equal(d3.kernel.numpy(), np.arange(15, dtype=np.float32).reshape(5, 3))
    c = L.Conv2D(2, 3, kernel_initializer=init.HeNormal(seed=0))
    c(ef.Tensor(np.ones((1, 4, 4, 1), np.float32)))
    np.testing.assert_array_equal(c.kernel.numpy(), np.asarray(init.HeNormal(seed=0)((3, 3, 1, 2))))


def test_errors():
    with pytest.raises(ValueError, match="unknown initializer 'he_nromal'"):
        L.Dense(3, kernel_initializer="he_nromal")
    with pytest.raises(ValueError, match="Could not interpret"):
        init.get("nope")
    bad = L.Dense(3, kernel_initializer=lambda shape, dtype=None: np.zeros((1, 1), np.float32))
    with pytest.raises(Exception, match="initializer returned shape"):
        bad(ef.Tensor(np.ones((2, 5), np.float32)))
    with pytest.raises(Exception, match="mode"):
        init.VarianceScaling(mode="sideways")((2, 2))
