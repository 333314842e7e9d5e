"""TF behaviour of the tensor layer (issue 31, first part): ef.math with TF's names, defaults and
dtypes, eager and traced; TF's printing; NumPy scalars; integer true division; tf.range's
dtype inference; tf.newaxis and tf.rank."""
import numpy as np
import pytest

import eagerflow as tf

X = np.array([[0.5, -1.25, 2.0], [3.5, 0.25, -0.75]], np.float32)
Y = np.array([[1.5, 0.5, -2.0], [0.25, 4.0, 1.0]], np.float32)
POS = np.abs(X) + 0.5

UNARY = {
    "abs": (np.abs, X), "ceil": (np.ceil, X), "cos": (np.cos, X), "exp": (np.exp, X), "floor": (np.floor, X),
    "log": (np.log, POS), "negative": (np.negative, X), "round": (np.round, X * 2), "rsqrt": (lambda a: 1 / np.sqrt(a), POS),
    "sigmoid": (lambda a: 1 / (1 + np.exp(-a)), X), "sin": (np.sin, X), "sqrt": (np.sqrt, POS), "square": (np.square, X),
    "tanh": (np.tanh, X),
}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide, "truediv": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "pow": lambda a, b: np.power(np.abs(a), b),
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}
REDUCTIONS = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min}


def both_ways(fn, *args):
    """fn's result eagerly and inside tf.function, which must agree."""
    eager = fn(*args)
    traced = tf.function(fn)(*args)
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(traced))
    return np.asarray(eager)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_as_numpy(name):
    ref, x = UNARY[name]
    got = both_ways(lambda a: getattr(tf.math, name)(a, name="op"), x)
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_as_numpy(name):
    x = np.abs(X) if name == "pow" else X
    got = both_ways(lambda a, b: getattr(tf.math, name)(a, b, name="op"), x, Y)
    np.testing.assert_allclose(got, BINARY[name](x.astype(np.float64), Y.astype(np.float64)), rtol=2e-6)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 1), False), (-1, False)])
def test_reductions_as_numpy(name, axis, keepdims):
    got = both_ways(lambda a: getattr(tf.math, name)(input_tensor=a, axis=axis, keepdims=keepdims, name="r"), X)
    ref = REDUCTIONS[name](X.astype(np.float64), axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(got, ref, rtol=2e-6)
    assert got.shape == np.shape(ref)


def test_any_all():
    b = np.array([[True, False], [False, False]])
    assert tf.math.reduce_any(b).numpy() == np.True_
    np.testing.assert_array_equal(tf.math.reduce_any(b, axis=1).numpy(), [True, False])
    np.testing.assert_array_equal(tf.math.reduce_all(b, axis=0).numpy(), [False, False])
    np.testing.assert_array_equal(tf.math.logical_and(b, ~b if False else np.logical_not(b)).numpy(), np.zeros((2, 2), bool))


def test_round_is_half_to_even_as_tf():
    np.testing.assert_array_equal(tf.math.round([0.5, 1.5, 2.5, -0.5, -1.5]).numpy(), [0.0, 2.0, 2.0, -0.0, -2.0])


def test_argmax_defaults_as_tf():
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 9.0]], np.float32)
    r = tf.math.argmax(x)  # axis None: axis 0; int64
    assert r.dtype == tf.int64
    np.testing.assert_array_equal(r.numpy(), [1, 0, 1])
    np.testing.assert_array_equal(tf.argmax(x, axis=1).numpy(), [1, 2])
    r32 = tf.math.argmax(x, 1, output_type=tf.int32)
    assert r32.dtype == tf.int32
    np.testing.assert_array_equal(r32.numpy(), [1, 2])


def test_cumsum_cumprod_as_tf():
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(tf.cumsum(x).numpy(), np.cumsum(x, axis=0))  # axis 0, not flattened
    np.testing.assert_array_equal(tf.math.cumprod(x, axis=1).numpy(), np.cumprod(x, axis=1))
    np.testing.assert_array_equal(tf.math.cumsum(x, axis=1, exclusive=True).numpy(), [[0, 1, 3], [0, 4, 9]])
    np.testing.assert_array_equal(tf.math.cumsum(x, axis=1, reverse=True).numpy(), [[6, 5, 3], [15, 11, 6]])


