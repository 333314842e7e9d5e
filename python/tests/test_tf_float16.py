"""tf.float16 (issue 31): NumPy's float16 in and out without widening, TF's casts, printing and
rounding (as NumPy's), arithmetic computed in float32 and rounded once, gradients through casts,
and the mixing rule (float16 does not mix silently with float32 or bfloat16)."""
import numpy as np
import pytest

import eagerflow as tf


def test_numpy_float16_round_trips():
    a = np.array([1.0, -0.1, 65504.0, 6e-8, np.inf], np.float16)
    t = tf.constant(a)
    assert t.dtype == tf.float16 and tf.half == tf.float16
    back = t.numpy()
    assert back.dtype == np.float16
    np.testing.assert_array_equal(back.view(np.uint16), a.view(np.uint16))
    assert tf.float16.is_floating and tf.float16.name == "float16"
    assert isinstance(tf.constant(np.float16(2.5)).numpy(), np.float16)


def test_casts_round_as_numpy():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(10000) * 10.0 ** rng.integers(-8, 6, 10000)).astype(np.float32)
    got = tf.cast(x, tf.float16).numpy()
    d = x.astype(np.float64) * (1 + 1e-12)
    with np.errstate(over="ignore"):  # NumPy warns where values round to inf, as they should
        want, want_d = x.astype(np.float16), d.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(tf.cast(d, tf.float16).numpy().view(np.uint16), want_d.view(np.uint16))
    assert tf.constant([1.5, 2.0], dtype=tf.float16).dtype == tf.float16
    assert tf.constant([1, 2], dtype="float16").dtype == tf.float16
    np.testing.assert_array_equal(tf.cast(tf.constant([2.7, -1.2], tf.float16), tf.int32).numpy(), [2, -1])


def test_printing_and_arithmetic():
    t = tf.constant([1.5, 2.25], tf.float16)
    assert repr(t) == "<tf.Tensor: shape=(2,), dtype=float16, numpy=array([1.5 , 2.25], dtype=float16)>"
    s = t * 2.0 + 1.0
    assert s.dtype == tf.float16
    np.testing.assert_array_equal(s.numpy(), np.array([4.0, 5.5], np.float16))
    m = tf.matmul(tf.ones([2, 3], tf.float16), tf.ones([3, 2], tf.float16))
    assert m.dtype == tf.float16 and (m.numpy() == 3).all()
    r = tf.reduce_sum(tf.fill([4096], tf.constant(1.0, tf.float16)))
    assert r.dtype == tf.float16 and float(r) == 4096.0  # accumulated in float32
    f = tf.function(lambda v: tf.nn.relu(v) - 0.5)
    np.testing.assert_array_equal(f(t).numpy(), (tf.nn.relu(t) - 0.5).numpy())


def test_mixing_is_an_error_and_gradients_flow():
    with pytest.raises(TypeError):
        tf.constant([1.0], tf.float16) + tf.constant([1.0], tf.float32)
    with pytest.raises(TypeError):
        tf.constant([1.0], tf.float16) + tf.constant([1.0], tf.bfloat16)
    v = tf.Variable([0.5, -2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.cast(tf.square(tf.cast(v, tf.float16)), tf.float32))
    g = tape.gradient(y, v)
    assert g.dtype == tf.float32
    np.testing.assert_array_equal(g.numpy(), [1.0, -4.0])
