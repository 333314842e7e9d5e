"""tf.py_function / tf.numpy_function inside ef.function (host calls: Python run on every call of
the graph) and tf.debugging.Assert as an op of traces."""
import numpy as np
import pytest

import eagerflow as tf


def test_py_function_runs_on_every_call_of_a_trace():
    calls = []

    def scaled(x):
        calls.append(x.numpy().copy())
        return x * 3.0

    @tf.function
    def f(x):
        return tf.py_function(scaled, [x], tf.float32) + 1.0

    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [4, 7])
    np.testing.assert_array_equal(f(tf.constant([0.5, 0.0])).numpy(), [2.5, 1])
    assert f.experimental_get_tracing_count() == 1
    # Called at each run with that run's values (and once at trace time to learn the rank).
    assert [c.tolist() for c in calls[-2:]] == [[1.0, 2.0], [0.5, 0.0]]


def test_py_function_shapes_from_tensor_specs_and_gradients():
    seen = []

    def square(x):
        seen.append(1)
        return x * x

    @tf.function
    def loss(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.py_function(square, [x], Tout=tf.TensorSpec([None], tf.float32))
            total = tf.reduce_sum(y)
        return total, tape.gradient(total, x)

    total, grad = loss(tf.constant([1.0, -2.0, 3.0]))
    assert total.numpy() == 14.0
    np.testing.assert_array_equal(grad.numpy(), [2, -4, 6])  # through the ops square ran
    assert len(seen) >= 2  # no trace-time probe with a TensorSpec: forward and gradient calls only


def test_numpy_function_in_a_trace_and_its_errors():
    @tf.function
    def f(x):
        return tf.numpy_function(lambda a: np.sort(a)[::-1].copy(), [x], tf.int32)

    np.testing.assert_array_equal(f(tf.constant([3, 1, 2])).numpy(), [3, 2, 1])
    np.testing.assert_array_equal(f(tf.constant([7, 9, 8])).numpy(), [9, 8, 7])

    @tf.function
    def wrong(x):
        return tf.numpy_function(lambda a: a.astype(np.float64), [x], tf.TensorSpec([None], tf.int32))

    with pytest.raises(tf.errors.InvalidArgumentError, match="numpy_function"):
        wrong(tf.constant([1, 2]))

    def fails(a):
        raise RuntimeError("no good")

    @tf.function
    def raising(x):
        return tf.py_function(fails, [x], tf.TensorSpec([None], tf.float32))

    with pytest.raises(tf.errors.InvalidArgumentError, match="no good"):
        raising(tf.constant([1.0]))


def test_assert_checks_every_call_of_a_trace_with_values():
    @tf.function
    def positive_sqrt(x):
        tf.debugging.Assert(tf.reduce_all(x > 0), [x])
        return tf.sqrt(x)

    np.testing.assert_allclose(positive_sqrt(tf.constant([4.0, 9.0])).numpy(), [2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"-1"):
        positive_sqrt(tf.constant([4.0, -1.0]))

    @tf.function
    def equal(a, b):
        tf.debugging.assert_equal(a, b, message="must match")
        return a + b

    assert equal(tf.constant(1), tf.constant(1)).numpy() == 2
    with pytest.raises(tf.errors.InvalidArgumentError, match="must match"):
        equal(tf.constant(1), tf.constant(2))
    assert equal.experimental_get_tracing_count() == 1


def test_enable_check_numerics_checks_every_op_until_disabled():
    x = tf.constant([1.0, 0.0])
    assert np.isinf(tf.math.log(x).numpy()[1])  # off by default
    tf.debugging.enable_check_numerics()
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Detected Infinity or NaN in output 0 of op 'log'"):
            tf.math.log(x)

        @tf.function
        def f(v):
            return tf.sqrt(v - 2.0)

        with pytest.raises(tf.errors.InvalidArgumentError, match="Detected Infinity or NaN"):
            f(x)  # in a traced graph too
        assert tf.math.log(tf.constant([1.0, 2.0])).numpy()[0] == 0.0
    finally:
        tf.debugging.disable_check_numerics()
    assert np.isnan(tf.sqrt(tf.constant(-1.0)).numpy())


def test_log_device_placement_and_init_scope(capfd):
    assert not tf.debugging.get_log_device_placement()
    tf.debugging.set_log_device_placement(True)
    try:
        tf.constant([1.0]) + 1.0
    finally:
        tf.debugging.set_log_device_placement(False)
    assert "Executing op add in device /job:localhost/replica:0/task:0/device:CPU:0" in capfd.readouterr().err

    made = []

    @tf.function
    def f(x):
        with tf.init_scope():
            made.append(tf.executing_eagerly())
            c = tf.constant(2.0) * 3.0  # runs now, a concrete value
            assert not c.is_symbolic
        return x * c

    assert f(tf.constant(1.0)).numpy() == 6.0
    assert made == [True]
