"""Keras' regression and margin losses from Python, against their formulas in NumPy (per example
over the last axis, averaged over the batch), by object and by name, and in a fit."""
import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

rng = np.random.default_rng(7)
Y = rng.normal(size=(4, 3)).astype(np.float32)
P = rng.normal(size=(4, 3)).astype(np.float32)


def _huber(y, p, delta=1.0):
    e = np.abs(p - y)
    return np.mean(np.where(e <= delta, 0.5 * e * e, delta * (e - 0.5 * delta)))


def _unit(v):
    return v / np.sqrt(np.maximum(np.sum(v * v, axis=-1, keepdims=True), 1e-12))


CASES = [
    (keras.losses.MeanAbsoluteError(), "mae", lambda y, p: np.mean(np.abs(p - y))),
    (keras.losses.Huber(), "huber", _huber),
    (keras.losses.Huber(delta=0.3), None, lambda y, p: _huber(y, p, 0.3)),
    (keras.losses.LogCosh(), "log_cosh", lambda y, p: np.mean(np.log(np.cosh(p - y)))),
    (keras.losses.CosineSimilarity(), "cosine_similarity", lambda y, p: np.mean(-np.sum(_unit(y) * _unit(p), -1))),
]


@pytest.mark.parametrize("loss,name,formula", CASES, ids=[c[0].name + (c[1] or "") for c in CASES])
def test_losses_match_their_formulas(loss, name, formula):
    want = formula(Y.astype(np.float64), P.astype(np.float64))
    assert abs(float(loss(Y, P)) - want) < 1e-5
    if name:
        assert abs(float(keras.losses.get(name)(Y, P)) - want) < 1e-5


def test_count_margin_and_distribution_losses():
    counts = np.array([[0, 1, 2], [3, 0, 5]], np.float32)
    rates = np.array([[0.5, 1.0, 2.5], [1.5, 0.2, 4.0]], np.float32)
    assert abs(float(keras.losses.Poisson()(counts, rates)) - np.mean(rates - counts * np.log(rates + 1e-7))) < 1e-5
    signs = np.array([[1, -1, 1], [-1, -1, 1]], np.float32)
    want = np.mean(np.maximum(1 - signs * P[:2], 0))
    assert abs(float(keras.losses.Hinge()(signs, P[:2])) - want) < 1e-6
    assert abs(float(keras.losses.get("hinge")((signs + 1) / 2, P[:2])) - want) < 1e-6  # {0,1} labels
    y = np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0]], np.float32)
    p = np.array([[0.1, 0.6, 0.3], [0.25, 0.5, 0.25]], np.float32)
    yc, pc = np.clip(y, 1e-7, 1), np.clip(p, 1e-7, 1)
    want = np.mean(np.sum(yc * np.log(yc / pc), -1))
    assert abs(float(keras.losses.KLDivergence()(y, p)) - want) < 1e-5
    assert abs(float(keras.losses.get("kld")(y, p)) - want) < 1e-5


def test_fit_with_huber_by_name_reduces_the_loss():
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None] + 5.0 * (rng.random((64, 1)) < 0.1)  # outliers
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.05), loss="huber")
    h = model.fit(x, y.astype(np.float32), batch_size=16, epochs=20, verbose=0)
    assert h.history["loss"][-1] < 0.5 * h.history["loss"][0]
    with pytest.raises(ef.Error, match="unknown loss 'nope'"):
        keras.losses.get("nope")


