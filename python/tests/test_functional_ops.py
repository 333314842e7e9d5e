"""tf.map_fn, foldl, foldr, tf.scan (beside ef.scan's JAX form), vectorized_map, py_function and
numpy_function (python/eagerflow/_functional_ops.py)."""
import numpy as np
import pytest

import eagerflow as tf


def _both(fn, *args):
    """fn's results eagerly and under ef.function (they must agree)."""
    eager = fn(*args)
    traced = tf.function(fn)(*args)
    return eager, traced


def test_map_fn_tensor_and_nested():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    for out in _both(lambda e: tf.map_fn(lambda r: tf.reduce_sum(r * r), e), x):
        np.testing.assert_allclose(out.numpy(), [5.0, 25.0])
    a, b = tf.constant([1.0, 2.0]), tf.constant([10, 20])
    for s, p in _both(lambda a, b: tf.map_fn(lambda t: (t[0] * 2.0, t[1] + 1), (a, b),
                                               fn_output_signature=(tf.float32, tf.int32)), a, b):
        np.testing.assert_allclose(s.numpy(), [2.0, 4.0])
        np.testing.assert_array_equal(p.numpy(), [11, 21])
    d = tf.map_fn(lambda t: {"s": t["x"] + 1.0}, {"x": tf.constant([1.0, 2.0])}, dtype={"s": tf.float32})
    np.testing.assert_allclose(d["s"].numpy(), [2.0, 3.0])


def test_map_fn_errors():
    with pytest.raises(TypeError, match="fn_output_signature says"):
        tf.map_fn(lambda r: tf.cast(r, tf.int32), tf.constant([1.0]), fn_output_signature=tf.float32)
    with pytest.raises(ValueError, match="mutually exclusive"):
        tf.map_fn(lambda r: r, tf.constant([1.0]), dtype=tf.float32, fn_output_signature=tf.float32)
    with pytest.raises(ValueError, match="same size in their first dimension"):
        tf.map_fn(lambda t: t[0], (tf.constant([1.0]), tf.constant([1.0, 2.0])))


def test_map_fn_gradient():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.map_fn(lambda r: r * r * r, x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * x.numpy() ** 2)


def test_folds():
    x = tf.constant([1, 2, 3])
    for out in _both(lambda e: tf.foldl(lambda a, v: a - v, e), x):
        assert int(out) == 1 - 2 - 3
    for out in _both(lambda e: tf.foldr(lambda a, v: a - v, e), x):
        assert int(out) == 3 - 2 - 1
    assert int(tf.foldl(lambda a, v: a * 10 + v, x, initializer=0)) == 123
    assert int(tf.foldr(lambda a, v: a * 10 + v, x, initializer=0)) == 321
    s, p = tf.foldl(lambda a, v: (a[0] + v, a[1] * v), x, initializer=(tf.constant(0), tf.constant(1)))
    assert (int(s), int(p)) == (6, 6)


def test_tf_scan_forms():
    x = tf.constant([1, 2, 3])
    for out in _both(lambda e: tf.scan(lambda a, v: a + v, e), x):
        np.testing.assert_array_equal(out.numpy(), [1, 3, 6])
    np.testing.assert_array_equal(tf.scan(lambda a, v: a + v, x, reverse=True).numpy(), [6, 5, 3])
    np.testing.assert_array_equal(tf.scan(lambda a, v: a + v, x, initializer=10).numpy(), [11, 13, 16])
    s, p = tf.scan(lambda a, v: (a[0] + v, a[1] * v), x, initializer=(0, 1), reverse=True)
    np.testing.assert_array_equal(s.numpy(), [6, 5, 3])
    np.testing.assert_array_equal(p.numpy(), [6, 6, 3])


def test_jax_scan_form_is_kept():
    carry, ys = tf.scan(lambda c, v: (c + v, c * v), tf.constant(0.0), tf.constant([1.0, 2.0, 3.0]))
    assert float(carry) == 6.0
    np.testing.assert_allclose(ys.numpy(), [0.0, 2.0, 9.0])
    carry, _ = tf.scan(lambda c, _: (c + 1, None), tf.constant(0), length=4)
    assert int(carry) == 4
    with pytest.raises(tf.errors.InvalidArgumentError, match="pass initializer= by name"):
        tf.scan(lambda a, v: a + v, tf.constant([1, 2, 3]), 0)  # TF's positional initializer, read as JAX's xs


def test_tf_scan_gradient():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.scan(lambda a, v: a * v, x))  # 1 + 1*2 + 1*2*3
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1 + 2 + 6, 1 + 3, 2])


def test_vectorized_map():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    for out in _both(lambda e: tf.vectorized_map(lambda r: tf.reduce_sum(r * r) + 1.0, e), x):
        np.testing.assert_allclose(out.numpy(), [6.0, 26.0])
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    np.testing.assert_allclose(tf.vectorized_map(lambda t: t[0] * t[1], (a, b)).numpy(), [3.0, 8.0])


def test_py_function_eager_with_gradient():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.py_function(lambda a: a * a, [x], Tout=tf.float32)
    assert float(y) == 9.0
    assert float(tape.gradient(y, x)) == 6.0
    a, b = tf.py_function(lambda u: (u + 1.0, tf.cast(u, tf.int32)), [x], Tout=[tf.float32, tf.int32])
    assert float(a) == 4.0 and a.dtype == tf.float32 and b.dtype == tf.int32
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tout says float32"):
        tf.py_function(lambda u: tf.cast(u, tf.int32), [x], Tout=tf.float32)


def test_numpy_function_eager():
    out = tf.numpy_function(lambda a, b: np.sin(a) + b, [np.float32(1.0), tf.constant(2.0)], tf.float32)
    np.testing.assert_allclose(out.numpy(), np.sin(np.float32(1.0)) + 2.0, rtol=1e-6)
    assert out.dtype == tf.float32
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.numpy_function(lambda a: a * 2, [x], tf.float32)
    assert tape.gradient(y, x) is None


def test_py_function_inside_a_trace_runs_when_the_graph_runs():
    @tf.function
    def f(x):
        return tf.py_function(lambda a: a + 1.0, [x], tf.float32)
    assert f(tf.constant(1.0)).numpy() == 2.0
    assert f(tf.constant(5.0)).numpy() == 6.0  # replayed: the Python runs again with this call's value
