"""Keras 3's loss catalogue (issue 33): every class and function against NumPy (and Keras 3.15's
numbers), each reduction ("sum_over_batch_size", "sum", "none"/None, "mean_with_sample_weight"),
TF's tf.keras.losses.Reduction names, the losses in compile/fit, and eager == traced."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras
L = keras.losses
EPS = 1e-7

Y = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
P = np.array([[0.2, 0.7], [0.6, 0.1]], np.float32)
W = np.array([1.0, 2.0], np.float32)


def _hinge_labels(y):
    return 2 * y - 1 if np.all((y == 0) | (y == 1)) else y


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


# NumPy per-example references (Keras' formulas).
NUMPY = {
    "MeanSquaredError": lambda y, p: ((y - p) ** 2).mean(-1),
    "MeanAbsoluteError": lambda y, p: np.abs(y - p).mean(-1),
    "MeanAbsolutePercentageError": lambda y, p: 100 * np.abs((y - p) / np.maximum(np.abs(y), EPS)).mean(-1),
    "MeanSquaredLogarithmicError": lambda y, p: ((np.log(np.maximum(p, EPS) + 1) -
                                                  np.log(np.maximum(y, EPS) + 1)) ** 2).mean(-1),
    "BinaryCrossentropy": lambda y, p: (-(y * np.log(np.clip(p, EPS, 1 - EPS)) +
                                          (1 - y) * np.log(1 - np.clip(p, EPS, 1 - EPS)))).mean(-1),
    "CategoricalCrossentropy": lambda y, p: -(y * np.log(np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS))).sum(-1),
    "Huber": lambda y, p: np.where(np.abs(p - y) <= 1, 0.5 * (p - y) ** 2, np.abs(p - y) - 0.5).mean(-1),
    "LogCosh": lambda y, p: np.log(np.cosh(p - y)).mean(-1),
    "KLDivergence": lambda y, p: (np.clip(y, EPS, 1) * np.log(np.clip(y, EPS, 1) / np.clip(p, EPS, 1))).sum(-1),
    "CosineSimilarity": lambda y, p: -((y / np.linalg.norm(y, axis=-1, keepdims=True)) *
                                       (p / np.linalg.norm(p, axis=-1, keepdims=True))).sum(-1),
    "Hinge": lambda y, p: np.maximum(1 - _hinge_labels(y) * p, 0).mean(-1),
    "SquaredHinge": lambda y, p: (np.maximum(1 - _hinge_labels(y) * p, 0) ** 2).mean(-1),
    "CategoricalHinge": lambda y, p: np.maximum(((1 - y) * p).max(-1) - (y * p).sum(-1) + 1, 0),
    "Poisson": lambda y, p: (p - y * np.log(p + EPS)).mean(-1),
}


@pytest.mark.parametrize("name", sorted(NUMPY))
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none", None, "mean_with_sample_weight"])
def test_each_loss_and_reduction_as_numpy(name, reduction):
    per = NUMPY[name](Y.astype(np.float64), P.astype(np.float64))
    loss = getattr(L, name)(reduction=reduction)
    got_plain = np.asarray(loss(Y, P))
    got_weighted = np.asarray(loss(Y, P, sample_weight=W))
    if reduction in ("none", None):
        want_plain, want_weighted = per, per * W
    elif reduction == "sum":
        want_plain, want_weighted = per.sum(), (per * W).sum()
    elif reduction == "mean_with_sample_weight":
        want_plain, want_weighted = per.mean(), (per * W).sum() / W.sum()
    else:
        want_plain, want_weighted = per.mean(), (per * W).sum() / len(per)
    np.testing.assert_allclose(got_plain, want_plain, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got_weighted, want_weighted, rtol=2e-5, atol=1e-6)
    assert loss.reduction == reduction


# Keras 3.15.1's values for the same Y, P (unweighted, then with W).
KERAS = {
    "BinaryFocalCrossentropy": (0.030953044, 0.051649466),
    "CategoricalFocalCrossentropy": (0.0019445652, 0.0023378071),
    "Dice": (0.27777779, 0.41666669),
    "Tversky": (0.27777785, 0.41666678),
}


@pytest.mark.parametrize("name", sorted(KERAS))
def test_losses_without_a_numpy_twin_match_keras(name):
    loss = getattr(L, name)()
    np.testing.assert_allclose(float(loss(Y, P)), KERAS[name][0], rtol=1e-5)
    np.testing.assert_allclose(float(loss(Y, P, sample_weight=W)), KERAS[name][1], rtol=1e-5)


def test_loss_arguments_as_keras():
    np.testing.assert_allclose(float(L.SparseCategoricalCrossentropy()(np.array([1, 0]), P)), 0.20273253, rtol=1e-5)
    np.testing.assert_allclose(float(L.BinaryCrossentropy(label_smoothing=0.2)(Y, P)), 0.4199082, rtol=1e-5)
    np.testing.assert_allclose(float(L.CategoricalCrossentropy(label_smoothing=0.2, from_logits=True)(Y, P)),
                               0.524077, rtol=1e-5)
    # ignore_class: the mean is over the examples that are not ignored.
    np.testing.assert_allclose(float(L.SparseCategoricalCrossentropy(ignore_class=0)(np.array([1, 0]), P)),
                               0.2513144, rtol=1e-5)
    np.testing.assert_allclose(
        float(L.BinaryFocalCrossentropy(apply_class_balancing=True, gamma=1.5, from_logits=True)(Y, P)),
        0.12468827, rtol=1e-5)
    assert L.Huber().name == "huber_loss" and L.Huber(delta=0.3, name="h").name == "h"
    assert L.Huber(delta=0.3).get_config()["delta"] == 0.3


def test_functions_and_aliases():
    per = NUMPY["MeanSquaredError"](Y, P)
    for fn in (L.mean_squared_error, L.MSE, L.mse):
        np.testing.assert_allclose(fn(Y, P).numpy(), per, rtol=1e-6)
    assert L.mae is L.mean_absolute_error and L.KLD is L.kl_divergence
    np.testing.assert_allclose(L.dice(Y, P, axis=(1,)).numpy().shape, (2,))
    np.testing.assert_allclose(L.huber(Y, P, delta=0.5).numpy(),
                               np.where(np.abs(P - Y) <= 0.5, 0.5 * (P - Y) ** 2, 0.5 * np.abs(P - Y) - 0.125).mean(-1),
                               rtol=1e-6)
    np.testing.assert_allclose(L.log_cosh(Y, 30 * P).numpy(), (30 * P - Y + _softplus(-2 * (30 * P - Y)) -
                                                              np.log(2)).mean(-1), rtol=1e-5)


def test_reduction_names_of_tf_keras():
    R = L.Reduction
    assert (R.NONE, R.SUM, R.SUM_OVER_BATCH_SIZE, R.AUTO) == ("none", "sum", "sum_over_batch_size", "auto")
    per_example = L.SparseCategoricalCrossentropy(from_logits=True, reduction=R.NONE)(np.array([1, 0]), P)
    assert per_example.shape == (2,)
    # Keras 3 rejects "auto" (TF's distributed guide uses NONE, which works).
    with pytest.raises(ValueError, match="reduction"):
        L.MeanSquaredError(reduction=R.AUTO)
    with pytest.raises(ValueError, match="reduction"):
        L.Hinge(reduction="average")


def test_traced_equals_eager():
    loss = L.CategoricalFocalCrossentropy(gamma=1.0, reduction="sum")
    traced = ef.function(lambda y, p, w: loss(y, p, sample_weight=w))
    np.testing.assert_allclose(float(traced(ef.constant(Y), ef.constant(P), ef.constant(W))),
                               float(loss(Y, P, sample_weight=W)), rtol=1e-6)


def _fit_and_check(loss, want_fn):
    rng = np.random.RandomState(0)
    x = rng.rand(16, 3).astype("float32")
    y = (x.sum(1) > 1.5).astype("float32")[:, None]
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", loss)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    got = model.evaluate(x, y, batch_size=16, verbose=0)
    want = want_fn(y, model.predict(x, verbose=0))
    assert got == pytest.approx(want, rel=1e-4)


@pytest.mark.parametrize("name", ["SquaredHinge", "BinaryFocalCrossentropy", "MeanSquaredLogarithmicError", "Tversky",
                                  "Huber"])
def test_catalogue_losses_train_in_compile(name):
    loss = getattr(L, name)()
    _fit_and_check(loss, lambda y, p: float(loss(y, p)))


def test_sum_reduction_in_compile_gives_the_batch_sum():
    per = NUMPY["MeanSquaredError"]
    _fit_and_check(L.MeanSquaredError(reduction="sum"), lambda y, p: per(y, p).sum())
    _fit_and_check(L.MeanSquaredError(reduction=None), lambda y, p: per(y, p).sum())


def test_get_and_serialize():
    assert isinstance(L.get("Tversky"), L.Tversky)
    again = L.deserialize(L.serialize(L.Tversky(alpha=0.7, beta=0.3, reduction="sum")))
    assert (again.alpha, again.beta, again.reduction) == (0.7, 0.3, "sum")
    assert float(L.get("mse")(Y, P)) == pytest.approx(NUMPY["MeanSquaredError"](Y, P).mean(), rel=1e-6)


def test_circle_ctc_and_generalized_cross_entropy_match_keras():
    rng = np.random.RandomState(0)
    emb = rng.randn(6, 4).astype("float32")
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    labels = np.array([0, 1, 0, 2, 1, 3])
    np.testing.assert_allclose(L.circle(labels, emb).numpy(),
                               [43.657661, 22.768887, 9.8925037e-04, 0.0, 3.2285943, 0.0], rtol=1e-4, atol=1e-6)
    # Keras masks the zeros: the average is over the 4 examples with pairs that contribute.
    assert float(L.Circle()(labels, emb)) == pytest.approx(17.414032, rel=1e-5)
    assert float(L.Circle(reduction="sum")(labels, emb)) == pytest.approx(69.656128, rel=1e-5)
    targets = np.array([[1, 2, 0], [3, 3, 1]])
    logits = rng.randn(2, 5, 4).astype("float32")
    np.testing.assert_allclose(L.ctc(targets, logits).numpy(), [5.38146, 4.326809], rtol=1e-5)
    assert float(L.CTC()(targets, logits)) == pytest.approx(4.8541346, rel=1e-5)
    probs = np.array([[0.2, 0.8], [0.6, 0.4]], np.float32)
    np.testing.assert_allclose(L.categorical_generalized_cross_entropy(np.array([1, 0]), probs, 0.5).numpy(),
                               (1 - np.sqrt([0.8, 0.6])) / 0.5, rtol=1e-6)
    with pytest.raises(ValueError, match="interval"):
        L.CategoricalGeneralizedCrossEntropy(q=1.5)


@pytest.mark.parametrize("loss,make", [
    (L.CTC(), lambda rng: (rng.rand(16, 5, 3).astype("float32"), rng.randint(1, 4, (16, 2)), [4])),
    (L.Circle(), lambda rng: (rng.rand(16, 3).astype("float32"), rng.randint(0, 3, 16), [4, "l2"])),
], ids=["ctc", "circle"])
def test_sequence_and_embedding_losses_train_in_compile(loss, make):
    x, y, spec = make(np.random.RandomState(0))
    layers = [keras.Input(x.shape[1:]), keras.layers.Dense(spec[0])]
    if "l2" in spec:
        layers.append(keras.layers.Lambda(lambda t: ef.math.l2_normalize(t, axis=-1)))
    model = keras.Sequential(layers)
    model.compile("adam", loss)
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]
    assert model.evaluate(x, y, verbose=0) == pytest.approx(float(loss(y, model.predict(x, verbose=0))), rel=1e-5)


@pytest.mark.parametrize("loss", [L.MeanSquaredError(), L.Tversky(), L.Huber(reduction="sum")], ids=lambda l: l.name)
def test_float64_inputs_compute_in_float32_as_keras(loss):
    out = loss(Y.astype(np.float64), P.astype(np.float64))
    assert out.dtype == ef.float32