def test_add_n():
    a, b, c = X, Y, np.ones_like(X)
    np.testing.assert_allclose(both_ways(lambda p, q, r: tf.math.add_n([p, q, r]), a, b, c), a + b + c)
    with pytest.raises(ValueError):
        tf.math.add_n([])
    with pytest.raises(ValueError):
        tf.math.add_n([X, X[0]])


def test_softmax_default_axis_is_last():
    e = np.exp(X - X.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(tf.math.softmax(X).numpy(), e / e.sum(-1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(tf.math.log_softmax(X, axis=0).numpy(),
                               X - np.log(np.exp(X).sum(0, keepdims=True)), rtol=1e-5, atol=1e-6)


def test_gradients_flow_through_tf_math():
    v = tf.Variable(X)
    with tf.GradientTape() as tape:
        loss = tf.math.reduce_sum(tf.math.square(v) * 3.0)
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), 6 * X, rtol=1e-6)


def test_integer_true_division_is_float64_as_tf():
    a = tf.constant([1, 2, 3])
    for r in (a / 2, a / tf.constant([2, 2, 2]), tf.divide(a, 2), tf.math.truediv(a, 2), 7 / a):
        assert r.dtype == tf.float64
    np.testing.assert_array_equal((a / 2).numpy(), [0.5, 1.0, 1.5])
    np.testing.assert_allclose((7 / a).numpy(), [7.0, 3.5, 7 / 3])
    assert (tf.constant([1.0, 2.0]) / 2).dtype == tf.float32  # floats keep their dtype


def test_numpy_of_a_scalar_is_a_numpy_scalar():
    s = tf.constant(6.0).numpy()
    assert isinstance(s, np.float32) and s == np.float32(6.0)
    assert isinstance(tf.constant(3).numpy(), np.int32)
    assert isinstance(tf.constant(True).numpy(), np.bool_)
    assert isinstance(tf.constant([6.0]).numpy(), np.ndarray)


def test_printing_as_tf():
    assert str(tf.constant(2.2)) == "tf.Tensor(2.2, shape=(), dtype=float32)"
    assert repr(tf.constant(2.2)) == "<tf.Tensor: shape=(), dtype=float32, numpy=2.2>"
    assert str(tf.constant([1, 2])) == "tf.Tensor([1 2], shape=(2,), dtype=int32)"
    assert repr(tf.constant([1.5, 2.0])) == "<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1.5, 2. ], dtype=float32)>"
    assert str(tf.constant([[1, 2], [3, 4]])) == "tf.Tensor(\n[[1 2]\n [3 4]], shape=(2, 2), dtype=int32)"
    v = tf.Variable(1.5, name="x")
    assert repr(v) == "<tf.Variable 'x:0' shape=() dtype=float32, numpy=1.5>"


def test_name_arguments_are_accepted():
    np.testing.assert_array_equal(tf.constant(3.0, name="x").numpy(), 3.0)
    np.testing.assert_array_equal(tf.constant([1, 2], dtype=tf.float32, shape=(2, 1), name="y").numpy(), [[1.0], [2.0]])
    assert tf.convert_to_tensor([1.0], name="z").dtype == tf.float32


@pytest.mark.parametrize("args,dtype,values", [
    ((10.0,), "float32", np.arange(10.0)),
    ((0.0, 1.0, 0.25), "float32", [0, 0.25, 0.5, 0.75]),
    ((1.5, 4.0), "float32", [1.5, 2.5, 3.5]),
    ((5,), "int32", np.arange(5)),
    ((0, 10, 3), "int32", [0, 3, 6, 9]),
    ((5, 0, -2), "int32", [5, 3, 1]),
])
def test_range_infers_its_dtype_as_tf(args, dtype, values):
    r = tf.range(*args)
    assert r.dtype == getattr(tf, dtype)
    np.testing.assert_allclose(r.numpy(), values)


def test_newaxis_and_rank():
    x = tf.constant(X)
    assert x[:, tf.newaxis].shape == (2, 1, 3)
    assert x[tf.newaxis].shape == (1, 2, 3)
    r = tf.rank(x)
    assert r.dtype == tf.int32 and r.numpy() == 2
    assert tf.rank(5.0).numpy() == 0
    assert tf.function(lambda a: tf.rank(a) + 0)(X).numpy() == 2


def test_compositions_against_numpy_eager_and_traced():
    x = np.array([[1e-7, -0.5, 3.0], [20.0, -30.0, 0.25]], np.float64)
    np.testing.assert_allclose(both_ways(tf.math.log1p, np.abs(x)), np.log1p(np.abs(x)), rtol=1e-15)
    np.testing.assert_allclose(both_ways(tf.math.softplus, x), np.logaddexp(0, x), rtol=1e-15)
    np.testing.assert_allclose(both_ways(tf.math.log_sigmoid, x), -np.logaddexp(0, -x), rtol=1e-15)
    np.testing.assert_allclose(both_ways(lambda a: tf.math.reduce_prod(a, axis=1), x), np.prod(x, axis=1), rtol=1e-15)
    np.testing.assert_allclose(both_ways(lambda a: tf.math.reduce_logsumexp(a, axis=0), x),
                               np.logaddexp(x[0], x[1]), rtol=1e-15)
    np.testing.assert_allclose(both_ways(lambda a: tf.math.reduce_std(a, 1, True), x), np.std(x, 1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(both_ways(tf.math.reduce_variance, x), np.var(x), rtol=1e-14)
    np.testing.assert_allclose(both_ways(tf.math.reduce_euclidean_norm, x), np.linalg.norm(x), rtol=1e-15)
    np.testing.assert_allclose(both_ways(lambda a: tf.math.l2_normalize(a, axis=1), x),
                               x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-15)
    np.testing.assert_array_equal(both_ways(tf.math.sign, x), np.sign(x))
    np.testing.assert_allclose(both_ways(tf.math.squared_difference, x, 1.5), (x - 1.5) ** 2)
    np.testing.assert_allclose(tf.math.reciprocal(x).numpy(), 1 / x)


def test_special_values_as_tf():
    x = np.array([1.0, np.inf, np.nan, -np.inf, 0.0], np.float32)
    np.testing.assert_array_equal(tf.math.is_nan(x).numpy(), np.isnan(x))
    np.testing.assert_array_equal(tf.math.is_inf(x).numpy(), np.isinf(x))
    np.testing.assert_array_equal(tf.math.is_finite(x).numpy(), np.isfinite(x))
    y = np.array([0.0, 0.0, 0.0, 2.0, 4.0], np.float32)
    np.testing.assert_array_equal(tf.math.divide_no_nan(x, y).numpy(), [0, 0, 0, -np.inf, 0])
    np.testing.assert_array_equal(tf.math.multiply_no_nan(x, y).numpy(), [0, 0, 0, -np.inf, 0])
    np.testing.assert_array_equal(tf.math.xlogy([0.0, 2.0], [0.0, 1.0]).numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(tf.math.logical_xor([True, True, False], [True, False, False]).numpy(), [False, True, False])
    c = tf.math.count_nonzero(x)
    assert c.dtype == tf.int64 and c.numpy() == 4  # 1, inf, NaN and -inf count, 0 does not
    assert tf.math.count_nonzero(x, dtype=tf.int32).dtype == tf.int32
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.math.is_nan(tf.constant([1, 2]))


def test_compositions_differentiate():
    v = tf.Variable(np.array([[2.0, -3.0], [0.5, 4.0]]))
    with tf.GradientTape() as tape:
        y = tf.math.reduce_sum(tf.math.reduce_prod(v, axis=1)) + tf.math.reduce_sum(tf.math.log1p(v * v))
    g = tape.gradient(y, v).numpy()
    x = v.numpy()
    want = np.array([[x[0, 1], x[0, 0]], [x[1, 1], x[1, 0]]]) + 2 * x / (1 + x * x)
    np.testing.assert_allclose(g, want, rtol=1e-14)
    assert tf.reduce_prod is tf.math.reduce_prod
