"""Datasets read when a traced function runs (python/eagerflow/_data_graph.py): `for x in
dataset`, iter()/next(), enumerate and Dataset.reduce inside ef.function are graph loops and
host calls, so every call reads the dataset afresh; a dataset argument is keyed by its spec."""
import numpy as np
import pytest

import eagerflow as tf


def _sum_and_count(ds):
    s = tf.constant(0, dtype=tf.int64)
    n = 0
    for x in ds:
        s += tf.reduce_sum(x)
        n += 1
    return s, n


def test_a_dataset_argument_is_read_at_every_call_and_keyed_by_its_spec():
    f = tf.function(_sum_and_count)
    for ds in (tf.data.Dataset.range(4), tf.data.Dataset.range(10), tf.data.Dataset.range(3).map(lambda x: x * 7)):
        want_s, want_n = _sum_and_count(ds)  # eager: the Python loop
        got_s, got_n = f(ds)
        assert int(got_s) == int(want_s) and int(got_n) == int(want_n)
    assert int(f(tf.data.Dataset.range(10))[0]) == np.arange(10).sum()
    assert f.experimental_get_tracing_count() == 1  # a new dataset of the same spec: no retrace, as TF
    assert [int(v) for v in f(tf.data.Dataset.range(5).batch(2))] == [10, 3]  # another spec (int64[?])
    assert f.experimental_get_tracing_count() == 2
    assert f.traces[0].reason == "first call"


def test_a_dataset_the_function_closes_over_is_read_again_at_each_call():
    state = {"n": 3}

    def gen():
        yield from range(state["n"])

    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64))

    @tf.function
    def total():
        s = tf.constant(0, dtype=tf.int64)
        for x in ds:
            s += x
        return s

    assert int(total()) == 3
    state["n"] = 5  # the dataset's generator runs again when the graph runs
    assert int(total()) == 10
    assert total.experimental_get_tracing_count() == 1


def test_a_final_partial_batch_has_its_own_size():
    x = np.arange(10, dtype=np.float32)

    @tf.function
    def sizes_and_sums(ds):
        sizes = tf.constant(0, dtype=tf.int32)
        total = tf.constant(0.0)
        last = tf.constant(0)
        for b in ds:
            sizes = sizes * 10 + tf.shape(b)[0]
            total += tf.reduce_sum(b * b)
            last = tf.shape(b)[0]
        return sizes, total, last

    sizes, total, last = sizes_and_sums(tf.data.Dataset.from_tensor_slices(x).batch(4))
    assert int(sizes) == 442 and int(last) == 2
    np.testing.assert_allclose(float(total), float((x * x).sum()))


def test_break_continue_and_return_inside_a_dataset_loop():
    @tf.function
    def first_above(ds, limit):
        for x in ds:
            if x > limit:
                return x * 10
        return tf.constant(-1, dtype=tf.int64)

    ds = tf.data.Dataset.range(6)
    assert int(first_above(ds, tf.constant(2, dtype=tf.int64))) == 30
    assert int(first_above(ds, tf.constant(9, dtype=tf.int64))) == -1

    @tf.function
    def odd_sum_until(ds, stop):
        s = tf.constant(0, dtype=tf.int64)
        for x in ds:
            if x >= stop:
                break
            if x % 2 == 0:
                continue
            s += x
        return s

    def eager(n, stop):
        return sum(v for v in range(n) if v < stop and v % 2)

    for n, stop in ((10, 7), (10, 100), (0, 3)):
        assert int(odd_sum_until(tf.data.Dataset.range(n), tf.constant(stop, dtype=tf.int64))) == eager(n, stop)
    assert odd_sum_until.experimental_get_tracing_count() == 1


def test_tuple_and_dict_elements_and_enumerate():
    xs = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
    ys = np.array([10, 20, 30], dtype=np.int32)

    @tf.function
    def weighted(ds):
        acc = tf.zeros([2])
        for i, (x, y) in enumerate(ds):
            acc += x * tf.cast(y, tf.float32) * tf.cast(i, tf.float32)
        return acc

    np.testing.assert_allclose(weighted(tf.data.Dataset.from_tensor_slices((xs, ys))).numpy(),
                               (xs * ys[:, None] * np.arange(3)[:, None]).sum(0))

    @tf.function
    def dict_sum(ds):
        s = tf.constant(0.0)
        for e in ds:
            s += e["a"] * tf.cast(e["b"], tf.float32)
        return s

    d = tf.data.Dataset.from_tensor_slices({"a": [1.0, 2.0, 3.0], "b": [4, 5, 6]})
    assert float(dict_sum(d)) == 1 * 4 + 2 * 5 + 3 * 6


def test_datasets_made_from_an_argument_inside_the_function_follow_the_argument():
    @tf.function
    def f(ds):
        s = tf.constant(0, dtype=tf.int64)
        for x in ds.map(lambda v: v * 10).filter(lambda v: v % 20 == 0).take(3):
            s += x
        return s

    assert int(f(tf.data.Dataset.range(100))) == 0 + 20 + 40
    assert int(f(tf.data.Dataset.range(101, 200))) == 1020 + 1040 + 1060
    assert f.experimental_get_tracing_count() == 1


