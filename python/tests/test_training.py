"""Keras training from Python: Sequential and subclassed Model, compile/fit/evaluate/predict,
optimizers, losses and metrics, callbacks written in Python and the C++ ones, saving, the GIL."""
import csv
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def mnist():
    path = os.path.join(ROOT, "..", "shared", "data", "mnist")
    found = ef.data.find_mnist(path)
    assert found, f"MNIST not found in {path}"
    return ef.data.load_mnist_test(found)


@pytest.fixture(scope="module")
def digits():
    return ef.data.synthetic_digits(600, seed=3)


def mlp(hidden=64):
    return keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(hidden, activation="relu"),
                             keras.layers.Dense(10)])


def compiled(hidden=32, **kwargs):
    model = mlp(hidden)
    kwargs.setdefault("optimizer", keras.optimizers.Adam(learning_rate=1e-2))
    kwargs.setdefault("loss", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    kwargs.setdefault("metrics", ["accuracy"])
    model.compile(**kwargs)
    return model


# ---------------------------------------------------------------- MNIST, as tests/train_test.cpp
def test_mnist_fit_reaches_the_cpp_accuracy_with_one_trace(mnist, capfd):
    x, y = mnist
    assert x.shape == (10000, 28, 28) and x.dtype == np.float32 and y.dtype == np.int64 and y[0] == 7
    ef.random.set_seed(1)
    model = mlp(256)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    h = model.fit(x[:8000], y[:8000], batch_size=128, epochs=4, validation_data=(x[8000:], y[8000:]), verbose=2)
    out = capfd.readouterr().out
    assert "Epoch 1/4" in out and "63/63" in out and "val_accuracy" in out, out  # the C++ progress lines
    assert len(h.history["val_accuracy"]) == 4
    assert h.history["val_accuracy"][-1] >= 0.94
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert model.tracing_count() == 1  # 62 full batches + one of 64, Adam's slots made on the first
    logs = model.evaluate(x[8000:], y[8000:], batch_size=500, verbose=0, return_dict=True)
    assert logs["accuracy"] == pytest.approx(h.history["val_accuracy"][-1], abs=1e-6)
    pred = model.predict(x[8000:8005])
    assert isinstance(pred, np.ndarray) and pred.shape == (5, 10) and pred.dtype == np.float32


# ---------------------------------------------------------------- compile, fit, History
def test_history_contents_validation_split_and_initial_epoch(digits):
    x, y = digits
    model = compiled()
    h = model.fit(x, y, batch_size=50, epochs=3, validation_split=0.2, verbose=0)
    assert isinstance(h, keras.History) and model.history is h
    assert set(h.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert all(len(v) == 3 and all(isinstance(e, float) for e in v) for v in h.history.values())
    assert h.epoch == [0, 1, 2]
    assert h.params == {"verbose": 0, "epochs": 3, "steps": 10}  # 480 training examples / 50
    h = model.fit(x, y, epochs=3, initial_epoch=1, shuffle=False, verbose=0)
    assert h.epoch == [1, 2] and set(h.history) == {"loss", "accuracy"}
    assert model.tracing_count() == 1


def test_optimizers_losses_and_metrics_by_name_and_as_objects(digits):
    x, y = digits
    for opt in ["adam", "sgd", "rmsprop", "adamw", keras.optimizers.SGD(learning_rate=0.05, momentum=0.9, nesterov=True),
                keras.optimizers.RMSprop(learning_rate=1e-3), keras.optimizers.AdamW(learning_rate=1e-3, weight_decay=0.01),
                keras.optimizers.Adam(learning_rate=keras.optimizers.schedules.ExponentialDecay(1e-2, 10, 0.9))]:
        model = mlp(16)
        model.compile(optimizer=opt, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        h = model.fit(x, y, epochs=1, verbose=0)
        assert np.isfinite(h.history["loss"][0]), opt
    # Metric objects report under their own names, in compile's order.
    model = mlp(16)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc"), "sparse_categorical_accuracy"])
    h = model.fit(x, y, epochs=1, verbose=0)
    assert set(h.history) == {"loss", "acc", "sparse_categorical_accuracy"}
    assert model.metrics_names == ["loss", "acc", "sparse_categorical_accuracy"]
    assert h.history["acc"] == h.history["sparse_categorical_accuracy"]
    # Regression with "mse" (and a Python loss function), binary and one-hot classification.
    xr = np.random.default_rng(0).normal(size=(256, 4))  # float64: fit takes it as float32, as Keras
    yr = xr @ np.array([[1.0], [-2.0], [0.5], [3.0]])
    for loss in ["mse", keras.losses.MeanSquaredError(), lambda t, p: ef.reduce_mean(ef.square(p - t))]:
        model = keras.Sequential([keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss=loss)
        h = model.fit(xr, yr, batch_size=32, epochs=5, verbose=0)
        assert h.history["loss"][-1] < 0.1 * h.history["loss"][0], loss
    yb = (xr[:, 0] > 0).astype(np.float32)[:, None]
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile("adam", keras.losses.BinaryCrossentropy(from_logits=True), metrics=["accuracy"])
    assert model.fit(xr, yb, epochs=1, verbose=0).history["accuracy"][0] > 0
    onehot = np.eye(10, dtype=np.float32)[y]
    model = mlp(16)
    model.compile("adam", keras.losses.CategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    assert model.fit(x, onehot, epochs=1, verbose=0).history["accuracy"][0] > 0


def test_evaluate_predict_and_batch_methods_return_keras_forms(digits):
    x, y = digits
    model = compiled()
    model.fit(x, y, epochs=2, verbose=0)
    loss, acc = model.evaluate(x, y, verbose=0)
    assert isinstance(loss, float) and 0 <= acc <= 1
    d = model.evaluate(x, y, verbose=0, return_dict=True)
    assert list(d) == ["loss", "accuracy"] and d["loss"] == pytest.approx(loss)
    pred = model.predict(x, batch_size=64)
    assert isinstance(pred, np.ndarray) and pred.shape == (600, 10)
    np.testing.assert_allclose(model.predict_on_batch(x[:7]), pred[:7], rtol=1e-5, atol=1e-5)
    assert len(model.train_on_batch(x[:32], y[:32])) == 2
    assert set(model.test_on_batch(x[:32], y[:32], return_dict=True)) == {"loss", "accuracy"}
    plain = compiled(metrics=None)
    plain.fit(x, y, verbose=0)
    assert isinstance(plain.evaluate(x, y, verbose=0), float)
    assert isinstance(plain.train_on_batch(x[:10], y[:10]), float)
    assert model.optimizer.iterations > 0 and isinstance(model.optimizer, keras.optimizers.Adam)
    model.optimizer.learning_rate = 0.5
    assert model.optimizer.learning_rate == pytest.approx(0.5)


def test_summary_and_input(capsys):
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3, name="hidden"), keras.layers.Dense(2)])
    model.summary()
    out = capsys.readouterr().out
    assert "hidden (Dense)" in out and "(None, 3)" in out and "Total params: 23" in out, out
    assert model.count_params() == 23
    assert [w.shape for w in model.get_weights()] == [(4, 3), (3,), (3, 2), (2,)]


# ---------------------------------------------------------------- Python layers and models
class Scale(keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight("w", [input_shape[-1]], initializer="ones")

    def call(self, inputs):
        return inputs * self.w


class MLP(keras.Model):
    calls = 0

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.flatten = keras.layers.Flatten()
        self.hidden = keras.layers.Dense(32, activation="relu")
        self.scale = Scale()
        self.out = keras.layers.Dense(10)

    def call(self, inputs, training=None):
        MLP.calls += 1  # Python runs when the step traces, never on replay
        return self.out(self.scale(self.hidden(self.flatten(inputs))))


def test_subclassed_model_trains_and_runs_python_once_per_trace(digits, capsys):
    x, y = digits
    ef.random.set_seed(2)
    model = MLP()
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    MLP.calls = 0
    h = model.fit(x, y, batch_size=32, epochs=4, verbose=0)  # 19 batches an epoch
    assert MLP.calls == 1 and model.tracing_count() == 1
    assert h.history["loss"][-1] < 0.5 * h.history["loss"][0]
    assert h.history["accuracy"][-1] > 0.8
    names = [v.path for v in model.trainable_weights]
    assert len(names) == 5 and all(n.startswith(model.name + "/") for n in names), names
    assert any(re.search(r"/scale(_\d+)?/w$", n) for n in names), names
    assert [type(l).__name__ for l in model.layers] == ["Flatten", "Dense", "Scale", "Dense"]
    model.summary()
    assert re.search(r"scale(_\d+)? \(Scale\)", capsys.readouterr().out)
    assert model.predict(x[:3]).shape == (3, 10)
    assert isinstance(model, keras.Model) and isinstance(model, ef._core.Layer)


def test_python_layer_inside_sequential_trains(digits):
    x, y = digits
    model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(16), Scale(), keras.layers.Dense(10)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = model.layers[2] if model.layers else None
    h = model.fit(x, y, epochs=2, verbose=0)
    assert model.layers[2] is before and isinstance(before, Scale)
    assert not np.allclose(before.w.numpy(), 1.0)  # its weight trained
    assert h.history["loss"][-1] < h.history["loss"][0]


# ---------------------------------------------------------------- callbacks
class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.events = []
        self.epoch_logs = []
        self.batches = 0

    def on_train_begin(self, logs=None):
        self.events.append("train_begin")
        self.seen_model = self.model

    def on_epoch_begin(self, epoch, logs=None):
        self.events.append(f"epoch_begin {epoch}")

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        self.batch_keys = sorted(logs)

    def on_epoch_end(self, epoch, logs=None):
        self.events.append(f"epoch_end {epoch}")
        self.epoch_logs.append(dict(logs))

    def on_train_end(self, logs=None):
        self.events.append("train_end")


def test_python_callback_sees_model_params_and_logs(digits):
    x, y = digits
    model = compiled()
    rec = Recorder()
    h = model.fit(x, y, batch_size=100, epochs=2, validation_split=0.5, callbacks=[rec], verbose=0)
    assert rec.events == ["train_begin", "epoch_begin 0", "epoch_end 0", "epoch_begin 1", "epoch_end 1", "train_end"]
    assert rec.seen_model is model and rec.params["epochs"] == 2 and rec.params["steps"] == 3
    assert rec.batches == 6 and rec.batch_keys == ["accuracy", "loss"]
    assert set(rec.epoch_logs[0]) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert rec.epoch_logs[1]["val_loss"] == h.history["val_loss"][1]


def test_python_callback_stops_training_and_exceptions_propagate(digits):
    x, y = digits
    model = compiled()

    class StopAfterTwo(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                self.model.stop_training = True

    class NoSuperInit(keras.callbacks.Callback):
        def __init__(self):  # Keras code often skips super().__init__()
            self.ends = 0

        def on_batch_end(self, batch, logs=None):  # the older name works too
            self.ends += 1

    quiet = NoSuperInit()
    h = model.fit(x, y, epochs=10, callbacks=[StopAfterTwo(), quiet], verbose=0)
    assert h.epoch == [0, 1] and quiet.ends == 2 * 19

    class Boom(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3:
                raise ZeroDivisionError("from a callback")

    with pytest.raises(ZeroDivisionError, match="from a callback"):
        model.fit(x, y, epochs=1, callbacks=[Boom()], verbose=0)
    assert len(model.fit(x, y, epochs=1, verbose=0).epoch) == 1  # still usable


def test_early_stopping_stops_with_keras_options(digits, capfd):
    x, y = digits
    model = compiled()
    # No epoch improves "loss" by 10: with patience 2, fit runs 3 epochs (Keras' rule).
    es = keras.callbacks.EarlyStopping(monitor="loss", min_delta=10.0, patience=2, verbose=1, mode="min",
                                       restore_best_weights=True, start_from_epoch=0, baseline=None)
    h = model.fit(x, y, epochs=20, callbacks=[es], verbose=0)
    assert h.epoch == [0, 1, 2] and es.stopped_epoch == 2 and es.best_epoch == 0
    assert "Epoch 3: early stopping" in capfd.readouterr().out
    es = keras.callbacks.EarlyStopping(monitor="val_loss", patience=50)
    assert len(model.fit(x, y, epochs=3, validation_split=0.2, callbacks=[es], verbose=0).epoch) == 3
    assert es.stopped_epoch == 0
    with pytest.raises(ef.Error):
        keras.callbacks.EarlyStopping(mode="sideways")


def test_learning_rate_scheduler_csv_logger_checkpoint_terminate_on_nan(digits, tmp_path):
    x, y = digits
    model = compiled(optimizer=keras.optimizers.SGD(learning_rate=0.1))
    seen = []

    def schedule(epoch, lr):
        seen.append(lr)
        return 0.1 * 0.5 ** epoch

    csv_path = tmp_path / "log.csv"
    ckpt = keras.callbacks.ModelCheckpoint(str(tmp_path / "w{epoch:02d}.safetensors"), save_weights_only=True)
    model.fit(x, y, epochs=3, verbose=0, callbacks=[keras.callbacks.LearningRateScheduler(schedule),
                                                    keras.callbacks.CSVLogger(str(csv_path)), ckpt])
    assert seen == pytest.approx([0.1, 0.1, 0.05])
    assert model.optimizer.learning_rate == pytest.approx(0.025)
    rows = list(csv.reader(open(csv_path)))
    assert rows[0][0] == "epoch" and "loss" in rows[0] and len(rows) == 4
    assert sorted(os.listdir(tmp_path)) == ["log.csv", "w01.safetensors", "w02.safetensors", "w03.safetensors"]
    assert ckpt.last_saved.endswith("w03.safetensors")
    model.fit(x, y, epochs=1, verbose=0, callbacks=[keras.callbacks.LearningRateScheduler(lambda epoch: 0.01)])
    assert model.optimizer.learning_rate == pytest.approx(0.01)

    bad = x.copy()
    bad[100:] = np.nan  # the fourth batch of 32 has NaN inputs
    nan_model = compiled(metrics=None)
    stop = keras.callbacks.TerminateOnNaN()
    rec = Recorder()
    h = nan_model.fit(bad, y, batch_size=32, epochs=5, shuffle=False, callbacks=[stop, rec], verbose=0)
    assert stop.terminated and rec.batches == 4 and h.epoch == [0]


# ---------------------------------------------------------------- saving
def test_save_and_load_weights_round_trip(digits, tmp_path):
    x, y = digits
    model = compiled()
    model.fit(x, y, epochs=1, verbose=0)
    path = str(tmp_path / "mlp.safetensors")
    model.save_weights(path)
    other = mlp(32)
    other(x[:1])  # built, other weights
    assert not np.allclose(other.predict(x[:20]), model.predict(x[:20]))
    other.load_weights(path)
    np.testing.assert_array_equal(other.predict(x[:20]), model.predict(x[:20]))
    wrong = mlp(16)
    wrong(x[:1])
    with pytest.raises(ef.Error, match="dense"):
        wrong.load_weights(path)


def test_saved_model_and_onnx_export(digits, tmp_path):
    x, y = digits
    model = compiled()
    model.fit(x, y, epochs=1, verbose=0)
    expected = model.predict(x[:8])
    ef.saved_model.save(model, str(tmp_path / "sm"))
    loaded = ef.saved_model.load(str(tmp_path / "sm"))
    assert list(loaded.signatures) == ["serving_default"]
    np.testing.assert_allclose(loaded(x[:8]).numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(loaded.signatures["serving_default"](x[:3]).numpy(), expected[:3], rtol=1e-5, atol=1e-5)
    model.save(str(tmp_path / "sm2"))
    assert os.path.exists(tmp_path / "sm2" / "saved_model.json")
    onnx_path = tmp_path / "mlp.onnx"
    ef.onnx.export_model(model, str(onnx_path))
    assert onnx_path.stat().st_size > 1000
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(onnx_path))
    got = session.run(None, {session.get_inputs()[0].name: x[:8]})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- errors
def test_bad_input_raises_ef_error(digits):
    x, y = digits
    model = compiled()
    with pytest.raises(ef.Error, match="outside the valid range"):
        model.fit(x, y + 10, epochs=1, verbose=0)  # labels out of range
    with pytest.raises(ef.Error, match="different numbers of examples"):
        model.fit(x, y[:-1], verbose=0)
    with pytest.raises(ef.Error, match="batch_size"):
        model.fit(x, y, batch_size=0, verbose=0)
    with pytest.raises(ef.Error, match="validation_split"):
        model.fit(x, y, validation_split=1.5, verbose=0)
    with pytest.raises(ef.Error, match="compile"):
        mlp().fit(x, y, verbose=0)
    with pytest.raises(ef.Error):
        mlp().compile("adam", "no_such_loss")
    with pytest.raises(ef.Error, match="unknown metric"):
        mlp().compile("adam", "mse", metrics=["no_such_metric"])
    with pytest.raises(ValueError, match="unknown optimizer"):
        mlp().compile("adamx", "mse")
    with pytest.raises(ef.Error):
        model.fit(x[:, :20], y, verbose=0)  # a shape the built model cannot take
    with pytest.raises(ValueError, match="both inputs and outputs"):
        keras.Model(inputs=keras.Input((3,)))
    assert len(model.fit(x, y, epochs=1, verbose=0).epoch) == 1  # errors left the model usable


def test_metrics_standalone():
    m = keras.metrics.SparseCategoricalAccuracy()
    m.update_state(np.array([0, 1, 2]), np.array([[1.0, 0, 0], [0, 1.0, 0], [1.0, 0, 0]], np.float32))
    assert float(m.result()) == pytest.approx(2 / 3)
    m.reset_state()
    m.update_state(np.array([1]), np.array([[0.0, 1.0]], np.float32))
    assert float(m.result()) == 1.0
    mean = keras.metrics.Mean()
    mean.update_state(np.array([1.0, 2.0, 6.0], np.float32))
    assert float(mean.result()) == 3.0


def test_custom_training_loop_with_an_optimizer():
    dense = keras.layers.Dense(1, kernel_initializer="zeros", bias_initializer="zeros")
    opt = keras.optimizers.SGD(learning_rate=0.1)
    x = np.ones((4, 2), np.float32)
    for _ in range(3):
        with ef.GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(dense(x) - 1.0))
        grads = tape.gradient(loss, dense.trainable_weights)
        opt.apply_gradients(zip(grads, dense.trainable_weights))
    assert int(opt.iterations.numpy()) == 3 and float(loss) < 1.0


# ---------------------------------------------------------------- the GIL
def test_gil_is_released_while_fit_runs(mnist):
    x, y = mnist
    model = mlp(256)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x[:256], y[:256], verbose=0)  # traced and warmed up
    stamps = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    while not stamps:
        time.sleep(0.001)
    start = time.perf_counter()
    model.fit(x, y, batch_size=64, epochs=3, verbose=0)  # C++ only: no Python runs in the loop
    end = time.perf_counter()
    stop.set()
    t.join()
    inside = [s for s in stamps if start <= s <= end]
    gaps = np.diff([start] + inside + [end])
    # Held, the GIL would stop the other thread for the whole fit; released, it ticks on.
    assert end - start > 0.1, "fit too short to tell"
    assert len(inside) > 20 and gaps.max() < (end - start) / 3, (len(inside), gaps.max(), end - start)


def test_train_mnist_example_runs(repo_root):
    example = os.path.join(repo_root, "examples", "python", "train_mnist.py")
    out = subprocess.run([sys.executable, example], capture_output=True, text=True, timeout=120,
                         cwd=repo_root)
    assert out.returncode == 0, out.stderr
    assert "(Python callback) epoch 1" in out.stdout and "traced 1 time(s)" in out.stdout, out.stdout
