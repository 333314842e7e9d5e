"""tf.math's trigonometric, hyperbolic and special functions and helpers (issue 31): against
NumPy/SciPy-level references in float64 and float32, gradients by central differences, eager ==
traced."""
import math

import numpy as np
import pytest

import eagerflow as tf

rng = np.random.default_rng(11)
GENERAL = rng.uniform(-3, 3, size=(4, 5))
UNIT = rng.uniform(-0.95, 0.95, size=(4, 5))
ABOVE_ONE = rng.uniform(1.05, 4, size=(4, 5))

FUNCTIONS = {
    "tan": (np.tan, UNIT), "asin": (np.arcsin, UNIT), "acos": (np.arccos, UNIT), "atan": (np.arctan, GENERAL),
    "sinh": (np.sinh, GENERAL), "cosh": (np.cosh, GENERAL), "asinh": (np.arcsinh, GENERAL),
    "acosh": (np.arccosh, ABOVE_ONE), "atanh": (np.arctanh, UNIT), "expm1": (np.expm1, GENERAL),
    "erfc": (np.vectorize(math.erfc), GENERAL),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_as_numpy_with_gradient(name):
    ref, x = FUNCTIONS[name]
    fn = getattr(tf.math, name)
    got = fn(x).numpy()
    np.testing.assert_allclose(tf.function(fn)(x).numpy(), got, rtol=0, atol=0)
    np.testing.assert_allclose(got, ref(x), rtol=1e-14, atol=1e-15)
    f32 = fn(x.astype(np.float32))
    assert f32.dtype == tf.float32
    np.testing.assert_allclose(f32.numpy(), ref(x), rtol=2e-6, atol=1e-6)
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(fn(v))
    eps = 1e-6
    numeric = (ref(x + eps) - ref(x - eps)) / (2 * eps)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), numeric, rtol=1e-6, atol=1e-7)


def test_expm1_is_accurate_for_tiny_values():
    assert float(tf.math.expm1(tf.constant(1e-12, tf.float64))) == pytest.approx(1e-12, rel=1e-12)
    assert float(tf.math.expm1(tf.constant(1e-10, tf.float32))) == pytest.approx(1e-10, rel=1e-6)


def test_atan2_quadrants_and_axes():
    y = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 2.0, -2.0, 0.0, 0.0])
    x = np.array([1.0, -1.0, -1.0, 1.0, 3.0, 0.0, 0.0, -3.0, 0.0])
    np.testing.assert_allclose(tf.math.atan2(y, x).numpy(), np.arctan2(y, x), rtol=1e-15, atol=1e-15)
    yv, xv = tf.Variable([0.5, -2.0]), tf.Variable([-1.5, 0.7])
    with tf.GradientTape() as tape:
        a = tf.reduce_sum(tf.math.atan2(yv, xv))
    gy, gx = tape.gradient(a, [yv, xv])
    r2 = np.array([0.5, -2.0]) ** 2 + np.array([-1.5, 0.7]) ** 2
    np.testing.assert_allclose(gy.numpy(), np.array([-1.5, 0.7]) / r2, rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), -np.array([0.5, -2.0]) / r2, rtol=1e-6)


def test_helpers_as_tf():
    np.testing.assert_array_equal(tf.math.xdivy([0.0, 2.0], [0.0, 4.0]).numpy(), [0.0, 0.5])
    np.testing.assert_allclose(tf.math.xlog1py([0.0, 2.0], [-1.0, 1.0]).numpy(), [0.0, 2 * np.log(2.0)])
    np.testing.assert_array_equal(tf.math.reciprocal_no_nan([0.0, 4.0]).numpy(), [0.0, 0.25])
    np.testing.assert_allclose(tf.math.polyval([2.0, -1.0, 3.0], np.array([0.0, 1.0, 2.0])).numpy(), [3.0, 4.0, 9.0])
    assert bool(tf.math.is_non_decreasing([1, 1, 2])) and not bool(tf.math.is_strictly_increasing([1, 1, 2]))
    np.testing.assert_array_equal(tf.math.invert_permutation([2, 0, 1]).numpy(), [1, 2, 0])
    x = rng.normal(size=(3, 4))
    np.testing.assert_allclose(tf.math.cumulative_logsumexp(x, axis=1).numpy(), np.logaddexp.accumulate(x, axis=1), rtol=1e-12)
    np.testing.assert_allclose(tf.math.scalar_mul(2.0, [1.0, 2.0]).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(tf.math.accumulate_n([np.ones(2), np.ones(2)]).numpy(), [2.0, 2.0])


def test_truth_value_of_one_element_tensors():
    assert bool(tf.constant(True)) is True
    assert bool(tf.constant([False])) is False
    assert bool(tf.reduce_all(tf.constant([True, True])))
    assert bool(tf.constant(2.5)) and not bool(tf.constant(0))
    with pytest.raises(ValueError):
        bool(tf.constant([True, False]))


def test_special_functions():
    x = np.array([0.1, 0.5, 1.0, 2.5, 7.3, 30.0, -0.5, -2.7])
    np.testing.assert_allclose(tf.math.lgamma(x).numpy(), [math.lgamma(v) for v in x], rtol=1e-13, atol=1e-14)
    assert float(tf.math.lgamma(tf.constant(1.0, tf.float64))) == 0.0
    assert np.isinf(tf.math.lgamma([0.0, -1.0]).numpy()).all()
    h = 1e-6
    numeric = [(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x]
    np.testing.assert_allclose(tf.math.digamma(x).numpy(), numeric, rtol=1e-7, atol=1e-7)
    y = np.array([-0.99, -0.3, 0.0, 0.5, 0.999])
    np.testing.assert_allclose([math.erf(v) for v in tf.math.erfinv(y).numpy()], y, atol=1e-15)
    np.testing.assert_allclose(tf.math.ndtri(np.array([0.5, 0.975])).numpy(), [0.0, 1.959963984540054], atol=1e-14)
    np.testing.assert_allclose(tf.math.lbeta(np.array([[1.0, 2.0]])).numpy(), [np.log(0.5)], rtol=1e-14)
    np.testing.assert_allclose(tf.math.lbeta([[1.0, 2.0]]).numpy(), [np.log(0.5)], rtol=2e-7)
    np.testing.assert_array_equal(tf.math.real([1.0, -2.0]).numpy(), [1.0, -2.0])
    np.testing.assert_array_equal(tf.math.imag([1.0, -2.0]).numpy(), [0.0, 0.0])
    np.testing.assert_allclose(tf.math.angle([1.0, -2.0]).numpy(), [0.0, np.pi])
