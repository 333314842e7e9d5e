"""tf.TensorArray in AutoGraph's tensor loops inside ef.function: a loop variable, grown by the
loop's trip count when dynamic_size=True, with a size known only when the graph runs, its
element shape learned from the first write; eager equals traced, gradients as TF's."""
import numpy as np
import pytest

import eagerflow as tf


def _scaled_rows(x, n):
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    for i in tf.range(n):
        ta = ta.write(i, x * tf.cast(i, tf.float32))
    return ta.stack()


def test_a_dynamic_array_grows_in_a_range_loop_with_a_tensor_trip_count():
    f = tf.function(_scaled_rows)
    x = np.array([1.0, 2.0], dtype=np.float32)
    for n in (3, 5, 0, 1):
        want = np.arange(n, dtype=np.float32)[:, None] * x
        eager = _scaled_rows(tf.constant(x), tf.constant(n)).numpy()
        traced = f(tf.constant(x), tf.constant(n)).numpy()
        np.testing.assert_array_equal(eager.reshape(-1, 2), want)
        np.testing.assert_array_equal(traced.reshape(-1, 2), want)
        assert traced.shape == (n, 2)
    assert f.experimental_get_tracing_count() == 1


def test_gradients_flow_through_the_grown_array():
    x = tf.constant([1.0, 2.0])
    for fn in (_scaled_rows, tf.function(_scaled_rows)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x, tf.constant(3))
            loss = tf.reduce_sum(y * y)
        # loss = sum_i i^2 |x|^2: d/dx = 2 x (0 + 1 + 4)
        np.testing.assert_allclose(tape.gradient(loss, x).numpy(), 2 * np.array([1.0, 2.0]) * 5)


def test_a_size_known_only_at_run_time():
    @tf.function
    def squares(n):
        ta = tf.TensorArray(tf.int32, size=n)
        for i in tf.range(n):
            ta = ta.write(i, i * i)
        return ta.stack(), ta.size()

    for n in (4, 1, 6):
        values, size = squares(tf.constant(n))
        np.testing.assert_array_equal(values.numpy(), np.arange(n) ** 2)
        assert int(size) == n
    assert squares.experimental_get_tracing_count() == 1


def test_append_under_a_condition_in_a_loop_over_a_tensor():
    def keep_large(xs):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for x in xs:
            if tf.reduce_sum(x) > 2:
                ta = ta.write(ta.size(), x)
        return ta.stack(), ta.size()

    data = np.array([[1.0, 0.0], [2.0, 3.0], [0.5, 0.5], [5.0, 5.0]], dtype=np.float32)
    want = data[data.sum(1) > 2]
    f = tf.function(keep_large)
    for fn in (keep_large, f):
        rows, size = fn(tf.constant(data))
        np.testing.assert_array_equal(rows.numpy(), want)
        assert int(size) == len(want)
    rows, size = f(tf.constant(data[:1]))
    assert rows.numpy().shape == (0, 2) and int(size) == 0
    assert f.experimental_get_tracing_count() == 2  # (a new input shape)


def test_two_loops_append_to_one_array_and_reads_see_earlier_writes():
    @tf.function
    def prefix_then_negated(n):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True, clear_after_read=False)
        for i in tf.range(n):
            ta = ta.write(i, i + 1)
        for i in tf.range(n):
            ta = ta.write(ta.size(), -ta.read(i))
        return ta.stack()

    np.testing.assert_array_equal(prefix_then_negated(tf.constant(3)).numpy(), [1, 2, 3, -1, -2, -3])

    @tf.function
    def fibonacci(n):
        ta = tf.TensorArray(tf.int64, size=2, dynamic_size=True, clear_after_read=False)
        ta = ta.write(0, tf.constant(0, tf.int64)).write(1, tf.constant(1, tf.int64))
        for i in tf.range(2, n):
            ta = ta.write(i, ta.read(i - 1) + ta.read(i - 2))
        return ta.stack()

    fib = [0, 1]
    while len(fib) < 10:
        fib.append(fib[-1] + fib[-2])
    np.testing.assert_array_equal(fibonacci(tf.constant(10)).numpy(), fib)


