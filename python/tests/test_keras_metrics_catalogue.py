"""Keras 3's metric catalogue (issue 33): values as Keras 3.15 gives them (reference numbers
computed once with Keras on the same data, or NumPy here), sample weights, reset_state, the
metric functions, and the metrics inside compile/fit/evaluate."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras
M = keras.metrics


def _data():
    rng = np.random.RandomState(0)
    yb = (rng.rand(20, 1) > 0.5).astype("float32")
    pb = rng.rand(20, 1).astype("float32")
    w = rng.rand(20).astype("float32")
    yc = np.eye(3, dtype="float32")[rng.randint(0, 3, 20)]
    pc = rng.rand(20, 3).astype("float32")
    pc /= pc.sum(1, keepdims=True)
    ys = rng.randint(0, 3, 20)
    yr = rng.rand(20, 2).astype("float32")
    pr = (yr + 0.3 * rng.rand(20, 2)).astype("float32")
    return dict(yb=yb, pb=pb, w=w, yc=yc, pc=pc, ys=ys, yr=yr, pr=pr)


D = _data()


def _twice(metric, *args, **kwargs):
    """update once weighted (as given), once unweighted, as the reference run did."""
    metric.update_state(*args, **kwargs)
    metric.update_state(*args)
    return np.asarray(metric.result())


# Keras 3.15.1's results for _twice on D (keras.metrics.<name>(...)).
KERAS = [
    ("Hinge", {}, ("yb", "pb"), 0.63239),
    ("SquaredHinge", {}, ("yb", "pb"), 0.64789),
    ("KLDivergence", {}, ("yb", "pb"), 0.33571),
    ("Poisson", {}, ("yb", "pb"), 0.89534),
    ("LogCoshError", {}, ("yb", "pb"), 0.07655),
    ("MeanSquaredLogarithmicError", {}, ("yb", "pb"), 0.06881),
    ("CosineSimilarity", {}, ("yb", "pb"), 0.70482),
    ("BinaryCrossentropy", {}, ("yb", "pb"), 0.47259),
    ("CategoricalHinge", {}, ("yc", "pc"), 1.06795),
    ("CategoricalCrossentropy", {}, ("yc", "pc"), 1.19987),
    ("SparseCategoricalCrossentropy", {}, ("ys", "pc"), 1.37482),
    ("TruePositives", {}, ("yb", "pb"), 14.47643),
    ("FalsePositives", {}, ("yb", "pb"), 2.81442),
    ("TrueNegatives", {}, ("yb", "pb"), 5.44974),
    ("FalseNegatives", {}, ("yb", "pb"), 5.2562),
    ("SensitivityAtSpecificity", {"specificity": 0.5}, ("yb", "pb"), 0.92043),
    ("PrecisionAtRecall", {"recall": 0.7}, ("yb", "pb"), 0.86583),
    ("R2Score", {}, ("yr", "pr"), 0.71388),
    ("BinaryIoU", {}, ("yb", "pb"), 0.56597),
    ("OneHotMeanIoU", {"num_classes": 3}, ("yc", "pc"), 0.24339),
]


@pytest.mark.parametrize("name,kwargs,keys,want", KERAS, ids=[k[0] for k in KERAS])
def test_weighted_then_unweighted_updates_match_keras(name, kwargs, keys, want):
    metric = getattr(M, name)(**kwargs)
    got = _twice(metric, D[keys[0]], D[keys[1]], sample_weight=D["w"])
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-5)


@pytest.mark.parametrize("name,kwargs,keys,want", [
    ("Sum", {}, None, 15.66793),
    ("SpecificityAtSensitivity", {"sensitivity": 0.6, "num_thresholds": 50}, ("yb", "pb"), 0.83333),
    ("RecallAtPrecision", {"precision": 0.4}, ("yb", "pb"), 1.0),
    ("PearsonCorrelation", {}, ("yr", "pr"), 0.9),
    ("ConcordanceCorrelation", {}, ("yr", "pr"), 0.65161),
    ("MeanIoU", {"num_classes": 3, "ignore_class": 1}, ("ys", "argmax"), 0.19907),
    ("OneHotIoU", {"num_classes": 3, "target_class_ids": [1]}, ("yc", "pc"), 0.28571),
])
def test_more_metrics_match_keras(name, kwargs, keys, want):
    metric = getattr(M, name)(**kwargs)
    if keys is None:
        got = _twice(metric, D["pb"][:, 0], sample_weight=D["w"])
    else:
        pred = np.argmax(D["pc"], 1) if keys[1] == "argmax" else D[keys[1]]
        got = _twice(metric, D[keys[0]], pred)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-5)


def test_thresholds_give_one_count_each():
    tp = M.TruePositives(thresholds=[0.2, 0.5, 0.8])
    fn = M.FalseNegatives(thresholds=[0.2, 0.5, 0.8])
    labels, preds = D["yb"][:, 0] > 0, D["pb"][:, 0]
    for m in (tp, fn):
        m.update_state(D["yb"], D["pb"])
    want_tp = [np.sum(labels & (preds > t)) for t in (0.2, 0.5, 0.8)]
    want_fn = [np.sum(labels & ~(preds > t)) for t in (0.2, 0.5, 0.8)]
    np.testing.assert_array_equal(tp.result().numpy(), want_tp)
    np.testing.assert_array_equal(fn.result().numpy(), want_fn)


def test_r2_score_per_output_and_adjusted_as_numpy():
    yt, yp = D["yr"], D["pr"]
    ss_res = ((yt - yp) ** 2).sum(0)
    ss_tot = ((yt - yt.mean(0)) ** 2).sum(0)
    raw = 1 - ss_res / ss_tot
    m = M.R2Score(class_aggregation=None)
    m.update_state(yt, yp)
    np.testing.assert_allclose(m.result().numpy(), raw, rtol=1e-5)
    adj = M.R2Score(num_regressors=2)
    adj.update_state(yt, yp)
    n = yt.size
    np.testing.assert_allclose(float(adj.result()), 1 - (1 - raw.mean()) * (n - 1) / (n - 2 - 1), rtol=1e-5)
    with pytest.raises(ValueError, match="class_aggregation"):
        M.R2Score(class_aggregation="median")


def test_iou_as_numpy_and_integer_weights_as_keras():
    yt = np.array([0, 0, 1, 1, 2, 2])
    yp = np.array([0, 1, 1, 1, 2, 0])
    cm = np.zeros((3, 3))
    for t, p in zip(yt, yp):
        cm[t, p] += 1
    iou = np.diag(cm) / (cm.sum(0) + cm.sum(1) - np.diag(cm))
    m = M.MeanIoU(num_classes=3)
    m.update_state(yt, yp)
    np.testing.assert_allclose(float(m.result()), iou.mean(), rtol=1e-6)
    # Keras' IoU state is "int" by default: weights below 1 count as 0.
    weighted = M.IoU(num_classes=3, target_class_ids=[0])
    weighted.update_state(yt, yp, sample_weight=np.full(6, 0.9))
    assert float(weighted.result()) == 0.0
    as_float = M.IoU(num_classes=3, target_class_ids=[0], dtype="float32")
    as_float.update_state(yt, yp, sample_weight=np.full(6, 0.9))
    np.testing.assert_allclose(float(as_float.result()), iou[0], rtol=1e-6)
    with pytest.raises(ValueError, match="out of range"):
        M.IoU(num_classes=2, target_class_ids=[2])


def test_mean_metric_wrapper_reset_and_weights():
    m = M.MeanMetricWrapper(M.mean_squared_error, name="mse_w")
    yt, yp, w = D["yr"], D["pr"], D["w"]
    m.update_state(yt, yp, sample_weight=w)
    per = ((yt - yp) ** 2).mean(-1)
    np.testing.assert_allclose(float(m.result()), (per * w).sum() / w.sum(), rtol=1e-5)
    m.reset_state()
    assert float(m.result()) == 0.0
    m.update_state(yt, yp)
    np.testing.assert_allclose(float(m.result()), per.mean(), rtol=1e-5)
    assert m.name == "mse_w"


def test_metric_functions_as_keras():
    yc, pc, ys = D["yc"], D["pc"], D["ys"]
    np.testing.assert_array_equal(M.categorical_accuracy(yc, pc).numpy(), (yc.argmax(1) == pc.argmax(1)))
    np.testing.assert_array_equal(M.sparse_categorical_accuracy(ys, pc).numpy(), (ys == pc.argmax(1)))
    np.testing.assert_array_equal(M.sparse_categorical_accuracy(ys[:, None], pc).numpy(), (ys == pc.argmax(1)))
    top2 = np.argsort(-pc, 1)[:, :2]
    np.testing.assert_array_equal(M.sparse_top_k_categorical_accuracy(ys, pc, k=2).numpy(),
                                  [y in t for y, t in zip(ys, top2)])
    np.testing.assert_array_equal(M.top_k_categorical_accuracy(yc, pc, k=2).numpy(),
                                  [y in t for y, t in zip(yc.argmax(1), top2)])
    np.testing.assert_array_equal(
        M.sparse_top_k_categorical_accuracy(ys, np.argsort(-pc, 1), k=1, from_sorted_ids=True).numpy(),
        ys == pc.argmax(1))
    # Keras 3: binary_accuracy keeps the last axis (one value per element).
    got = M.binary_accuracy(D["yb"], D["pb"]).numpy()
    assert got.shape == (20, 1)
    np.testing.assert_array_equal(got, D["yb"] == (D["pb"] > 0.5))
    np.testing.assert_allclose(M.mean_squared_error(D["yr"], D["pr"]).numpy(), ((D["yr"] - D["pr"]) ** 2).mean(-1),
                               rtol=1e-6)


def test_traced_update_equals_eager():
    eager = M.PrecisionAtRecall(0.7)
    traced = M.PrecisionAtRecall(0.7)
    eager.update_state(D["yb"], D["pb"], sample_weight=D["w"])
    step = ef.function(lambda y, p, w: traced.update_state(y, p, sample_weight=w))
    step(ef.constant(D["yb"]), ef.constant(D["pb"]), ef.constant(D["w"]))
    assert float(traced.result()) == pytest.approx(float(eager.result()), rel=1e-6)


def test_catalogue_metrics_in_compile_fit_evaluate_match_standalone():
    rng = np.random.RandomState(1)
    x = rng.rand(64, 4).astype("float32")
    y = (x.sum(1) > 2).astype("float32")[:, None]
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy",
                  metrics=[M.Hinge(), M.TruePositives(), M.PrecisionAtRecall(0.5), M.BinaryIoU(), M.R2Score(),
                           M.binary_accuracy])
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    for name in ("hinge", "true_positives", "precision_at_recall", "binary_io_u", "r2_score", "binary_accuracy"):
        assert len(history.history[name]) == 2
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    for metric in (M.Hinge(), M.TruePositives(), M.PrecisionAtRecall(0.5), M.BinaryIoU(), M.R2Score()):
        metric.update_state(y, pred)
        assert logs[metric.name] == pytest.approx(float(metric.result()), rel=1e-4, abs=1e-6)
    assert logs["binary_accuracy"] == pytest.approx(np.mean((pred > 0.5) == y), abs=1e-6)


def test_serialize_round_trip_and_get_by_class_name():
    m = M.SensitivityAtSpecificity(0.3, num_thresholds=10, name="s")
    again = M.deserialize(M.serialize(m))
    assert type(again) is M.SensitivityAtSpecificity
    assert (again.specificity, again.num_thresholds, again.name) == (0.3, 10, "s")
    assert isinstance(M.get("Poisson"), M.Poisson)
    with pytest.raises(ValueError, match="must be in the range"):
        M.PrecisionAtRecall(1.5)


def test_core_metrics_take_keras_signatures():
    acc = M.BinaryAccuracy("b", None, 0.3)
    acc.update_state([[1.0], [0.0]], [[0.4], [0.2]])
    assert acc.name == "b" and float(acc.result()) == 1.0
    mean = M.Mean(name="m", dtype="float32")
    mean.update_state([1.0, 2.0], sample_weight=[1.0, 3.0])
    assert float(mean.result()) == pytest.approx(1.75)
    assert M.Accuracy(dtype=None).name == "accuracy"
    assert M.SparseCategoricalAccuracy(dtype="float32").name == "sparse_categorical_accuracy"
    assert M.CategoricalAccuracy(name="c").name == "c"
    with pytest.raises(ValueError, match="float32"):
        M.Mean(dtype="int32")
    # They still serve where the C++ metrics do: a custom step's tracker, compile's metrics.
    x = np.random.RandomState(0).rand(16, 2).astype("float32")
    y = (x[:, :1] > 0.5).astype("float32")
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy", metrics=[M.BinaryAccuracy(threshold=0.4)])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert logs["binary_accuracy"] == pytest.approx(np.mean((model.predict(x, verbose=0) > 0.4) == y))
