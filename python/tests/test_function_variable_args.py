"""A tf.Variable passed to a tf.function is the variable in the body, as in TF: it can be read,
assigned and optimized, and the caller sees the changes."""
import numpy as np

import eagerflow as tf


def test_a_variable_argument_is_a_variable():
    @tf.function
    def read(v):
        return v.read_value()
    assert int(read(tf.Variable(1))) == 1
    assert int(read(tf.Variable(2))) == 2  # its own trace: each variable is captured by its trace


def test_assignments_inside_reach_the_callers_variable():
    @tf.function
    def bump(v, by):
        v.assign_add(by)
        return v.read_value()
    v = tf.Variable(1.0)
    assert float(bump(v, tf.constant(2.0))) == 3.0
    assert float(bump(v, tf.constant(2.0))) == 5.0
    assert float(v.numpy()) == 5.0
    assert bump.experimental_get_tracing_count() == 1


def test_an_optimizer_steps_a_variable_argument():
    opt = tf.keras.optimizers.SGD(learning_rate=0.1)

    @tf.function
    def step(w, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(w * x - y))
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        return loss
    w = tf.Variable(2.0)
    x, y = tf.constant([-1.0]), tf.constant([2.0])
    step(w, x, y)
    # d/dw (w*x - y)^2 = 2 (w x - y) x = 2 * (-4) * (-1) = 8
    np.testing.assert_allclose(w.numpy(), 2.0 - 0.1 * 8.0, rtol=1e-6)


def test_gradient_through_a_variable_argument():
    @tf.function
    def f(v):
        return v * v
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = f(v)
    assert float(tape.gradient(y, v)) == 6.0


def test_a_list_of_variables():
    @tf.function
    def total(vs):
        return vs[0] + vs[1]
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    assert float(total([a, b])) == 3.0
    b.assign(5.0)
    assert float(total([a, b])) == 6.0  # the same variables: the trace reads them live
    assert total.experimental_get_tracing_count() == 1