def test_a_dataset_loop_grows_an_array_by_the_datasets_cardinality():
    @tf.function
    def collect(ds):
        ta = tf.TensorArray(tf.int64, size=0, dynamic_size=True)
        for x in ds:
            ta = ta.write(ta.size(), x * x)
        return ta.stack()

    np.testing.assert_array_equal(collect(tf.data.Dataset.range(4)).numpy(), [0, 1, 4, 9])
    np.testing.assert_array_equal(collect(tf.data.Dataset.range(6)).numpy(), np.arange(6) ** 2)
    assert collect.experimental_get_tracing_count() == 1
    with pytest.raises(tf.errors.InvalidArgumentError, match="cardinality"):
        collect(tf.data.Dataset.range(6).filter(lambda x: x > 2))  # an unknown cardinality


def test_the_list_append_error_names_the_pattern_that_works():
    @tf.function
    def as_list(n):
        out = []
        for i in tf.range(n):
            out.append(i * 2)
        return out

    # TF's rule (AutoGraph's limitations: a Python list cannot grow in a tensor loop): a ValueError
    with pytest.raises(ValueError, match=r"ta.write\(ta.size\(\), value\)"):
        as_list(tf.constant(3))

    @tf.function
    def as_array(n):
        out = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        for i in tf.range(n):
            out = out.write(out.size(), i * 2)
        return out.stack()

    np.testing.assert_array_equal(as_array(tf.constant(3)).numpy(), [0, 2, 4])


def test_misuse_raises_tfs_classes():
    @tf.function
    def past_the_end(n):
        ta = tf.TensorArray(tf.int32, size=2)
        for i in tf.range(n):
            ta = ta.write(i, i)
        return ta.stack()

    np.testing.assert_array_equal(past_the_end(tf.constant(2)).numpy(), [0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError):  # as TF's: element 2 of a list of 2
        past_the_end(tf.constant(3))

    @tf.function
    def wrong_dtype(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for i in tf.range(n):
            ta = ta.write(i, i)
        return ta.stack()

    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype"):
        wrong_dtype(tf.constant(2))

    @tf.function
    def in_a_while(n):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        i = tf.constant(0)
        while i < n:
            ta = ta.write(i, i)
            i += 1
        return ta.stack()

    with pytest.raises(NotImplementedError, match="number of iterations is not known"):
        in_a_while(tf.constant(3))


def test_float_and_descending_ranges_size_the_array():
    @tf.function
    def countdown(n):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        for i in tf.range(n, 0, -1):
            ta = ta.write(ta.size(), i)
        return ta.stack()

    np.testing.assert_array_equal(countdown(tf.constant(4)).numpy(), [4, 3, 2, 1])

    @tf.function
    def halves(limit):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for v in tf.range(0.0, limit, 0.5):
            ta = ta.write(ta.size(), v)
        return ta.stack()

    np.testing.assert_array_equal(halves(tf.constant(2.0)).numpy(), np.arange(0.0, 2.0, 0.5))


def _powers(x, n):
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    _, ta, _ = tf.while_loop(lambda i, ta, p: i < n, lambda i, ta, p: (i + 1, ta.write(i, p), p * x),
                             (tf.constant(0), ta, tf.constant(1.0)), maximum_iterations=10)
    return ta.stack()


def test_an_explicit_while_loop_grows_an_array_by_maximum_iterations():
    x = tf.constant(2.0)
    f = tf.function(_powers)
    for fn in (_powers, f):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x, tf.constant(4))
            total = tf.reduce_sum(y)
        np.testing.assert_array_equal(y.numpy(), [1, 2, 4, 8])
        assert float(tape.gradient(total, x)) == 1 + 2 * 2 + 3 * 4  # d/dx (1 + x + x^2 + x^3)
    assert f(x, tf.constant(0)).numpy().shape == (0,)
    assert f.experimental_get_tracing_count() == 1
