"""Keras' metrics from Python: against formulas in NumPy (float64), AUC against Keras' bucketed
algorithm written again here in NumPy, sample_weight with Keras' rules, updates inside
ef.function equal to eager ones, by name and in compile/fit."""
import math

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

M = keras.metrics
rng = np.random.default_rng(11)


def _result(m):
    return np.asarray(m.result().numpy(), np.float64)


# ---------------------------------------------------------------- AUC reference (Keras' algorithm)
def _keras_confusion(y, p, w, num_thresholds):
    """metrics_utils._update_confusion_matrix_variables_optimized, from its description: bucket
    ceil(p (T - 1)) - 1 in float32 (at least 0), counts at threshold i = weights of buckets >= i."""
    T = num_thresholds
    q = np.clip(p.astype(np.float32), 0, 1)
    bucket = np.maximum(np.ceil(q * np.float32(T - 1)).astype(np.int64) - 1, 0)
    pos = y != 0
    tb = np.bincount(bucket[pos], weights=w[pos], minlength=T)
    fb = np.bincount(bucket[~pos], weights=w[~pos], minlength=T)
    tp, fp = np.cumsum(tb[::-1])[::-1], np.cumsum(fb[::-1])[::-1]
    return tp, fp, fb.sum() - fp, tb.sum() - tp


def _nn(a, b):
    return np.where(b == 0, 0.0, a / np.where(b == 0, 1.0, b))


def _roc(tp, fp, tn, fn):
    r, f = _nn(tp, tp + fn), _nn(fp, fp + tn)
    return np.sum((f[:-1] - f[1:]) * (r[:-1] + r[1:]) / 2)


def _pr(tp, fp, tn, fn):
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    slope = _nn(dtp, np.maximum(p[:-1] - p[1:], 0))
    intercept = tp[1:] - slope * p[1:]
    ratio = np.where((p[:-1] > 0) & (p[1:] > 0), _nn(p[:-1], np.maximum(p[1:], 0)), 1.0)
    return np.sum(_nn(slope * (dtp + intercept * np.log(ratio)), np.maximum(tp[1:] + fn[1:], 0)))


def _binary(n, T):
    y = (rng.random(n) < 0.4).astype(np.float32)
    p = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    p[::7] = np.floor(p[::7] * (T - 1)) / (T - 1)  # exactly on thresholds
    p[::29] = 1.0
    p[3::31] = 0.0
    return y, p.astype(np.float32), (0.25 + rng.random(n)).astype(np.float32)


def test_auc_docstring_examples():
    m = M.AUC(num_thresholds=3)
    m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
    assert abs(float(m.result()) - 0.75) < 1e-7
    m.reset_state()
    m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9], sample_weight=[1, 0, 0, 1])
    assert abs(float(m.result()) - 1.0) < 1e-7
    assert len(M.AUC().thresholds) == 200


@pytest.mark.parametrize("T", [200, 13])
@pytest.mark.parametrize("curve", ["ROC", "PR"])
def test_auc_matches_keras_algorithm(T, curve):
    y, p, w = _binary(900, T)
    ref = _roc if curve == "ROC" else _pr
    m, mw = M.AUC(num_thresholds=T, curve=curve), M.AUC(num_thresholds=T, curve=curve, name="auc_w")
    for b in range(3):
        s = slice(b * 300, (b + 1) * 300)
        m.update_state(y[s].reshape(-1, 1), p[s].reshape(-1, 1))
        mw.update_state(y[s], p[s].reshape(-1, 1), sample_weight=w[s])
    assert abs(float(m.result()) - ref(*_keras_confusion(y, p, np.ones_like(w, np.float64), T))) < 2e-6
    assert abs(float(mw.result()) - ref(*_keras_confusion(y, p, w.astype(np.float64), T))) < 2e-6
    assert float(m.result()) > 0.6


def test_auc_options():
    with pytest.raises(ValueError, match="summation_method"):
        M.AUC(summation_method="minoring")
    with pytest.raises(ValueError, match="multi_label"):
        M.AUC(multi_label=True)
    with pytest.raises(ef.Error, match="curve must be"):
        M.AUC(curve="XY")
    a, b = M.AUC(from_logits=True), M.AUC()
    a.update_state([0, 1, 1, 0], [-2.0, 1.0, 0.5, 0.1])
    b.update_state([0, 1, 1, 0], 1 / (1 + np.exp(-np.array([-2.0, 1.0, 0.5, 0.1], np.float32))))
    assert abs(float(a.result()) - float(b.result())) < 1e-6
    m = M.AUC(thresholds=[0.5, 0.25])
    assert m.thresholds[1:3] == [0.25, 0.5]


