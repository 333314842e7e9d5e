"""TF's top-level initializers (tf.random_normal_initializer and its kin): callables (shape, dtype)
with TF's defaults, dtype checks, config round trips and errors."""
import numpy as np
import pytest

import eagerflow as ef


def test_random_normal_moments_dtype_and_seed():
    init = ef.random_normal_initializer(mean=2.0, stddev=0.5, seed=7)
    x = init((200, 50))
    assert x.dtype == ef.float32
    assert x.shape.as_list() == [200, 50]
    v = x.numpy()
    assert abs(v.mean() - 2.0) < 0.02 and abs(v.std() - 0.5) < 0.02
    assert init((3,), dtype=ef.float64).dtype == ef.float64
    # As TF: a seeded initializer is stateless, the same draws on every call and from a fresh one.
    seeded = ef.random_normal_initializer(0., 1., seed=3)
    np.testing.assert_array_equal(seeded((4,)).numpy(), seeded((4,)).numpy())
    np.testing.assert_array_equal(seeded((4,)).numpy(), ef.random_normal_initializer(0., 1., seed=3)((4,)).numpy())
    unseeded = ef.random_normal_initializer(0., 1.)
    assert not np.array_equal(unseeded((8,)).numpy(), unseeded((8,)).numpy())


def test_random_normal_rejects_integer_dtype():
    with pytest.raises(ValueError, match="floating point"):
        ef.random_normal_initializer()((2,), ef.int32)


def test_random_uniform_bounds_float_and_int():
    x = ef.random_uniform_initializer(-1.0, 3.0, seed=1)((1000,)).numpy()
    assert x.min() >= -1.0 and x.max() < 3.0 and x.max() - x.min() > 3.5
    seeded = ef.random_uniform_initializer(0, 5, seed=1)
    n = seeded((500,), ef.int32)
    np.testing.assert_array_equal(n.numpy(), seeded((500,), ef.int32).numpy())
    assert n.dtype == ef.int32
    assert set(np.unique(n.numpy())) <= set(range(5))
    with pytest.raises(ValueError, match="numeric"):
        ef.random_uniform_initializer()((2,), ef.string)


def test_zeros_and_ones_any_numeric_or_bool_dtype():
    np.testing.assert_array_equal(ef.zeros_initializer()((2, 3)).numpy(), np.zeros((2, 3), np.float32))
    assert ef.zeros_initializer()((2,), ef.int32).dtype == ef.int32
    np.testing.assert_array_equal(ef.ones_initializer()((2,), ef.bool).numpy(), [True, True])
    with pytest.raises(ValueError):
        ef.ones_initializer()((2,), ef.string)


def test_constant_fills_reshapes_and_infers_dtype():
    a = ef.constant_initializer([1, 2, 3, 4])((2, 2))
    assert a.dtype == ef.int32
    np.testing.assert_array_equal(a.numpy(), [[1, 2], [3, 4]])
    b = ef.constant_initializer(2.5)((3,))
    assert b.dtype == ef.float32
    np.testing.assert_array_equal(b.numpy(), [2.5, 2.5, 2.5])
    np.testing.assert_array_equal(ef.constant_initializer(2)((2,), ef.float64).numpy(), np.array([2., 2.]))
    with pytest.raises(TypeError, match="3 elements"):
        ef.constant_initializer([1, 2, 3])((2, 2))
    with pytest.raises(TypeError, match="Invalid type"):
        ef.constant_initializer({"a": 1})


def test_configs_round_trip():
    init = ef.random_normal_initializer(1.0, 2.0, seed=3)
    assert init.get_config() == {"mean": 1.0, "stddev": 2.0, "seed": 3}
    again = ef.random_normal_initializer.from_config(init.get_config())
    assert (again.mean, again.stddev, again.seed) == (1.0, 2.0, 3)
    assert ef.random_uniform_initializer().get_config() == {"minval": -0.05, "maxval": 0.05, "seed": None}
    assert ef.constant_initializer(2).get_config() == {"value": 2}
    assert ef.zeros_initializer().get_config() == {}


def test_initial_value_of_a_variable_and_unknown_kwargs():
    v = ef.Variable(ef.random_normal_initializer(0., 1.)(shape=(2, 3), dtype="float32"))
    assert v.shape.as_list() == [2, 3]
    with pytest.raises(TypeError, match="partition_shape"):
        ef.zeros_initializer()((2,), partition_info=None)


def test_works_inside_function():
    @ef.function
    def f():
        return ef.constant_initializer([1.0, 2.0])((2,)) + ef.ones_initializer()((2,))
    np.testing.assert_array_equal(f().numpy(), [2.0, 3.0])
