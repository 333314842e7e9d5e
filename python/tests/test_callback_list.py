"""The trainer as Keras 3 has it, from Python: fit, evaluate and predict call the callbacks'
hooks in Keras 3's order (on_test_* for validation too); History and ProgbarLogger are
callbacks that a program passes as in Keras; CallbackList drives callbacks in a custom loop."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


def data(n=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int64)
    return x, y


def small_model():
    model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    model.build((None, 4))
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []
        self.logs = {}

    def _log(self, name, logs):
        self.calls.append(name)
        self.logs[name] = dict(logs or {})

    def on_train_begin(self, logs=None):
        self._log("train_begin", logs)

    def on_train_end(self, logs=None):
        self._log("train_end", logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._log(f"epoch_begin {epoch}", logs)

    def on_epoch_end(self, epoch, logs=None):
        self._log(f"epoch_end {epoch}", logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._log(f"train_batch_begin {batch}", logs)

    def on_train_batch_end(self, batch, logs=None):
        self._log(f"train_batch_end {batch}", logs)

    def on_test_begin(self, logs=None):
        self._log("test_begin", logs)

    def on_test_end(self, logs=None):
        self._log("test_end", logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._log(f"test_batch_begin {batch}", logs)

    def on_test_batch_end(self, batch, logs=None):
        self._log(f"test_batch_end {batch}", logs)

    def on_predict_begin(self, logs=None):
        self._log("predict_begin", logs)

    def on_predict_end(self, logs=None):
        self._log("predict_end", logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._log(f"predict_batch_begin {batch}", logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._log(f"predict_batch_end {batch}", logs)


def test_fit_with_validation_calls_the_hooks_in_keras3_order():
    x, y = data(8)
    xv, yv = data(4, seed=1)
    model = small_model()
    rec = Recorder()
    model.fit(x, y, batch_size=4, epochs=2, validation_data=(xv, yv), shuffle=False, verbose=0, callbacks=[rec])
    epoch = ["train_batch_begin 0", "train_batch_end 0", "train_batch_begin 1", "train_batch_end 1",
             "test_begin", "test_batch_begin 0", "test_batch_end 0", "test_end"]
    assert rec.calls == (["train_begin", "epoch_begin 0"] + epoch + ["epoch_end 0", "epoch_begin 1"] + epoch +
                         ["epoch_end 1", "train_end"])
    assert set(rec.logs["test_end"]) == {"loss", "accuracy"}
    assert set(rec.logs["epoch_end 1"]) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert rec.logs["epoch_end 1"]["val_loss"] == rec.logs["test_end"]["loss"]


def test_evaluate_and_predict_call_their_hooks():
    x, y = data(10)
    model = small_model()
    rec = Recorder()
    model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[rec])
    assert rec.calls == ["test_begin", "test_batch_begin 0", "test_batch_end 0", "test_batch_begin 1",
                         "test_batch_end 1", "test_end"]
    rec.calls.clear()
    out = model.predict(x, batch_size=6, callbacks=[rec])
    assert out.shape == (10, 2)
    assert rec.calls == ["predict_begin", "predict_batch_begin 0", "predict_batch_end 0", "predict_batch_begin 1",
                         "predict_batch_end 1", "predict_end"]
    assert rec.model is model and rec.params["epochs"] == 1


def test_a_history_passed_in_callbacks_is_the_one_fit_returns():
    x, y = data(12)
    xv, yv = data(4, seed=1)
    model = small_model()
    history = keras.callbacks.History()
    h = model.fit(x, y, batch_size=4, epochs=3, validation_data=(xv, yv), verbose=0, callbacks=[history])
    assert h is history and model.history is history
    assert history.epoch == [0, 1, 2]
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert all(len(v) == 3 for v in history.history.values())
    assert history.model is model and history.params["epochs"] == 3
    # Without one, fit returns a History of its own, filled the same way.
    h2 = model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert isinstance(h2, keras.callbacks.History) and h2 is not history
    assert h2.epoch == [0, 1] and len(h2.history["loss"]) == 2
    assert isinstance(h2, keras.callbacks.Callback)


def test_verbose_zero_prints_nothing(capfd):
    x, y = data(8)
    xv, yv = data(4, seed=1)
    model = small_model()
    model.fit(x, y, batch_size=4, epochs=2, validation_data=(xv, yv), verbose=0)
    model.evaluate(x, y, verbose=0)
    model.predict(x)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[keras.callbacks.ProgbarLogger()])
    assert capfd.readouterr().out == ""


def test_progbar_logger_given_is_the_only_bar(capfd):
    x, y = data(8)
    model = small_model()
    model.fit(x, y, batch_size=4, epochs=1, verbose=1, callbacks=[keras.callbacks.ProgbarLogger()])
    out = capfd.readouterr().out
    assert out.count("Epoch 1/1\n") == 1, out
    assert out.count("2/2 [") == 1, out
    model.evaluate(x, y, batch_size=4, verbose=1)
    out = capfd.readouterr().out
    assert out.startswith("2/2 [==============================] - ") and " - loss: " in out, out
    model.predict(x, batch_size=3, verbose=2)
    assert capfd.readouterr().out.startswith("3/3 - ")


def test_callback_list_drives_callbacks_in_a_custom_loop():
    x, y = data(8)
    model = small_model()
    rec = Recorder()
    stop = keras.callbacks.EarlyStopping(monitor="loss", patience=1)
    cbs = keras.callbacks.CallbackList([rec, stop], add_history=True, model=model, epochs=5, steps=1, verbose=0)
    assert isinstance(cbs._history, keras.callbacks.History) and model.history is cbs._history
    assert len(cbs.callbacks) == 3 and rec.model is model and rec.params["epochs"] == 5
    model.stop_training = False
    cbs.on_train_begin()
    losses = [1.0, 1.0, 1.0]
    for epoch, loss in enumerate(losses):
        cbs.on_epoch_begin(epoch)
        cbs.on_train_batch_begin(0)
        cbs.on_train_batch_end(0, {"loss": loss})
        cbs.on_epoch_end(epoch, {"loss": loss})
        if model.stop_training:
            break
    cbs.on_train_end()
    # The C++ EarlyStopping ran: no improvement after the first epoch, patience 1.
    assert model.stop_training and stop.stopped_epoch == 1
    assert cbs._history.history == {"loss": [1.0, 1.0]}
    assert rec.calls[:3] == ["train_begin", "epoch_begin 0", "train_batch_begin 0"] and rec.calls[-1] == "train_end"


def test_a_callback_list_passed_to_fit_gives_its_callbacks():
    x, y = data(8)
    model = small_model()
    rec = Recorder()
    h = model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=keras.callbacks.CallbackList([rec]))
    assert rec.calls[0] == "train_begin" and rec.calls[-1] == "train_end"
    assert h.epoch == [0, 1]


def test_callback_list_rejects_what_is_not_a_callback():
    with pytest.raises(TypeError, match="Callback"):
        keras.callbacks.CallbackList([object()])