# ---------------------------------------------------------------- Precision, Recall
def test_precision_recall_docstrings_and_formula():
    m = M.Precision()
    m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    assert abs(float(m.result()) - 2 / 3) < 1e-6
    m.reset_state()
    m.update_state([0, 1, 1, 1], [1, 0, 1, 1], sample_weight=[0, 0, 1, 0])
    assert float(m.result()) == 1.0
    top2, top4 = M.Precision(top_k=2), M.Precision(top_k=4)
    top2.update_state([0, 0, 1, 1], [1, 1, 1, 1])
    top4.update_state([0, 0, 1, 1], [1, 1, 1, 1])
    assert float(top2.result()) == 0.0 and abs(float(top4.result()) - 0.5) < 1e-7

    y = (rng.random((12, 3)) < 0.35).astype(np.float32)
    p = rng.random((12, 3)).astype(np.float32)
    w = rng.random(12).astype(np.float32)
    thresholds = [0.3, 0.5, 0.8]
    pm, rm = M.Precision(thresholds=thresholds), M.Recall(thresholds=thresholds, name="r")
    pm.update_state(y, p, sample_weight=w)
    rm.update_state(y, p, sample_weight=w)
    ww = np.broadcast_to(w[:, None], y.shape).astype(np.float64)
    for i, t in enumerate(thresholds):
        pos = p > np.float32(t)
        tp, fp, fn = (ww * (pos & (y == 1))).sum(), (ww * (pos & (y == 0))).sum(), (ww * (~pos & (y == 1))).sum()
        assert abs(_result(pm)[i] - tp / (tp + fp)) < 1e-6
        assert abs(_result(rm)[i] - tp / (tp + fn)) < 1e-6
    assert rm.name == "r" and M.Recall().name == "recall"
    col = M.Recall(class_id=1)
    col.update_state([[1, 1], [0, 1], [0, 0]], [[0.9, 0.8], [0.1, 0.3], [0.2, 0.9]])
    assert abs(float(col.result()) - 0.5) < 1e-7


# ---------------------------------------------------------------- regression, top k, F1
def test_regression_metrics_with_weights():
    y1, p1, w1 = rng.normal(size=(5, 2)), rng.normal(size=(5, 2)), rng.random(5)
    y2, p2, w2 = rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), rng.random(3)
    f = lambda a: a.astype(np.float32)
    mae, mse, rmse = M.MeanAbsoluteError(), M.MeanSquaredError(), M.RootMeanSquaredError()
    for m in (mae, mse, rmse):
        m.update_state(f(y1), f(p1), sample_weight=f(w1))
        m.update_state(f(y2), f(p2), f(w2).reshape(3, 1))
    Y = np.concatenate([f(y1), f(y2)]).astype(np.float64)
    P = np.concatenate([f(p1), f(p2)]).astype(np.float64)
    W = np.concatenate([f(w1), f(w2)]).astype(np.float64)
    want_mae = np.sum(np.mean(np.abs(P - Y), -1) * W) / W.sum()
    want_mse = np.sum(np.mean((P - Y) ** 2, -1) * W) / W.sum()
    assert abs(float(mae.result()) - want_mae) < 1e-6
    assert abs(float(mse.result()) - want_mse) < 1e-6
    assert abs(float(rmse.result()) - math.sqrt(want_mse)) < 1e-6
    assert (mae.name, mse.name, rmse.name) == ("mean_absolute_error", "mean_squared_error", "root_mean_squared_error")
    # [B] labels against [B, 1] predictions: one error per example, not a [B, B] broadcast.
    m = M.MeanAbsoluteError()
    m.update_state(np.array([1, 2, 3], np.float32), np.array([[1.5], [1.0], [3.0]], np.float32))
    assert abs(float(m.result()) - 0.5) < 1e-7
    # Mean takes weights too (Keras' docstring).
    mean = M.Mean()
    mean.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    assert float(mean.result()) == 2.0


