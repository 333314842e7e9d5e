"""Issue 29's Keras items: metrics reset each epoch for custom steps, Sequential keeps its Input's
dtype, set_weights assigns all or nothing, threads making the first predict call at once, and
Ctrl-C stopping fit/evaluate/predict at the next batch."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras
from eagerflow.keras import layers


# ---------------------------------------------------------------- metrics reset
class PhaseModel(keras.Model):
    """A custom train/test step whose tracker averages `phase`, which a callback sets to the epoch
    number (from 1): with resets each epoch logs exactly its own number."""

    def __init__(self, override):
        super().__init__()
        self.dense = layers.Dense(1)
        self.tracker = keras.metrics.Mean(name="phase_mean")
        self.phase = ef.Variable(0.0, trainable=False)
        self.override = override

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with ef.GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(self(x, training=True) - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.tracker.update_state(ef.reshape(ef.convert_to_tensor(self.phase), [1]))
        return {"loss": loss, "phase_mean": self.tracker.result()}

    def test_step(self, data):
        self.tracker.update_state(ef.reshape(ef.convert_to_tensor(self.phase), [1]))
        return {"phase_mean": self.tracker.result()}


class OverridingPhaseModel(PhaseModel):
    @property
    def metrics(self):
        return [self.tracker]


class SetPhase(keras.callbacks.Callback):
    def __init__(self, phase):
        super().__init__()
        self.phase_var = phase

    def on_epoch_begin(self, epoch, logs=None):
        self.phase_var.assign(float(epoch + 1))


@pytest.mark.parametrize("cls", [PhaseModel, OverridingPhaseModel])
@pytest.mark.parametrize("run_eagerly", [False, True])
def test_custom_step_metrics_reset_each_epoch_and_evaluation(cls, run_eagerly):
    ef.random.set_seed(1)
    model = cls(override=True)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse", run_eagerly=run_eagerly)
    x = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    y = np.random.default_rng(1).normal(size=(20, 1)).astype(np.float32)
    h = model.fit(x, y, batch_size=4, epochs=3, verbose=0, validation_data=(x, y),
                  callbacks=[SetPhase(model.phase)])
    assert h.history["phase_mean"] == pytest.approx([1.0, 2.0, 3.0])
    assert h.history["val_phase_mean"] == pytest.approx([1.0, 2.0, 3.0])
    model.phase.assign(5.0)
    assert model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)["phase_mean"] == pytest.approx(5.0)
    model.phase.assign(7.0)
    assert model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)["phase_mean"] == pytest.approx(7.0)
    assert model.tracker in model.metrics


def test_metrics_property_lists_compiled_then_attribute_metrics():
    model = PhaseModel(override=False)
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    names = [m.name for m in model.metrics]
    assert names[0] == "loss" and "phase_mean" in names and names.index("phase_mean") > names.index("mae")


def test_metrics_override_of_wrong_objects_is_a_type_error():
    class Bad(PhaseModel):
        @property
        def metrics(self):
            return ["not a metric"]

    model = Bad(override=True)
    model.compile(optimizer="sgd", loss="mse")
    x = np.zeros((4, 3), np.float32)
    with pytest.raises(TypeError, match="Metric"):
        model.fit(x, np.zeros((4, 1), np.float32), verbose=0)


# ---------------------------------------------------------------- Sequential's Input
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_sequential_input_keeps_its_dtype_as_the_functional_api(dtype):
    inp = keras.Input(shape=(12,), dtype=dtype, batch_size=5)
    model = keras.Sequential([inp, layers.Embedding(50, 4)])
    assert model.built
    build = model.get_config()["build_input"]
    assert build["dtype"] == dtype
    assert list(build["shape"])[1:] == [12]
    functional_in = keras.Input(shape=(12,), dtype=dtype)
    assert functional_in.dtype.name == dtype
    ids = np.arange(60).reshape(5, 12) % 50
    out = model.predict(ids.astype(dtype), verbose=0)
    assert out.shape[0] == 5
    clone = keras.models.clone_model(model)
    assert clone.get_config()["build_input"]["dtype"] == dtype


def test_sequential_input_layer_keeps_its_dtype():
    model = keras.Sequential([layers.InputLayer(shape=(6,), dtype="int64"), layers.Embedding(10, 2)])
    assert model.get_config()["build_input"]["dtype"] == "int64"


# ---------------------------------------------------------------- set_weights
def _mlp():
    model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(4, activation="relu"), layers.Dense(2)])
    return model


@pytest.mark.parametrize("bad", [0, 1, 2, 3])
def test_set_weights_with_one_bad_shape_assigns_nothing(bad):
    model = _mlp()
    before = model.get_weights()
    new = [np.ones_like(w) for w in before]
    new[bad] = np.ones(new[bad].shape + (1,), np.float32)
    with pytest.raises(ValueError, match="nothing was assigned"):
        model.set_weights(new)
    for a, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="4 weights"):
        model.set_weights(new[:3])
    model.set_weights([np.full(w.shape, 2.0, np.float64) for w in before])  # float64 arrays convert
    assert all((w == 2.0).all() for w in model.get_weights())


def test_layer_set_weights_checks_first():
    model = _mlp()
    dense = model.layers[1]
    before = dense.get_weights()
    with pytest.raises(ValueError, match="shape"):
        dense.set_weights([np.ones((4, 2), np.float32), np.ones((3,), np.float32)])
    for a, b in zip(dense.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError):
        dense.set_weights([np.ones((4, 2), np.float32), np.array(["a", "b"])])
    dense.set_weights([np.ones((4, 2), np.float32), np.zeros((2,), np.float32)])
    np.testing.assert_array_equal(dense.get_weights()[0], np.ones((4, 2), np.float32))


# ---------------------------------------------------------------- threads
def test_threads_making_the_first_predict_call_at_once():
    x = np.random.default_rng(2).normal(size=(10, 4)).astype(np.float32)
    for _ in range(4):
        model = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(8, activation="relu"), layers.Dense(2)])
        expected = model(x).numpy()
        start = threading.Barrier(8)
        outs, errors = [None] * 8, []

        def work(i):
            try:
                start.wait()
                outs[i] = model.predict(x, batch_size=3, verbose=0)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        for o in outs:
            np.testing.assert_allclose(o, expected, rtol=1e-5, atol=1e-6)
        assert model.predict_tracing_count() == 1


# ---------------------------------------------------------------- Ctrl-C
_INTERRUPT_SCRIPT = textwrap.dedent(r"""
    import os, signal, subprocess, sys
    import numpy as np
    import eagerflow as ef
    from eagerflow import keras
    from eagerflow.keras import layers

    # Ctrl-C as an interactive Python has it: a process started in the background by a shell
    # without job control (a CI script's `cmd &`) inherits SIGINT ignored, and Python then
    # installs no handler, so no KeyboardInterrupt could come.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    model = keras.Sequential([keras.Input(shape=(8,)), layers.Dense(16, activation="relu"), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((64, 8), np.float32)
    y = np.ones((64, 1), np.float32)
    # batch_size 1: 6.4 million steps (minutes): the interrupt lands long before the end on any
    # machine (128,000 steps took under 2 s on a fast one, before the signal came).
    EPOCHS, STEPS = 100000, 64

    def interrupt_soon():
        # SIGINT from another process: a Python thread would need the GIL to send it, and
        # whether it gets one while the C++ loop runs depends on the machine's load.
        subprocess.Popen(["sh", "-c", "sleep 0.3; kill -INT %d" % os.getpid()])

    class Started(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            interrupt_soon()

    try:
        model.fit(x, y, batch_size=1, epochs=EPOCHS, verbose=0, callbacks=[Started()])
        print("fit: not interrupted")
        sys.exit(1)
    except KeyboardInterrupt:
        steps = model.optimizer.iterations
        print("fit interrupted after", steps, "steps")
        if steps >= EPOCHS * STEPS:
            sys.exit(2)

    # evaluate and predict over many batches, interrupted the same way.
    big = np.ones((4000000, 8), np.float32)
    for what in ("evaluate", "predict"):
        interrupt_soon()
        try:
            if what == "evaluate":
                model.evaluate(big, np.ones((4000000, 1), np.float32), batch_size=1, verbose=0)
            else:
                model.predict(big, batch_size=1, verbose=0)
            print(what + ": not interrupted")
            sys.exit(3)
        except KeyboardInterrupt:
            print(what, "interrupted")

    # The model is usable: it trains and predicts again.
    w = [v.copy() for v in model.get_weights()]
    assert all(np.isfinite(a).all() for a in w)
    h = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert len(h.history["loss"]) == 2
    assert model.predict(x, verbose=0).shape == (64, 1)
    print("usable")
""")


def test_ctrl_c_stops_fit_evaluate_predict_at_the_next_batch():
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", _INTERRUPT_SCRIPT], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fit interrupted" in proc.stdout
    assert "evaluate interrupted" in proc.stdout and "predict interrupted" in proc.stdout
    assert "usable" in proc.stdout
