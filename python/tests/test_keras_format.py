"""Keras 3's serialization from Python: to_json writes it, model_from_json reads it (Keras' own
text too), and `.keras` files save and load as Keras writes them (a ZIP of metadata.json,
config.json and model.weights.h5), atomically, with damaged files refused cleanly."""
import json
import os
import zipfile

import numpy as np
import pytest

import eagerflow as tf

keras = tf.keras


def _functional():
    a = keras.Input((4,), name="a")
    b = keras.Input((3,), name="b")
    shared = keras.layers.Dense(5, activation="tanh", name="shared")
    h = shared(a)
    c = keras.layers.Concatenate(name="cat")([h, b])
    out = keras.layers.Dense(2, name="head")(c)
    return keras.Model([a, b], {"out": out, "scaled": out * 3.0 - 1.0}, name="two_in")


def _inputs():
    r = np.random.default_rng(0)
    return [r.normal(size=(6, 4)).astype("float32"), r.normal(size=(6, 3)).astype("float32")]


def test_to_json_is_keras_serialization_and_round_trips():
    m = _functional()
    text = m.to_json()
    cfg = json.loads(text)
    assert cfg["class_name"] == "Functional" and cfg["module"] == "keras.src.models.functional"
    classes = [l["class_name"] for l in cfg["config"]["layers"]]
    assert classes.count("InputLayer") == 2 and "Multiply" in classes and "Subtract" in classes
    outs = cfg["config"]["output_layers"]
    assert set(outs) == {"out", "scaled"} and outs["out"] == ["head", 0, 0]
    again = keras.models.model_from_json(text)
    again.set_weights(m.get_weights())
    x = _inputs()
    p, q = m.predict(x, verbose=0), again.predict(x, verbose=0)
    assert sorted(p) == sorted(q)
    for k in p:
        np.testing.assert_array_equal(p[k], q[k])
    # Keyword arguments format the text as json.dumps does.
    assert json.loads(m.to_json(indent=2)) == cfg


def test_model_from_json_reads_keras_forms():
    # As Keras 3 writes it: initializer objects, 1-D sizes as tuples of one, regularizer objects.
    text = json.dumps({"module": "keras", "class_name": "Sequential", "config": {"name": "s", "layers": [
        {"module": "keras.layers", "class_name": "InputLayer",
         "config": {"batch_shape": [None, 10, 2], "dtype": "float32", "name": "in"}},
        {"module": "keras.layers", "class_name": "Conv1D", "config": {
            "name": "c", "filters": 3, "kernel_size": [3], "strides": [1], "padding": "valid", "dilation_rate": [1],
            "activation": "relu", "use_bias": True,
            "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": None}}}},
        {"module": "keras.layers", "class_name": "GlobalMaxPooling1D", "config": {"name": "g"}},
        {"module": "keras.layers", "class_name": "Normalization", "config": {"name": "n", "axis": -1,
                                                                            "mean": [1.0, 2.0, 3.0],
                                                                            "variance": [1.0, 4.0, 9.0]}}]}})
    m = keras.models.model_from_json(text)
    assert [type(l).__name__ for l in m.layers] == ["Conv1D", "GlobalMaxPooling1D", "Normalization"]
    assert m.layers[0].kernel.shape == (3, 2, 3)
    x = np.random.default_rng(1).normal(size=(2, 10, 2)).astype("float32")
    y = m.predict(x, verbose=0)
    pooled = keras.Sequential(m.layers[:2]).predict(x, verbose=0)
    np.testing.assert_allclose(y, (pooled - [1, 2, 3]) / np.array([1.0, 2.0, 3.0]), rtol=1e-5, atol=1e-6)
    # A regularizer object comes along: the loss is 0.5 * sum(kernel^2).
    dense = keras.models.model_from_json(json.dumps({"module": "keras", "class_name": "Sequential", "config": {
        "name": "d", "layers": [
            {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [None, 3], "name": "i"}},
            {"module": "keras.layers", "class_name": "Dense", "config": {
                "name": "dense", "units": 2,
                "kernel_regularizer": {"module": "keras.regularizers", "class_name": "L2", "config": {"l2": 0.5}}}}]}}))
    dense(np.ones((1, 3), "float32"))
    np.testing.assert_allclose(float(sum(dense.losses)), 0.5 * float(np.sum(np.square(dense.layers[0].kernel.numpy()))),
                               rtol=1e-5)


def test_model_from_json_names_a_class_eagerflow_lacks():
    text = json.dumps({"module": "keras", "class_name": "Sequential", "config": {"name": "s", "layers": [
        {"module": "my.pkg", "class_name": "FancyLayer", "config": {"name": "f"}, "registered_name": "pkg>FancyLayer"}]}})
    with pytest.raises(Exception, match="FancyLayer"):
        keras.models.model_from_json(text)