def test_top_k_accuracies():
    m = M.TopKCategoricalAccuracy(k=1)
    m.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    assert float(m.result()) == 0.5
    s = M.SparseTopKCategoricalAccuracy(k=1)
    s.update_state([2, 1], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    assert float(s.result()) == 0.5
    scores = rng.random((20, 6)).astype(np.float32)
    labels = rng.integers(0, 6, 20)
    w = rng.random(20).astype(np.float32)
    k5 = M.SparseTopKCategoricalAccuracy()
    k5.update_state(labels.reshape(-1, 1), scores, sample_weight=w)
    hit = np.array([np.sum(scores[i] > scores[i, labels[i]]) < 5 for i in range(20)], np.float64)
    assert abs(float(k5.result()) - np.sum(hit * w) / np.sum(w.astype(np.float64))) < 1e-6
    with pytest.raises(ef.Error, match=r"sparse_top_k_categorical_accuracy.*label value of 6.*\[0, 6\)"):
        k5.update_state(np.array([6] * 20), scores)
    with pytest.raises(ef.Error, match=r"label value of -1"):
        k5.update_state(np.array([-1] * 20), scores)


def test_f1_score():
    y = np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0]], np.int32)
    p = np.array([[0.2, 0.6, 0.7], [0.2, 0.6, 0.6], [0.6, 0.8, 0.0]], np.float32)
    m = M.F1Score(threshold=0.5)
    m.update_state(y, p)
    np.testing.assert_allclose(m.result().numpy(), [0.5, 0.8, 0.6666667], rtol=1e-5)  # Keras' docstring
    w = np.array([0.5, 2.0, 1.0], np.float32)
    for average in ("micro", "macro", "weighted"):
        f = M.F1Score(average=average, threshold=0.5)
        f.update_state(y, p, sample_weight=w)
        pred = (p > 0.5).astype(np.float64)
        t, ww = y.astype(np.float64), w.astype(np.float64)[:, None]
        axis = None if average == "micro" else 0
        tp, fp, fn = (np.sum(ww * pred * t, axis), np.sum(ww * pred * (1 - t), axis), np.sum(ww * (1 - pred) * t, axis))
        pr, re = tp / (tp + fp + 1e-7), tp / (tp + fn + 1e-7)
        f1 = 2 * pr * re / (pr + re + 1e-7)
        support = np.sum(ww * t, 0)
        want = np.sum(f1 * support / (support.sum() + 1e-7)) if average == "weighted" else np.mean(f1)
        assert abs(float(f.result()) - want) < 1e-5, average
    with pytest.raises(ef.Error, match="average must be"):
        M.F1Score(average="sum")


# ---------------------------------------------------------------- traced == eager
@pytest.mark.parametrize("make", [
    lambda: M.AUC(), lambda: M.AUC(curve="PR"), lambda: M.Precision(thresholds=[0.3, 0.6]), lambda: M.Recall(top_k=2),
    lambda: M.RootMeanSquaredError(), lambda: M.MeanAbsoluteError(), lambda: M.TopKCategoricalAccuracy(k=2),
    lambda: M.F1Score(average="macro"), lambda: M.F1Score(threshold=0.4)],
    ids=["auc", "auc_pr", "precision", "recall_top2", "rmse", "mae", "top_k", "f1_macro", "f1_none"])
def test_traced_updates_equal_eager(make):
    eager, traced = make(), make()

    @ef.function
    def step(y, p, w):
        traced.update_state(y, p, sample_weight=w)
        return ef.reduce_sum(p)

    for _ in range(3):
        y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 8)]
        p = rng.random((8, 4)).astype(np.float32)
        w = rng.random(8).astype(np.float32)
        eager.update_state(y, p, sample_weight=w)
        step(y, p, w)
    assert len(step.traces) == 1
    np.testing.assert_allclose(_result(traced), _result(eager), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- by name, compile and fit
def test_by_name_and_in_fit():
    for name in ["mae", "mse", "rmse", "root_mean_squared_error", "auc", "precision", "recall",
                 "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "f1_score"]:
        assert M.get(name).name == name
    x = rng.normal(size=(256, 4)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="adam", loss="binary_crossentropy",
                  metrics=["auc", M.Precision(name="p"), M.Recall(thresholds=0.5), "mae"])
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    for key in ("auc", "p", "recall", "mae"):
        assert key in history.history and len(history.history[key]) == 3
    res = model.evaluate(x, y, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0).reshape(-1).astype(np.float64)
    tp, fp = np.sum((pred > 0.5) & (y == 1)), np.sum((pred > 0.5) & (y == 0))
    assert abs(res["p"] - tp / (tp + fp)) < 1e-5
    assert abs(res["mae"] - np.mean(np.abs(pred - y))) < 1e-5
    assert abs(res["auc"] - _roc(*_keras_confusion(y, pred.astype(np.float32), np.ones(256), 200))) < 1e-5
