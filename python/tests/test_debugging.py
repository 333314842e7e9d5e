"""tf.debugging and tf.errors: TF's assertions, classes and messages (issue 32)."""
import pickle

import numpy as np
import pytest

import eagerflow as tf

d = tf.debugging
IAE = tf.errors.InvalidArgumentError


def test_value_assertions_pass_and_fail_as_tf():
    x, y = tf.constant([1.0, 2.0]), tf.constant([1.0, 3.0])
    assert d.assert_equal(x, x) is None
    with pytest.raises(IAE) as info:
        d.assert_equal(x, y)
    assert str(info.value) == ("Condition x == y did not hold.\nIndices of first 1 different values:\n[[1]]\n"
                               "Corresponding x values:\n[2.]\nCorresponding y values:\n[3.]\n"
                               "First 2 elements of x:\n[1. 2.]\nFirst 2 elements of y:\n[1. 3.]")
    with pytest.raises(IAE, match="^custom\nCondition x == y did not hold"):
        d.assert_equal(x, y, message="custom")
    with pytest.raises(IAE, match="Condition x != y did not hold"):
        d.assert_none_equal(x, y)
    with pytest.raises(IAE, match="Condition x < y did not hold"):
        d.assert_less(x, y)
    d.assert_less_equal(x, y)
    with pytest.raises(IAE, match="Condition x > y did not hold"):
        d.assert_greater(y, x)
    d.assert_greater_equal(y, x)
    with pytest.raises(IAE, match="Incompatible shapes"):
        d.assert_equal(x, tf.constant([1.0, 2.0, 3.0]))


def test_broadcast_comparison_message():
    with pytest.raises(IAE) as info:
        d.assert_less(tf.constant([[1, 2], [3, 4]]), 3)
    assert str(info.value) == "Condition x < y did not hold.\nFirst 3 elements of x:\n[1 2 3]\nFirst 1 elements of y:\n[3]"
    d.assert_less(tf.constant([], tf.float32), tf.constant([], tf.float32))  # nothing to compare: holds


def test_sign_assertions():
    t = tf.constant([1, -1])
    for fn, sym in ((d.assert_positive, ">"), (d.assert_negative, "<"), (d.assert_non_negative, ">=")):
        with pytest.raises(IAE, match=f"Condition x {sym} 0 did not hold element-wise"):
            fn(t)
    with pytest.raises(IAE, match=r"x \(shape=\(2,\) dtype=int32\)"):
        d.assert_non_positive(t)
    d.assert_positive(tf.constant([1.0, 2.0]))
    d.assert_non_negative(tf.constant([0, 3]))


def test_assert_near():
    x = tf.constant([1.0, 2.0])
    d.assert_near(x, x + 1e-7)
    with pytest.raises(IAE, match="x and y not equal to tolerance"):
        d.assert_near(x, tf.constant([1.0, 3.0]))
    d.assert_near(x, tf.constant([1.0, 2.5]), atol=0.6)


def test_rank_shape_type_assertions():
    x = tf.constant([1.0, 2.0])
    d.assert_rank(x, 1)
    with pytest.raises(ValueError, match=r"must have rank 2.  Received rank 1, shape \(2,\)"):
        d.assert_rank(x, 2)
    with pytest.raises(ValueError, match="must have rank at least 2"):
        d.assert_rank_at_least(x, 2)
    with pytest.raises(ValueError, match=r"must have rank in \(0, 2\)"):
        d.assert_rank_in(x, (0, 2))
    with pytest.raises(ValueError, match=r"Expected scalar shape, saw shape: \(2,\)."):
        d.assert_scalar(x)
    assert d.assert_scalar(tf.constant(1.0)) is not None
    with pytest.raises(TypeError, match="tensor must be of type tf.int32; got tf.float32"):
        d.assert_type(x, tf.int32)
    d.assert_type(x, tf.float32)
    with pytest.raises(TypeError, match='Expected "x" to be integer type'):
        d.assert_integer(x)
    d.assert_integer(tf.constant(1))
    for bad in ("abc", np.zeros(2), x):
        with pytest.raises(TypeError, match='to be a "proper" iterable'):
            d.assert_proper_iterable(bad)
    d.assert_proper_iterable([1, 2])


def test_assert_shapes():
    x = tf.zeros([2])
    d.assert_shapes([(x, ("N",)), (tf.zeros([2, 3]), ("N", "M"))])
    d.assert_shapes([(tf.zeros([2, 3, 4]), (..., 4))])
    with pytest.raises(ValueError, match=r"Specified by tensor shape=\(2,\) dtype=float32 dimension 0.  Tensor "
                                         r"shape=\(3, 2\) dtype=float32 dimension 0 must have size 2"):
        d.assert_shapes([(x, ("N",)), (tf.zeros([3, 2]), ("N", 2))])
    with pytest.raises(ValueError, match="Specified explicitly.  Tensor shape=\\(2, 3\\) dtype=float32 dimension 1 must have size 2"):
        d.assert_shapes([(x, ("N",)), (tf.zeros([2, 3]), ("N", 2))])
    with pytest.raises(ValueError, match="must have rank 2"):
        d.assert_shapes([(x, ("N", "M"))])
    with pytest.raises(ValueError, match="must have size 1"):
        d.assert_shapes([(tf.zeros([2]), ())])