# ---------------------------------------------------------------- sample_weight, alignment, labels
def test_sample_weight_sums_over_batch_size():
    y, p = Y.astype(np.float64), P.astype(np.float64)
    w = np.array([0.5, 2.0, 0.0, 1.5], np.float32)
    per_example = np.mean((p - y) ** 2, axis=-1)
    want = np.sum(per_example * w) / 4  # divided by the batch size, not by sum(w) = 4.0 by chance
    w2 = np.array([1.0, 3.0, 0.0, 0.0], np.float32)
    want2 = np.sum(per_example * w2) / 4
    mse = keras.losses.MeanSquaredError()
    assert abs(float(mse(Y, P, sample_weight=w)) - want) < 1e-5
    assert abs(float(mse(Y, P, sample_weight=w2)) - want2) < 1e-5
    assert abs(float(mse(Y, P, w2.reshape(4, 1))) - want2) < 1e-5
    assert abs(float(mse(Y, P, sample_weight=None)) - np.mean(per_example)) < 1e-6
    np.testing.assert_allclose(mse.per_example(Y, P).numpy(), per_example, rtol=1e-5)
    huber = keras.losses.get("huber")
    assert abs(float(huber(Y, P, sample_weight=w2)) - np.sum(w2 * np.mean(
        np.where(np.abs(p - y) <= 1, 0.5 * (p - y) ** 2, np.abs(p - y) - 0.5), -1)) / 4) < 1e-5
    with pytest.raises(ef.Error, match=r"sample_weight float32\[3\]"):
        mse(Y, P, sample_weight=np.ones(3, np.float32))


def test_sample_weight_inside_a_traced_function_and_gradient():
    mse = keras.losses.MeanSquaredError()
    w = np.array([1.0, 0.0, 2.0, 0.5], np.float32)

    @ef.function
    def f(y, p, w):
        return mse(y, p, sample_weight=w)

    assert float(f(Y, P, w)) == float(mse(Y, P, sample_weight=w))
    g = ef.grad(lambda p: mse(ef.constant(Y), p, sample_weight=ef.constant(w)))(ef.constant(P)).numpy()
    want = w[:, None] * 2 * (P.astype(np.float64) - Y) / 3 / 4
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("loss", [keras.losses.MeanSquaredError(), keras.losses.MeanAbsoluteError(),
                                  keras.losses.BinaryCrossentropy(), keras.losses.Huber(), keras.losses.Hinge(),
                                  keras.losses.CosineSimilarity()], ids=lambda l: l.name)
def test_rank_one_labels_align_with_column_predictions(loss):
    y = np.array([1.0, 0.0, 1.0, 1.0], np.float32)
    p = np.array([[0.8], [0.3], [0.4], [0.9]], np.float32)
    same = loss.per_example(y.reshape(4, 1), p).numpy()
    assert same.shape == (4,)
    for a, b in [(y, p), (y.reshape(4, 1), p.reshape(4))]:
        np.testing.assert_array_equal(loss.per_example(a, b).numpy(), same)
        assert abs(float(loss(a, b)) - np.mean(same)) < 1e-6
    if loss.name == "mean_squared_error":  # a [4, 4] broadcast would give another number
        assert abs(float(loss(y, p)) - np.mean((p[:, 0] - y) ** 2)) < 1e-6


def test_python_loss_returning_per_example_values_is_weighted():
    loss = keras.losses.Loss(lambda y, p: ef.reduce_sum(ef.abs(p - y), axis=-1), "rows")
    rows = np.sum(np.abs(P.astype(np.float64) - Y), -1)
    assert abs(float(loss(Y, P)) - np.mean(rows)) < 1e-5
    assert abs(float(loss(Y, P, sample_weight=[1, 0, 0, 0])) - rows[0] / 4) < 1e-5


def test_sparse_labels_out_of_range_eagerly_and_traced():
    sce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    logits = np.zeros((2, 4), np.float32)
    for bad in (4, 11, -1):
        with pytest.raises(ef.Error, match=rf"label value of {bad}\b.*outside the valid range of \[0, 4\)"):
            sce(np.array([0, bad], np.int64), logits)
        with pytest.raises(ef.Error, match=rf"label value of {bad}\b"):
            sce(np.array([bad, 0], np.int64), logits, sample_weight=np.ones(2, np.float32))

    @ef.function
    def f(y, p):
        return sce(y, p)

    assert abs(float(f(np.array([0, 3], np.int64), logits)) - np.log(4)) < 1e-5
    for bad in (4, -2):
        with pytest.raises(ef.Error, match=rf"sparse_categorical_crossentropy.*label value of {bad}\b.*\[0, 4\)"):
            f(np.array([0, bad], np.int64), logits)
