"""Custom Metric and Loss objects written in Python (Keras 3 style), alone and in compile/fit
(traced once inside the train step), weighted_metrics against NumPy formulas, "[tag] WARNING:"
log lines as Python warnings, and ef.Error messages that quote bytes that are not UTF-8."""
import warnings

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

rng = np.random.default_rng(17)


class LabelTotal(keras.metrics.Metric):
    """The sum of every label seen (weighted when weights come): it does not depend on the
    weights being trained, so its value over a fit is known. Counts its Python calls."""

    def __init__(self, name="label_total", **kw):
        super().__init__(name=name, **kw)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.updates = 0
        self.weighted_updates = 0

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.updates += 1
        y = ef.cast(y_true, ef.float32)
        if sample_weight is not None:
            self.weighted_updates += 1
            y = y * ef.reshape(ef.cast(sample_weight, ef.float32), [-1, 1])
        self.total.assign(self.total + ef.reduce_sum(y))

    def result(self):
        return self.total


def data(n=12, features=3):
    return rng.normal(size=(n, features)).astype(np.float32), rng.normal(size=(n, 1)).astype(np.float32)


def dense_model():
    return keras.Sequential([keras.layers.Dense(1)])


# ---------------------------------------------------------------- Metric alone
def test_python_metric_standalone_variables_and_default_reset():
    class MeanOfPredictions(keras.metrics.Metric):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.sum = self.add_weight(shape=(), initializer="zeros", name="sum")
            self.count = self.add_variable((), initializer=2.0, name="count")  # starts at 2: reset must restore it

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.sum.assign_add(ef.reduce_sum(y_pred))
            self.count.assign_add(ef.cast(ef.size(y_pred), ef.float32))

        def result(self):
            return self.sum / self.count

    m = MeanOfPredictions()
    assert m.name == "mean_of_predictions"  # Keras: the class name in snake_case
    assert isinstance(m, keras.metrics.Metric)
    assert [v.path for v in m.variables] == ["mean_of_predictions/sum", "mean_of_predictions/count"]
    assert not any(v.trainable for v in m.variables)
    m.update_state(None, np.array([1.0, 2.0, 3.0], np.float32))
    assert float(m.result()) == pytest.approx(6.0 / 5.0)
    assert float(m(None, np.array([4.0], np.float32))) == pytest.approx(10.0 / 6.0)  # __call__: update, result
    m.reset_state()
    assert float(m.count) == 2.0 and float(m.sum) == 0.0
    assert float(m.result()) == 0.0

    named = MeanOfPredictions(name="mp")
    assert named.name == "mp"
    with pytest.raises(ValueError, match="unknown initializer 'glorot'"):
        named.add_variable((2,), initializer="glorot")
    v = named.add_variable((2, 3), initializer=lambda shape, dtype: np.full(shape, 5.0, np.float32), name="five")
    assert v.shape == (2, 3) and np.all(v.numpy() == 5.0)
    with pytest.raises(TypeError, match="for metrics written in Python"):
        keras.metrics.Accuracy().add_variable(())  # a C++ metric (Mean is written in Python)


def test_python_metric_overrides_reset_state_and_super_works():
    class Resets(LabelTotal):
        resets = 0

        def reset_state(self):
            Resets.resets += 1
            super().reset_state()  # the default: back to the initial values, no recursion

    m = Resets()
    m.update_state(np.ones((3, 1), np.float32), None)
    assert float(m.result()) == 3.0
    m.reset_state()
    assert Resets.resets == 1 and float(m.result()) == 0.0

    class NoUpdate(keras.metrics.Metric):
        pass

    with pytest.raises(TypeError, match="implements update_state"):
        NoUpdate().update_state([1.0], [1.0])


# ---------------------------------------------------------------- Metric in compile/fit
def test_python_metric_in_fit_traced_once_and_reset_every_epoch():
    x, y = data(12)
    metric = LabelTotal()
    model = dense_model()
    model.compile(optimizer="sgd", loss="mse", metrics=[metric, "mae"])
    assert model.metrics_names[:1] == ["loss"]
    history = model.fit(x, y, batch_size=4, epochs=3, verbose=0, shuffle=True)
    assert history.history["label_total"] == pytest.approx([float(y.sum())] * 3, rel=1e-5, abs=1e-5)
    assert metric.updates == 1  # 9 steps in 3 epochs, one trace: Python runs at trace time only
    assert "mae" in history.history
    logs = model.evaluate(x, y, batch_size=6, verbose=0, return_dict=True)
    assert logs["label_total"] == pytest.approx(float(y.sum()), rel=1e-5, abs=1e-5)
    assert metric.updates == 2  # the test step's one trace
    assert metric.weighted_updates == 0  # plain metrics never see sample weights
    assert any(m is metric for m in model.metrics)


def test_python_metric_error_reaches_python():
    class Broken(keras.metrics.Metric):
        def update_state(self, y_true, y_pred, sample_weight=None):
            raise ValueError("broken metric")

    x, y = data(8)
    model = dense_model()
    model.compile(optimizer="sgd", loss="mse", metrics=[Broken()])
    with pytest.raises(ValueError, match="broken metric"):
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)