def test_a_training_loop_over_batches_in_one_function_equals_eager():
    x = np.arange(10, dtype=np.float32).reshape(5, 2) / 10
    y = x @ np.array([[1.0], [2.0]], dtype=np.float32)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)  # batches of 2, 2, 1

    def run(fn):
        w = tf.Variable([[0.5], [-0.25]])

        def epoch(ds):
            total = tf.constant(0.0)
            for xb, yb in ds:
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean((tf.matmul(xb, w) - yb) ** 2)
                w.assign_sub(0.1 * tape.gradient(loss, w))
                total += loss
            return total
        step = fn(epoch)
        return [float(step(data)) for _ in range(3)], w.numpy()

    eager_losses, eager_w = run(lambda f: f)
    traced_losses, traced_w = run(tf.function)
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-5)
    np.testing.assert_allclose(traced_w, eager_w, rtol=1e-5)
    assert eager_losses[2] < eager_losses[0]


def test_iter_and_next_inside_a_function():
    ds = tf.data.Dataset.range(4)

    @tf.function
    def first_two():
        it = iter(ds)  # a new iterator at every call, as TF's
        return next(it), next(it)

    assert [int(v) for v in first_two()] == [0, 1]
    assert [int(v) for v in first_two()] == [0, 1]

    @tf.function
    def rest_sum():
        it = iter(ds)
        next(it)
        s = tf.constant(0, dtype=tf.int64)
        for x in it:  # continues the iterator
            s += x
        return s

    assert int(rest_sum()) == 1 + 2 + 3


def test_an_iterator_argument_continues_across_calls_and_ends_with_out_of_range():
    @tf.function
    def step(it):
        return next(it) * 2

    it = iter(tf.data.Dataset.range(3))
    assert [int(step(it)) for _ in range(3)] == [0, 2, 4]
    assert int(step(iter(tf.data.Dataset.range(5, 9)))) == 10
    assert step.experimental_get_tracing_count() == 1  # keyed by its IteratorSpec, as TF
    with pytest.raises(tf.errors.OutOfRangeError):
        step(it)


def test_dataset_reduce_inside_a_function_reads_at_run_time():
    @tf.function
    def total(ds):
        return ds.reduce(tf.constant(0, dtype=tf.int64), lambda acc, x: acc + x * x)

    for n in (3, 10, 0):
        ds = tf.data.Dataset.range(n)
        assert int(total(ds)) == int(ds.reduce(tf.constant(0, dtype=tf.int64), lambda a, x: a + x * x)) \
            == sum(i * i for i in range(n))
    assert total.experimental_get_tracing_count() == 1

    @tf.function
    def mean(ds):
        s, c = ds.reduce((tf.constant(0.0), tf.constant(0)), lambda st, x: (st[0] + x, st[1] + 1))
        return s / tf.cast(c, tf.float32)

    assert float(mean(tf.data.Dataset.from_tensor_slices([1.0, 2.0, 6.0]))) == 3.0

    @tf.function
    def bad(ds):
        return ds.reduce(tf.constant(0, dtype=tf.int64), lambda acc, x: tf.cast(acc, tf.float32))

    with pytest.raises(TypeError, match="dtype"):
        bad(tf.data.Dataset.range(3))


def test_a_python_for_over_a_dataset_without_autograph_is_tfs_error():
    ds = tf.data.Dataset.range(3)

    @tf.function(autograph=False)
    def f():
        s = tf.constant(0, dtype=tf.int64)
        for x in ds:
            s += x
        return s

    with pytest.raises(ValueError, match="unusually high number of `tf.data.Iterator.get_next"):
        f()


def test_the_log_says_why(capsys):
    tf.autograph.set_verbosity(1)
    try:
        @tf.function
        def f(ds):
            s = tf.constant(0, dtype=tf.int64)
            for x in ds:
                s += x
            return s
        assert int(f(tf.data.Dataset.range(3))) == 3
    finally:
        tf.autograph.set_verbosity(0)
    assert "`for x in ds`: converted to ef.while_loop (ds is a dataset, read when the graph runs)" in capsys.readouterr().err


def test_get_next_as_optional_inside_a_function():
    @tf.function
    def next_or_minus_one(it):
        opt = it.get_next_as_optional()
        if opt.has_value():
            v = opt.get_value() * 10
        else:
            v = tf.constant(-1, dtype=tf.int64)
        return v

    it = iter(tf.data.Dataset.range(3))
    assert [int(next_or_minus_one(it)) for _ in range(5)] == [0, 10, 20, -1, -1]

    @tf.function
    def value_of_empty():
        return iter(tf.data.Dataset.range(0)).get_next_as_optional().get_value()

    with pytest.raises(tf.errors.InvalidArgumentError, match="does not have a value"):
        value_of_empty()


def test_dataset_loops_nested_in_tensor_control_flow_and_string_elements():
    ds = tf.data.Dataset.range(3)

    @tf.function
    def weighted_passes(n):
        total = tf.constant(0, dtype=tf.int64)
        for i in tf.range(n):
            for x in ds:  # a fresh iterator in every outer iteration
                total += x * tf.cast(i + 1, tf.int64)
        return total

    assert int(weighted_passes(tf.constant(3))) == (0 + 1 + 2) * (1 + 2 + 3)

    @tf.function
    def maybe_sum(d, flag):
        t = tf.constant(0, dtype=tf.int64)
        if flag > 0:
            for x in d:
                t += x
        return t

    assert int(maybe_sum(ds, tf.constant(1))) == 3 and int(maybe_sum(ds, tf.constant(0))) == 0

    @tf.function
    def total_length(d):
        n = tf.constant(0)
        for s in d:
            n += tf.strings.length(s)
        return n

    assert int(total_length(tf.data.Dataset.from_tensor_slices(["a", "bbb", "cc"]))) == 6
