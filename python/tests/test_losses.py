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