def test_float_dtype_and_numeric_checks():
    assert d.assert_same_float_dtype([tf.constant([1.0]), tf.constant([2.0])]) == tf.float32
    assert d.assert_same_float_dtype(None) == tf.float32
    with pytest.raises(ValueError, match="must be of the same type"):
        d.assert_same_float_dtype([tf.constant([1.0]), tf.constant([1.0], tf.float64)])
    with pytest.raises(ValueError, match="Expected floating point type"):
        d.assert_same_float_dtype([tf.constant(1)])
    got = [d.is_numeric_tensor(v) for v in (tf.constant([1.0]), tf.constant("a"), tf.constant(True), 1.0, np.zeros(1))]
    assert got == [True, False, False, False, False]
    with pytest.raises(IAE, match="bad"):
        d.check_numerics(tf.constant([1.0, np.nan]), "bad")
    with pytest.raises(IAE, match="msg"):
        d.assert_all_finite(tf.constant([np.inf]), "msg")
    np.testing.assert_array_equal(d.check_numerics(tf.constant([1.0]), "ok").numpy(), [1.0])


def test_Assert():
    x = tf.constant([1.0, 2.0])
    assert d.Assert(tf.constant(True), [x]) is None
    with pytest.raises(IAE, match="Summarized data: 1.0, 2.0\nb'text'"):
        d.Assert(tf.constant(False), [x, "text"])
    assert tf.Assert is d.Assert and tf.assert_equal is d.assert_equal


def test_under_function_static_checks_raise_at_trace():
    @tf.function
    def f(a):
        d.assert_rank(a, 2)
        return a
    with pytest.raises(ValueError, match="must have rank 2"):
        f(tf.constant([1.0]))

    @tf.function
    def g(a):
        d.assert_equal(tf.constant(1), tf.constant(2))  # constants: known at trace time
        return a
    with pytest.raises(IAE, match="Condition x == y did not hold"):
        g(tf.constant(1.0))

    @tf.function
    def h(a):
        return d.check_numerics(a, "traced check")  # an op: checked on every call
    h(tf.constant([1.0]))
    with pytest.raises(IAE, match="traced check"):
        h(tf.constant([np.nan]))


def test_errors_names_and_codes():
    codes = {"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4, "NOT_FOUND": 5,
             "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9,
             "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12, "INTERNAL": 13, "UNAVAILABLE": 14,
             "DATA_LOSS": 15, "UNAUTHENTICATED": 16}
    for name, code in codes.items():
        assert getattr(tf.errors, name) == code
    e = tf.errors.UnauthenticatedError(None, None, "no token")
    assert e.error_code == 16 and e.message == "no token" and isinstance(e, tf.errors.OpError)
    assert tf.errors.exception_type_from_error_code(16) is tf.errors.UnauthenticatedError
    assert issubclass(tf.errors.OperatorNotAllowedInGraphError, TypeError)


def test_bool_of_a_symbolic_tensor_is_operator_not_allowed():
    @tf.function(autograph=False)
    def f(x):
        if x > 0:
            return x
        return -x
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError) as info:
        f(tf.constant(1.0))
    assert isinstance(info.value, tf.errors.FailedPreconditionError) and isinstance(info.value, TypeError)
    again = pickle.loads(pickle.dumps(info.value))
    assert isinstance(again, tf.errors.OperatorNotAllowedInGraphError) and str(again) == str(info.value)


def test_under_function_value_checks_run_every_call():
    @tf.function
    def f(a, b):
        d.assert_equal(a, b, message="inputs differ")  # its result unused: still checked
        d.assert_positive(a)
        d.assert_near(a, b, atol=0.5)
        d.assert_less(a, b + 10.0)
        return a + 1.0
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(f(x, x).numpy(), [2.0, 3.0])
    with pytest.raises(IAE, match="inputs differ: Condition x == y did not hold"):
        f(x, tf.constant([1.0, 3.0]))
    with pytest.raises(IAE, match="Condition x > 0 did not hold element-wise"):
        f(-x, -x)
    np.testing.assert_array_equal(f(x, x).numpy(), [2.0, 3.0])  # passing again after a failure
    assert f.experimental_get_tracing_count() == 1  # the checks ran in the one trace

    @tf.function
    def g(a):
        d.Assert(tf.reduce_all(a > 0.0), [a])
        d.assert_none_equal(a, 5.0)
        d.assert_non_negative(a)
        return a
    g(tf.constant([1.0]))
    with pytest.raises(IAE, match="Expected the condition to be true"):
        g(tf.constant([-1.0]))
    with pytest.raises(IAE, match="Condition x != y did not hold"):
        g(tf.constant([5.0]))


def test_traced_checks_leave_gradients_alone():
    w = tf.Variable([1.0, 2.0])

    @tf.function
    def loss(x):
        d.assert_positive(x)
        return tf.reduce_sum(w * x)
    with tf.GradientTape() as tape:
        y = loss(tf.constant([3.0, 4.0]))
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [3.0, 4.0])


def test_checks_inside_a_keras_layer():
    class NonNegative(tf.keras.layers.Layer):
        def call(self, x):
            d.assert_non_negative(x)
            return x * 2.0
    inputs = tf.keras.Input(shape=(2,))
    model = tf.keras.Model(inputs, NonNegative()(inputs))
    np.testing.assert_array_equal(model(tf.constant([[1.0, 2.0]])).numpy(), [[2.0, 4.0]])
    with pytest.raises(IAE, match="Condition x >= 0 did not hold"):
        model(tf.constant([[-1.0, 2.0]]))
    np.testing.assert_array_equal(model.predict(np.array([[1.0, 2.0]], np.float32), verbose=0), [[2.0, 4.0]])
    with pytest.raises(IAE, match="Condition x >= 0 did not hold"):  # predict's traced step checks too
        model.predict(np.array([[-1.0, 2.0]], np.float32), verbose=0)
