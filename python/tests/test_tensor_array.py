"""tf.TensorArray (python/eagerflow/_tensor_array.py) and tf.while_loop over it (_control_flow.py)."""
import numpy as np
import pytest

import eagerflow as tf


def test_write_read_stack_and_unwritten_zeros():
    ta = tf.TensorArray(tf.float32, size=3)
    ta = ta.write(0, [1.0, 2.0]).write(2, tf.constant([5.0, 6.0]))
    assert int(ta.size()) == 3 and ta.dtype == tf.float32 and not ta.dynamic_size
    assert tuple(ta.element_shape) == (2,)
    np.testing.assert_array_equal(ta.stack().numpy(), [[1, 2], [0, 0], [5, 6]])
    np.testing.assert_array_equal(ta.read(1).numpy(), [0, 0])


def test_eager_read_clears_as_tf():
    ta = tf.TensorArray(tf.float32, size=2).unstack([1.0, 2.0])
    assert float(ta.read(1)) == 2.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not read index 1 twice"):
        ta.read(1)
    np.testing.assert_array_equal(ta.stack().numpy(), [1.0, 0.0])  # the read element is gone
    kept = tf.TensorArray(tf.float32, size=2, clear_after_read=False).unstack([1.0, 2.0])
    assert float(kept.read(1)) == float(kept.read(1)) == 2.0


def test_dynamic_size_grows_and_fixed_size_does_not():
    ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
    ta = ta.write(3, [1, 2])
    assert int(ta.size()) == 4
    np.testing.assert_array_equal(ta.stack().numpy(), [[0, 0], [0, 0], [0, 0], [1, 2]])
    with pytest.raises(tf.errors.OutOfRangeError, match="not resizeable and size is: 2"):
        tf.TensorArray(tf.float32, size=2).write(5, 1.0)
    with pytest.raises(ValueError, match="Size must be provided"):
        tf.TensorArray(tf.float32)


def test_bad_writes():
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype is float32 but Op is trying to write dtype int32"):
        tf.TensorArray(tf.float32, size=2).write(0, tf.constant(1))
    ta = tf.TensorArray(tf.float32, size=2).write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match="Incompatible shape"):
        ta.write(1, [1.0, 2.0, 3.0])


def test_empty_stack_and_unstack_gather_scatter_concat_split():
    assert tf.TensorArray(tf.float32, size=0).stack().shape == (0,)
    ta = tf.TensorArray(tf.float32, size=3).unstack([[1.0, 2.0], [3, 4], [5, 6]])
    np.testing.assert_array_equal(ta.gather([2, 0]).numpy(), [[5, 6], [1, 2]])
    np.testing.assert_array_equal(ta.concat().numpy(), [1, 2, 3, 4, 5, 6])
    sp = tf.TensorArray(tf.float32, size=2).split([1.0, 2, 3, 4, 5], lengths=[2, 3])
    np.testing.assert_array_equal(sp.read(1).numpy(), [3, 4, 5])
    with pytest.raises(ValueError, match="element shape is not known"):
        sp.concat()  # read(1) cleared element 1 and pieces of different lengths have no zeros to stand for it (TF too)
    pieces = tf.TensorArray(tf.float32, size=2).split([1.0, 2, 3], lengths=[1, 2])
    np.testing.assert_array_equal(pieces.concat().numpy(), [1, 2, 3])
    sc = tf.TensorArray(tf.float32, size=4, element_shape=[1]).scatter([1, 3], [[1.0], [2.0]])
    np.testing.assert_array_equal(sc.stack().numpy(), [[0], [1], [0], [2]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="sum of lengths"):
        tf.TensorArray(tf.float32, size=2).split([1.0, 2, 3], lengths=[1, 1])
    ident = ta.identity()
    np.testing.assert_array_equal(ident.stack().numpy(), ta.stack().numpy())


def _squares(n):
    ta = tf.TensorArray(tf.float32, size=4, element_shape=[])

    def body(i, ta):
        return i + 1, ta.write(i, tf.cast(i * i, tf.float32))
    _, ta = tf.while_loop(lambda i, ta: i < n, body, (0, ta))
    return ta.stack()


def test_while_loop_carries_an_array_eager_and_traced():
    want = [0.0, 1.0, 4.0, 9.0]
    f = tf.function(_squares)
    np.testing.assert_array_equal(_squares(tf.constant(4)).numpy(), want)
    np.testing.assert_array_equal(f(tf.constant(4)).numpy(), want)
    np.testing.assert_array_equal(f(tf.constant(2)).numpy(), [0.0, 1.0, 0.0, 0.0])
    assert f.experimental_get_tracing_count() == 1


def test_eager_loop_grows_a_dynamic_array():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    _, ta = tf.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, tf.fill([2], tf.cast(i, tf.float32)))),
                          (tf.constant(0), ta))
    np.testing.assert_array_equal(ta.stack().numpy(), [[0, 0], [1, 1], [2, 2]])