@pytest.mark.parametrize("ext", [".efmodel", ".keras"])
def test_every_keras_schedule_is_saved_with_the_optimizer(tmp_path, ext):
    S = keras.optimizers.schedules
    schedules = [S.ExponentialDecay(0.1, 10, 0.5), S.CosineDecay(0.0, 20, warmup_target=0.1, warmup_steps=5),
                 S.PiecewiseConstantDecay([3, 6], [0.3, 0.2, 0.1]), S.PolynomialDecay(0.1, 10, 0.01, power=2.0),
                 S.InverseTimeDecay(0.1, 4, 0.5, staircase=True), S.CosineDecayRestarts(0.1, 5, t_mul=1.5, m_mul=0.5)]
    x = np.random.default_rng(2).normal(size=(8, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    for i, sched in enumerate(schedules):
        m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        m.compile(keras.optimizers.SGD(learning_rate=sched), "mse")
        m.fit(x, y, batch_size=4, epochs=2, verbose=0)
        path = str(tmp_path / f"m{i}{ext}")
        m.save(path)
        back = keras.models.load_model(path)
        # The next steps follow the same rates only when the schedule and the step count came back.
        for _ in range(3):
            m.train_on_batch(x, y)
            back.train_on_batch(x, y)
        for a, b in zip(m.get_weights(), back.get_weights()):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-7, err_msg=type(sched).__name__)


def test_weights_of_a_compiled_model_that_never_trained_save_and_load(tmp_path):
    # Keras' unbuilt optimizer saves only its counters; such a file loads into a fresh model.
    def make():
        m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        m.compile(optimizer="adam", loss="mse")
        return m
    m = make()
    path = str(tmp_path / "w.weights.h5")
    m.save_weights(path)
    other = make()
    other.load_weights(path)
    for a, b in zip(m.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)
    other.fit(np.ones((4, 3), "float32"), np.ones((4, 2), "float32"), verbose=0)  # its optimizer builds as usual


def test_a_model_compiled_with_the_users_own_loss_saves_without_its_compile_settings(tmp_path):
    def my_loss(y_true, y_pred):
        return tf.reduce_mean(tf.abs(y_true - y_pred))
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    m.compile(optimizer="sgd", loss=my_loss)
    m.fit(np.ones((4, 3), "float32"), np.zeros((4, 2), "float32"), verbose=0)
    for ext in (".keras", ".h5"):
        path = str(tmp_path / ("m" + ext))
        m.save(path)
        back = keras.models.load_model(path)
        np.testing.assert_array_equal(back.predict(np.ones((1, 3), "float32"), verbose=0),
                                      m.predict(np.ones((1, 3), "float32"), verbose=0))
        back.compile(optimizer="sgd", loss=my_loss)  # compiled again by the program, as with Keras
        back.fit(np.ones((4, 3), "float32"), np.zeros((4, 2), "float32"), verbose=0)


SUBCLASSED = '''
def define(K):
    @K.saving.register_keras_serializable(package="subclassed_test")
    class TwoLayer(K.Model):
        def __init__(self, units=4, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.hidden = K.layers.Dense(units, activation="relu")
            self.head = K.layers.Dense(1)

        def call(self, x):
            return self.head(self.hidden(x))

        def get_config(self):
            return {**super().get_config(), "units": self.units}
    return TwoLayer
'''


def _two_layer():
    ns = {}
    exec(SUBCLASSED, ns)
    return ns["define"](keras)


def test_subclassed_model_with_get_config_saves_as_keras_does(tmp_path):
    TwoLayer = _two_layer()
    x = np.random.default_rng(4).normal(size=(8, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    m = TwoLayer(units=6, name="two")
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    m.fit(x, y, epochs=2, batch_size=4, verbose=0)
    path = str(tmp_path / "sub.keras")
    m.save(path)
    with zipfile.ZipFile(path) as z:
        top = json.loads(z.read("config.json"))
    assert top["class_name"] == "TwoLayer" and top["registered_name"] == "subclassed_test>TwoLayer"
    assert top["config"]["units"] == 6 and top["build_config"]["input_shape"] == [None, 3]
    back = keras.models.load_model(path)
    assert type(back) is TwoLayer and back.units == 6
    np.testing.assert_array_equal(back.predict(x, verbose=0), m.predict(x, verbose=0))
    for _ in range(2):  # the optimizer's state came along
        m.train_on_batch(x, y)
        back.train_on_batch(x, y)
    for a, b in zip(m.get_weights(), back.get_weights()):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_subclassed_model_errors_name_what_is_missing(tmp_path):
    class NoConfig(keras.Model):
        def __init__(self, units):
            super().__init__()
            self.d = keras.layers.Dense(units)

        def call(self, x):
            return self.d(x)
    m = NoConfig(2)
    with pytest.raises(ValueError, match="not been built"):
        m.save(str(tmp_path / "a.keras"))
    m(np.ones((1, 3), "float32"))
    with pytest.raises(NotImplementedError, match="get_config"):
        m.save(str(tmp_path / "a.keras"))
    assert not os.path.exists(tmp_path / "a.keras")
    # A file whose class this program does not know.
    TwoLayer = _two_layer()
    t = TwoLayer(2)
    t(np.ones((1, 3), "float32"))
    t.save(str(tmp_path / "b.keras"))
    with zipfile.ZipFile(tmp_path / "b.keras") as z:
        files = {n: z.read(n) for n in z.namelist()}
    top = json.loads(files["config.json"])
    top["class_name"], top["registered_name"] = "Unknown", "pkg>Unknown"
    files["config.json"] = json.dumps(top).encode()
    with zipfile.ZipFile(tmp_path / "c.keras", "w") as z:
        for n, b in files.items():
            z.writestr(n, b)
    with pytest.raises(TypeError, match="Unknown"):
        keras.models.load_model(str(tmp_path / "c.keras"))
