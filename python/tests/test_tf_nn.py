"""ef.nn as TF's tf.nn: activations, cross-entropies with logits, moments and normalization
helpers, against NumPy references in float64, eager and traced."""
import numpy as np
import pytest

import eagerflow as tf

RNG = np.random.default_rng(31)
X = RNG.standard_normal((3, 5)) * 3


def both_ways(fn, *args):
    eager = np.asarray(fn(*args))
    np.testing.assert_array_equal(eager, np.asarray(tf.function(fn)(*args)))
    return eager


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.2 * x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
    "silu": lambda x: x * sigmoid(x),
    "swish": lambda x: x * sigmoid(x),
    "softplus": lambda x: np.logaddexp(0, x),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "sigmoid": sigmoid,
    "tanh": np.tanh,
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations(name):
    got = both_ways(lambda x: getattr(tf.nn, name)(x, name="a"), X)
    np.testing.assert_allclose(got, ACTIVATIONS[name](X), rtol=1e-12, atol=1e-15)


def test_activation_arguments_as_tf():
    np.testing.assert_allclose(tf.nn.leaky_relu(X, alpha=0.1).numpy(), np.where(X >= 0, X, 0.1 * X))
    np.testing.assert_allclose(tf.nn.silu(X, beta=2.0).numpy(), X * sigmoid(2 * X), rtol=1e-12)
    from math import erf
    exact = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))(X)
    np.testing.assert_allclose(tf.nn.gelu(X).numpy(), exact, rtol=1e-12, atol=1e-15)
    tanh_form = 0.5 * X * (1 + np.tanh(np.sqrt(2 / np.pi) * (X + 0.044715 * X ** 3)))
    np.testing.assert_allclose(tf.nn.gelu(X, approximate=True).numpy(), tanh_form, rtol=1e-12, atol=1e-15)
    e = np.exp(X - X.max(-1, keepdims=True))
    np.testing.assert_allclose(tf.nn.softmax(X).numpy(), e / e.sum(-1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(tf.nn.log_softmax(X, axis=0).numpy(),
                               X - np.log(np.exp(X).sum(0, keepdims=True)), rtol=1e-12, atol=1e-12)


def test_cross_entropies_with_logits():
    z = (RNG.random((3, 5)) > 0.5).astype(np.float64)
    want = np.maximum(X, 0) - X * z + np.log1p(np.exp(-np.abs(X)))
    got = both_ways(lambda lab, lo: tf.nn.sigmoid_cross_entropy_with_logits(labels=lab, logits=lo), z, X)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, -(z * np.log(sigmoid(X)) + (1 - z) * np.log(1 - sigmoid(X))), rtol=1e-9)
    q = 3.0
    weighted = -(q * z * np.log(sigmoid(X)) + (1 - z) * np.log(1 - sigmoid(X)))
    np.testing.assert_allclose(tf.nn.weighted_cross_entropy_with_logits(z, X, q).numpy(), weighted, rtol=1e-9)
    p = RNG.random((3, 5))
    p /= p.sum(-1, keepdims=True)
    log_sm = X - np.log(np.exp(X).sum(-1, keepdims=True))
    np.testing.assert_allclose(tf.nn.softmax_cross_entropy_with_logits(p, X).numpy(), -(p * log_sm).sum(-1), rtol=1e-12)
    labels = np.array([0, 4, 2])
    np.testing.assert_allclose(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=X).numpy(),
                               -log_sm[np.arange(3), labels], rtol=1e-12)
    with pytest.raises(ValueError):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=z[:, :2], logits=X)
    with pytest.raises(ValueError):
        tf.nn.sparse_softmax_cross_entropy_with_logits(logits=X)


def test_softmax_cross_entropy_gradient_is_softmax_minus_labels():
    p = np.eye(5)[[1, 3, 0]]
    v = tf.Variable(X)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(p, v))
    e = np.exp(X - X.max(-1, keepdims=True))
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), e / e.sum(-1, keepdims=True) - p, rtol=1e-12, atol=1e-15)


def test_moments_normalization_and_helpers():
    mean, var = tf.nn.moments(X, axes=[0])
    np.testing.assert_allclose(mean.numpy(), X.mean(0), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), X.var(0), rtol=1e-12)
    mean_k, var_k = tf.nn.moments(X, axes=[0, 1], keepdims=True)
    assert mean_k.shape == (1, 1) and var_k.shape == (1, 1)
    scale, offset = np.linspace(0.5, 2, 5), np.linspace(-1, 1, 5)
    got = tf.nn.batch_normalization(X, mean, var, offset, scale, 1e-3).numpy()
    np.testing.assert_allclose(got, (X - X.mean(0)) * scale / np.sqrt(X.var(0) + 1e-3) + offset, rtol=1e-12)
    np.testing.assert_allclose(tf.nn.batch_normalization(X, mean, var, None, None, 1e-3).numpy(),
                               (X - X.mean(0)) / np.sqrt(X.var(0) + 1e-3), rtol=1e-12)
    assert tf.nn.l2_loss(X).numpy() == pytest.approx((X ** 2).sum() / 2, rel=1e-14)
    b = np.arange(5.0)
    np.testing.assert_array_equal(tf.nn.bias_add(X, b).numpy(), X + b)
    img = RNG.standard_normal((2, 3, 4, 4))
    np.testing.assert_array_equal(tf.nn.bias_add(img, [1.0, 2.0, 3.0], data_format="NCHW").numpy(),
                                  img + np.array([1.0, 2.0, 3.0])[:, None, None])
    with pytest.raises(ValueError):
        tf.nn.bias_add(X, np.ones((5, 1)))
    table = RNG.standard_normal((10, 4))
    np.testing.assert_array_equal(tf.nn.embedding_lookup(table, [3, 0, 3]).numpy(), table[[3, 0, 3]])
    np.testing.assert_allclose(tf.nn.l2_normalize(X, axis=1).numpy(), X / np.linalg.norm(X, axis=1, keepdims=True), rtol=1e-12)


def test_dropout_as_tf():
    x = tf.ones([200, 200])
    y = tf.nn.dropout(x, rate=0.25, seed=7).numpy()
    kept = y != 0
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs(kept.mean() - 0.75) < 0.02
    assert tf.nn.dropout(x, 0.0) is not None and np.array_equal(tf.nn.dropout(x, 0.0).numpy(), x.numpy())
    rows = tf.nn.dropout(x, 0.5, noise_shape=[200, 1], seed=3).numpy()
    assert all(len(set(r)) == 1 for r in rows)  # one draw per row, broadcast over it
    with pytest.raises(ValueError):
        tf.nn.dropout(x, 1.0)