def _weighted_prefix(x):
    src = tf.TensorArray(tf.float32, size=3, clear_after_read=False).unstack(x)
    out = tf.TensorArray(tf.float32, size=3, element_shape=[])

    def body(i, out, s):
        xi = src.read(i)
        return i + 1, out.write(i, xi * s), s + xi
    _, out, s = tf.while_loop(lambda i, o, s: i < 3, body, (0, out, tf.constant(1.0)))
    return out.stack(), s


def test_array_in_loop_is_differentiable_eager_and_traced():
    x = tf.constant([1.0, 2.0, 3.0])
    # out = [x0*1, x1*(1+x0), x2*(1+x0+x1)]
    want = [1.0, 2.0 * 2.0, 3.0 * 4.0]
    # d sum(out)/dx = [1 + x1 + x2, (1 + x0) + x2, 1 + x0 + x1]
    grad_want = [6.0, 5.0, 4.0]
    for f in (_weighted_prefix, tf.function(_weighted_prefix)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out, s = f(x)
            y = tf.reduce_sum(out)
        np.testing.assert_allclose(out.numpy(), want)
        assert float(s) == 7.0
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), grad_want)


def test_traced_write_at_tensor_index_outside_loop():
    @tf.function
    def f(i):
        ta = tf.TensorArray(tf.float32, size=3, element_shape=[2])
        ta = ta.write(i, [1.0, 2.0])
        return ta.stack(), ta.read(i)
    stacked, row = f(tf.constant(1))
    np.testing.assert_array_equal(stacked.numpy(), [[0, 0], [1, 2], [0, 0]])
    np.testing.assert_array_equal(row.numpy(), [1, 2])


def test_traced_python_int_writes_keep_a_list():
    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for i in range(3):
            ta = ta.write(i, x * float(i))
        return ta.stack()
    np.testing.assert_array_equal(f(tf.constant(2.0)).numpy(), [0.0, 2.0, 4.0])


def test_traced_loop_finds_the_element_shape():
    # no element_shape: the body is traced once to see what it writes; that probe runs nothing
    @tf.function
    def f(x, n):
        ta = tf.TensorArray(tf.float32, size=3)

        def body(i, ta):
            tf.print("step", i)
            return i + 1, ta.write(i, x * tf.cast(i, tf.float32))
        return tf.while_loop(lambda i, ta: i < n, body, (0, ta))[1].stack()
    out = f(tf.constant([1.0, 2.0]), tf.constant(3))
    np.testing.assert_array_equal(out.numpy(), [[0, 0], [1, 2], [2, 4]])
    assert f.experimental_get_tracing_count() == 1


def test_traced_loop_reading_before_any_write_needs_element_shape():
    @tf.function
    def f(n):
        ta = tf.TensorArray(tf.float32, size=3)
        body = lambda i, ta: (i + 1, ta.write(i, ta.read(0) + 1.0))  # noqa: E731
        return tf.while_loop(lambda i, ta: i < n, body, (0, ta))[1].stack()
    with pytest.raises(ValueError, match="element_shape"):
        f(tf.constant(3))


def test_while_loop_structures():
    out = tf.while_loop(lambda d: d["a"] < 3, lambda d: {"a": d["a"] + 1}, {"a": tf.constant(0)})
    assert int(out["a"]) == 3
    r = tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2.0), (tf.constant(0), tf.constant(1.0)))
    assert isinstance(r, tuple) and float(r[1]) == 8.0
    r = tf.while_loop(lambda i, x: i < 3, lambda i, x: [i + 1, x * 2.0], [tf.constant(0), tf.constant(1.0)])
    assert isinstance(r, list)
    traced = tf.function(lambda: tf.while_loop(lambda i: i < 5, lambda i: i + 2, tf.constant(0)))()
    assert int(traced) == 6
    assert int(tf.while_loop(lambda i: i < 100, lambda i: (i + 1,), (tf.constant(0),), maximum_iterations=4)[0]) == 4


def test_traced_loop_cannot_grow_an_empty_dynamic_array():
    @tf.function
    def f(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[])
        return tf.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, 1.0)), (0, ta))[1].stack()
    with pytest.raises(NotImplementedError, match="cannot grow inside a loop in ef.function"):
        f(tf.constant(3))


def test_while_loop_back_prop_false_stops_gradients():
    x = tf.constant(2.0)
    for f in (lambda x: tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * x), (tf.constant(0), x),
                                      back_prop=False)[1],
              tf.function(lambda x: tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * x), (tf.constant(0), x),
                                                  back_prop=False)[1])):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
        assert float(y) == 8.0 and (g is None or float(g) == 0.0)  # without back_prop: 12.0
