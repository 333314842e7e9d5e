"""The functional API from Python (Input, layers and ops on Keras tensors, Model(inputs,
outputs)), several inputs and outputs in fit/evaluate/predict, per-output losses, loss weights
and metrics, sample_weight and class_weight, overridden train_step, Model.build."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras
layers = keras.layers


def rng(seed=0):
    return np.random.default_rng(seed)


def test_keras_tensors_have_shapes_and_no_values():
    x = keras.Input(shape=(4,), name="x")
    assert x.is_keras_tensor
    assert x.shape == (None, 4)
    h = layers.Dense(3)(x)
    assert h.shape == (None, 3) and h.is_keras_tensor
    assert "KerasTensor" in repr(h)
    doubled = h * 2.0 + 1.0  # ops on Keras tensors are graph nodes too
    assert doubled.is_keras_tensor
    with pytest.raises(ef.Error, match="Keras tensor"):
        h.numpy()
    assert keras.Input(shape=(2, 3), batch_size=8, dtype="int32").shape == (8, 2, 3)


def test_two_inputs_two_outputs_match_the_layers():
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    da, db = layers.Dense(4, activation="tanh", name="da"), layers.Dense(4, name="db")
    merged = layers.Add(name="merge")([da(a), db(b)])
    h1, h2 = layers.Dense(1, name="h1"), layers.Dense(2, name="h2")
    model = keras.Model(inputs=[a, b], outputs=[h1(merged), h2(merged)], name="two")
    assert isinstance(model, keras.Model)
    assert model.input_names == ["a", "b"] and model.output_names == ["h1", "h2"]
    assert len(model.weights) == 8
    xa = rng(1).normal(size=(5, 3)).astype(np.float32)
    xb = rng(2).normal(size=(5, 2)).astype(np.float32)
    out = model([xa, xb])
    assert isinstance(out, list) and len(out) == 2
    hidden = np.tanh(xa @ da.kernel.numpy() + da.bias.numpy()) + xb @ db.kernel.numpy() + db.bias.numpy()
    np.testing.assert_allclose(out[0].numpy(), hidden @ h1.kernel.numpy() + h1.bias.numpy(), rtol=1e-5, atol=1e-6)
    pred = model.predict([xa, xb])
    np.testing.assert_allclose(pred[1], out[1].numpy(), rtol=1e-5, atol=1e-6)
    text = []
    model.summary(print_fn=text.append)
    assert "Connected to" in text[0] and "da[0][0], db[0][0]" in text[0] and "a (InputLayer)" in text[0]


def test_graph_errors_name_the_layer():
    a, b = keras.Input((2,), name="ga"), keras.Input((2,), name="gb")
    d = layers.Dense(2, name="gd")
    from_b = d(b)
    with pytest.raises(ef.Error, match="depends on Input 'gb'"):
        keras.Model(a, from_b)
    with pytest.raises(ef.Error, match="Input 'ga' is not used"):
        keras.Model([a, b], from_b)
    with pytest.raises(TypeError, match="Keras tensors"):
        keras.Model(a, np.ones((2, 2), np.float32))
    m = keras.Model(a, layers.Dense(2)(a))
    with pytest.raises(ef.Error, match="input 'ga' expects"):
        m(np.ones((3, 5), np.float32))


def test_dict_outputs_fit_with_per_output_losses_weights_and_metrics():
    ef.random.set_seed(5)
    x_in = keras.Input((4,), name="features")
    h = layers.Dense(8, activation="relu")(x_in)
    model = keras.Model(x_in, {"value": layers.Dense(1)(h), "label": layers.Dense(3)(h)})
    assert sorted(model.output_names) == ["label", "value"]
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss={"value": "mse", "label": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
                  loss_weights={"value": 0.5, "label": 2.0},
                  metrics={"label": ["accuracy"], "value": ["mae"]})
    x = rng(3).normal(size=(64, 4)).astype(np.float32)
    y = {"value": x.sum(axis=1, keepdims=True), "label": np.argmax(x[:, :3], axis=1).astype(np.int32)}
    hist = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    for key in ("loss", "label_loss", "value_loss", "label_accuracy", "value_mae"):
        assert len(hist.history[key]) == 3, key
    assert model.tracing_count() == 1
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    logs = model.evaluate(x, y, batch_size=64, verbose=0, return_dict=True)
    pred = model.predict(x)
    assert set(pred) == {"value", "label"}
    mse = float(np.mean((pred["value"] - y["value"]) ** 2))
    logits = pred["label"].astype(np.float64)
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    ce = float(-np.mean(logp[np.arange(64), y["label"]]))
    assert logs["value_loss"] == pytest.approx(mse, rel=1e-4)
    assert logs["label_loss"] == pytest.approx(ce, rel=1e-4)
    assert logs["loss"] == pytest.approx(0.5 * mse + 2.0 * ce, rel=1e-4)
    assert model.metrics_names[0] == "loss"
    with pytest.raises(ef.Error, match="'valu'"):
        model.fit(x, {"valu": y["value"], "label": y["label"]}, verbose=0)


def test_sample_weight_and_class_weight():
    ef.random.set_seed(2)
    model = keras.Sequential([keras.Input((2,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = rng(4).normal(size=(6, 2)).astype(np.float32)
    y = rng(5).normal(size=(6, 1)).astype(np.float32)
    w = np.array([1, 0, 2, 0, 1, 3], np.float32)
    got = model.evaluate(x, y, sample_weight=w, verbose=0)
    err = (model.predict(x) - y)[:, 0] ** 2
    assert got == pytest.approx(float((err * w).sum() / 6), rel=1e-5)

    def clf():
        ef.random.set_seed(9)
        m = keras.Sequential([keras.Input((2,)), layers.Dense(3)])
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    xc = rng(6).normal(size=(8, 2)).astype(np.float32)
    yc = np.array([0, 1, 2, 0, 1, 2, 0, 0], np.int32)
    a, b = clf(), clf()
    a.fit(xc, yc, batch_size=8, shuffle=False, verbose=0, class_weight={0: 0.5, 2: 3.0})
    b.fit(xc, yc, batch_size=8, shuffle=False, verbose=0,
          sample_weight=np.array([0.5, 1, 3, 0.5, 1, 3, 0.5, 0.5], np.float32))
    for va, vb in zip(a.weights, b.weights):
        np.testing.assert_allclose(va.numpy(), vb.numpy(), rtol=1e-6)
    with pytest.raises(ef.Error, match="class_weight and sample_weight"):
        a.fit(xc, yc, verbose=0, class_weight={0: 1.0}, sample_weight=np.ones(8, np.float32))


class CustomStep(keras.Model):
    """Keras 3's custom train step: its own loss, the compiled metrics, traced once by fit."""

    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1)
        self.traced = 0

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        self.traced += 1
        x, y = data
        with ef.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_overridden_train_step_is_traced_once():
    ef.random.set_seed(1)
    model = CustomStep()
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    x = rng(7).normal(size=(40, 3)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    hist = model.fit(x, y, epochs=8, batch_size=16, verbose=0)
    assert model.traced == 1 and model.tracing_count() == 1
    assert set(hist.history) == {"loss", "mae"}
    assert hist.history["loss"][-1] < 0.5 * hist.history["loss"][0]


class DoubledTest(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def test_step(self, data):
        logs = super().test_step(data)
        logs["doubled"] = logs["loss"] * 2.0
        return logs


def test_super_test_step_and_predict_step_override():
    model = DoubledTest()
    model.compile(optimizer="adam", loss="mse")
    x = rng(8).normal(size=(10, 2)).astype(np.float32)
    y = rng(9).normal(size=(10, 1)).astype(np.float32)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert logs["doubled"] == pytest.approx(2 * logs["loss"], rel=1e-6)


def test_validation_logs_custom_test_step_keys_and_takes_sample_weights():
    model = DoubledTest()
    model.compile(optimizer="sgd", loss="mse")
    x = rng(10).normal(size=(24, 2)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    h = model.fit(x, y, batch_size=8, epochs=2, verbose=0, validation_data=(x, y))
    assert h.history["val_doubled"][-1] == pytest.approx(2 * h.history["val_loss"][-1], rel=1e-6)
    plain = keras.Sequential([keras.Input((2,)), layers.Dense(1)])
    plain.compile(optimizer="sgd", loss="mse")
    sw = rng(11).uniform(0.1, 2.0, size=24).astype(np.float32)
    h = plain.fit(x, y, batch_size=8, epochs=1, verbose=0, validation_data=(x, y, sw))
    weighted = plain.evaluate(x, y, sample_weight=sw, verbose=0, return_dict=True)["loss"]
    assert h.history["val_loss"][-1] == pytest.approx(weighted, rel=1e-6)


def test_build_makes_weights_before_any_call(tmp_path):
    model = keras.Sequential([layers.Dense(5, activation="relu"), layers.Dense(2)])
    assert not model.weights
    model.build((None, 3))
    assert [tuple(w.shape) for w in model.weights] == [(3, 5), (5,), (5, 2), (2,)]
    model.save_weights(str(tmp_path / "w.safetensors"))
    twin = keras.Sequential([layers.Dense(5, activation="relu"), layers.Dense(2)])
    twin.build((None, 3))
    twin.load_weights(str(tmp_path / "w.safetensors"))
    x = rng(10).normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_array_equal(twin.predict(x, verbose=0), model.predict(x, verbose=0))


def test_nested_models_and_sequential_from_input():
    x = keras.Input((3,), name="nx")
    shared = layers.Dense(3, activation="relu", name="nshared")
    inner = keras.Model(x, shared(shared(x)), name="inner")
    z = keras.Input((3,), name="nz")
    outer = keras.Model(z, layers.Dense(1, name="nout")(inner(z)), name="outer")
    assert len(outer.weights) == 4
    data = rng(11).normal(size=(4, 3)).astype(np.float32)
    ref = np.maximum(np.maximum(data @ shared.kernel.numpy() + shared.bias.numpy(), 0) @ shared.kernel.numpy()
                     + shared.bias.numpy(), 0)
    np.testing.assert_allclose(inner.predict(data, verbose=0), ref, rtol=1e-5, atol=1e-6)
    seq = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    text = []
    seq.summary(print_fn=text.append)
    assert "(None, 2)" in text[0]


def test_dropout_in_a_graph_follows_the_training_flag():
    inp = keras.Input((100,))
    model = keras.Model(inp, layers.Dropout(0.5)(inp))
    x = np.ones((4, 100), np.float32)
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)
    dropped = int((model(x, training=True).numpy() == 0).sum())
    assert 100 < dropped < 300


def test_fit_adds_regularization_and_applies_constraints():
    ef.random.set_seed(4)
    dense = layers.Dense(1, use_bias=False, kernel_regularizer=keras.regularizers.L2(0.5))
    model = keras.Sequential([keras.Input((3,)), dense])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x = rng(21).normal(size=(8, 3)).astype(np.float32)
    y = rng(22).normal(size=(8, 1)).astype(np.float32)
    w0 = dense.kernel.numpy().copy()
    mse = float(np.mean((x @ w0 - y) ** 2))
    loss = model.train_on_batch(x, y)
    assert loss == pytest.approx(mse + 0.5 * float((w0 ** 2).sum()), rel=1e-5)
    grad = 2.0 / 8.0 * x.T @ (x @ w0 - y) + w0
    np.testing.assert_allclose(dense.kernel.numpy(), w0 - 0.1 * grad, rtol=1e-5, atol=1e-6)

    constrained = layers.Dense(4, kernel_constraint=keras.constraints.NonNeg())
    m2 = keras.Sequential([keras.Input((3,)), constrained])
    m2.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    m2.fit(x, rng(23).normal(size=(8, 4)).astype(np.float32), epochs=2, verbose=0)
    assert (constrained.kernel.numpy() >= 0).all()


def test_add_loss_in_a_python_layer_joins_the_training_loss():
    class Penalized(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], 1), initializer="ones", name="w")

        def call(self, x):
            self.add_loss(ef.reduce_sum(self.w * self.w) * 0.25)
            return ef.matmul(x, self.w)

    model = keras.Sequential([keras.Input((2,)), Penalized()])
    model.compile(optimizer=keras.optimizers.SGD(0.0001), loss="mse")
    x = np.ones((4, 2), np.float32)
    y = np.zeros((4, 1), np.float32)
    loss = model.evaluate(x, y, verbose=0)
    assert loss == pytest.approx(4.0 + 0.25 * 2.0, rel=1e-6)  # (1+1)^2 + 0.25 * (1 + 1)


def test_host_code_runs_at_construction_and_at_each_trace_only():
    runs = []

    class Counting(layers.Layer):
        def build(self, shape):
            self.w = self.add_weight("w", (shape[-1], 2), initializer="glorot_uniform")

        def call(self, x):
            runs.append(1)  # host code: runs when traced, not on replay
            return ef.matmul(x, self.w)

    inp = keras.Input((3,))
    model = keras.Model(inp, Counting()(inp))
    assert len(runs) == 1  # traced on placeholders to build it and learn its output
    model.compile(optimizer="sgd", loss="mse")
    x = rng(3).normal(size=(16, 3)).astype(np.float32)
    y = rng(4).normal(size=(16, 2)).astype(np.float32)
    model.fit(x, y, batch_size=4, epochs=3, verbose=0)
    assert len(runs) == 2  # the train step, traced once
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert len(runs) == 2
    model.predict(x, batch_size=4, verbose=0)
    model.predict(x, batch_size=4, verbose=0)
    assert len(runs) == 3
