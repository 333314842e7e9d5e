"""tf.debugging.check_numerics as a statement inside tf.function (its result unused) still checks
every call, as TF's does (the guide on graph optimization relies on it)."""
import pytest

import eagerflow as tf


def test_an_unused_check_still_runs_in_a_trace():
    @tf.function
    def f(x):
        tf.debugging.check_numerics(x, "Bad!")
        return x

    assert float(f(tf.constant(2.0))) == 2.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="Bad!"):
        f(tf.constant(float("inf")))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Bad!"):
        f(tf.constant(float("nan")))
    assert f.experimental_get_tracing_count() == 1


def test_a_used_check_and_eager_checks_are_unchanged():
    @tf.function
    def g(x):
        return tf.debugging.check_numerics(x, "Bad!") * 2.0

    assert g(tf.constant([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Bad!"):
        g(tf.constant([1.0, float("inf")]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="NaN"):
        tf.debugging.check_numerics(tf.constant([1.0, float("nan")]), "Bad!")


def test_integers_need_no_check():
    @tf.function
    def h(x):
        tf.debugging.check_numerics(tf.cast(x, tf.float32), "ok")
        return x + 1
    assert int(h(tf.constant(1))) == 2