# ---------------------------------------------------------------- weighted_metrics
def test_weighted_metrics_use_sample_weights_metrics_do_not():
    x, y = data(10, 2)
    w = np.array([1, 0, 2, 0.5, 3, 0, 1, 4, 2, 1], np.float32)
    model = dense_model()
    total = LabelTotal(name="wtotal")
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"], weighted_metrics=["mae", total])
    model.build((None, 2))
    pred = np.asarray(model(x).numpy(), np.float64)
    err = np.abs(pred - y).reshape(-1)
    plain, weighted = err.mean(), (err * w).sum() / w.sum()
    assert abs(plain - weighted) > 1e-3
    for batch_size in (10, 3):
        logs = model.evaluate(x, y, sample_weight=w, batch_size=batch_size, verbose=0, return_dict=True)
        assert logs["mae"] == pytest.approx(plain, rel=1e-5)
        assert logs["weighted_mae"] == pytest.approx(weighted, rel=1e-5)
        assert logs["wtotal"] == pytest.approx(float((y.reshape(-1) * w).sum()), rel=1e-5, abs=1e-5)
    assert total.weighted_updates >= 1
    logs = model.evaluate(x, y, batch_size=10, verbose=0, return_dict=True)
    assert logs["weighted_mae"] == pytest.approx(plain, rel=1e-5)  # no weights: the plain value

    # class_weight is sample weights too; a dict by output name works as metrics does.
    model.compile(optimizer="sgd", loss="mse", weighted_metrics={model.output_names[0]: ["mse"]})
    assert model.metrics_names == ["loss", "mse"]


# ---------------------------------------------------------------- Loss subclasses
def test_python_loss_subclass_alone_and_in_compile():
    class AbsError(keras.losses.Loss):
        def call(self, y_true, y_pred):
            return ef.reduce_mean(ef.abs(y_pred - y_true), axis=-1)

    loss = AbsError()
    assert loss.name == "abs_error" and isinstance(loss, keras.losses.Loss)
    assert AbsError(name="l1").name == "l1"
    yt, yp = np.array([[1.0], [2.0]], np.float32), np.array([[1.5], [4.0]], np.float32)
    assert float(loss(yt, yp)) == pytest.approx(1.25)
    assert float(loss(yt, yp, sample_weight=np.array([2.0, 0.0], np.float32))) == pytest.approx(0.5)

    x, y = data(16, 3)
    ours, ref = dense_model(), dense_model()
    ours.build((None, 3))
    ref.build((None, 3))
    for a, b in zip(ours.weights, ref.weights):
        b.assign(a.numpy())
    ours.compile(optimizer=keras.optimizers.SGD(0.1), loss=AbsError())  # the object is compile's only reference
    ref.compile(optimizer=keras.optimizers.SGD(0.1), loss=keras.losses.MeanAbsoluteError())
    h1 = ours.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    h2 = ref.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    assert h1.history["loss"] == pytest.approx(h2.history["loss"], rel=1e-5)
    for a, b in zip(ours.weights, ref.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)

    class NoCall(keras.losses.Loss):
        pass

    with pytest.raises(TypeError, match="implements call"):
        NoCall()(yt, yp)
    with pytest.raises(ValueError, match="reduction"):
        AbsError(reduction="sum")


# ---------------------------------------------------------------- log warnings, error text
def test_callback_warning_lines_become_python_warnings():
    x, y = data(8)
    model = dense_model()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.warns(UserWarning, match="EarlyStopping: Early stopping conditioned on metric `val_loss`"):
        model.fit(x, y, epochs=1, verbose=0, callbacks=[keras.callbacks.EarlyStopping(monitor="val_loss")])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model.fit(x, y, epochs=1, verbose=0)
    assert not [w for w in record if "WARNING" in str(w.message) or "conditioned" in str(w.message)]


def test_error_text_with_bytes_that_are_not_utf8(tmp_path):
    model = dense_model()
    model.build((None, 3))
    path = tmp_path / "m.efw"
    model.save_weights(str(path))
    raw = path.read_bytes()
    assert b'"dtype":"F32"' in raw
    bad = tmp_path / "bad.efw"
    bad.write_bytes(raw.replace(b'"dtype":"F32"', b'"dtype":"\xff\xfe2"', 1))  # same length: a damaged header
    with pytest.raises(ef.Error) as info:
        model.load_weights(str(bad))
    assert "\\xff\\xfe" in str(info.value)  # the bytes, readable


def test_fbeta_score_matches_keras_docstring():
    import numpy as np
    import eagerflow as ef
    m = ef.keras.metrics.FBetaScore(beta=2.0, threshold=0.5)
    y_true = np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0]], np.float32)
    y_pred = np.array([[0.2, 0.6, 0.7], [0.2, 0.6, 0.6], [0.6, 0.8, 0.0]], np.float32)
    m.update_state(y_true, y_pred)
    np.testing.assert_allclose(np.asarray(m.result()), [0.3846154, 0.90909094, 0.8333334], rtol=1e-5)
    assert m.beta == 2.0
    assert isinstance(ef.keras.metrics.F1Score(), ef.keras.metrics.FBetaScore)
