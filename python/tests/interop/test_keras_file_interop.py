"""`.keras` files and legacy `.h5` files between eagerflow and Keras 3 (TensorFlow backend):
written by one, loaded by the other with the same predictions (1e-6), and training continues
from the saved optimizer state step for step."""
import numpy as np
import pytest

import eagerflow as tf

keras = tf.keras

# The models, written once for both sides: `K` is the module that builds them (keras or
# eagerflow.keras). Each returns (model, x) with x the inputs to predict on.
MODELS = r'''
import numpy as np

def mlp(K):
    m = K.Sequential([K.Input((6,)), K.layers.Dense(8, activation="relu", kernel_regularizer=K.regularizers.L2(0.01)),
                      K.layers.LayerNormalization(), K.layers.Dense(3, activation="softmax")], name="mlp")
    m.compile(optimizer=K.optimizers.Adam(learning_rate=0.01), loss="categorical_crossentropy", metrics=["accuracy"])
    return m

def functional(K):
    a = K.Input((5,), name="a")
    b = K.Input((3,), name="b")
    h = K.layers.Dense(4, activation="tanh", name="shared_in")(a)
    c = K.layers.Concatenate(name="cat")([h, b])
    out = K.layers.Dense(2, name="head")(c)
    scaled = out * 2.0 + 1.0
    m = K.Model([a, b], {"out": out, "scaled": scaled}, name="two_in")
    m.compile(optimizer=K.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss={"out": "mse", "scaled": "mae"})
    return m

def cnn(K):
    m = K.Sequential([K.Input((8, 8, 2)), K.layers.Conv2D(4, 3, padding="same", activation="relu"),
                      K.layers.BatchNormalization(), K.layers.MaxPooling2D(), K.layers.Flatten(),
                      K.layers.Dense(2)], name="cnn")
    m.compile(optimizer=K.optimizers.RMSprop(learning_rate=0.01), loss="mse")
    return m

def rnn(K):
    m = K.Sequential([K.Input((7,), dtype="int32"), K.layers.Embedding(20, 4), K.layers.LSTM(5),
                      K.layers.Dense(1)], name="rnn")
    # SGD: Adam's normalized steps turn float noise in near-zero gradients (unused embedding
    # rows) into full-size steps, so two correct frameworks differ there by up to the rate.
    m.compile(optimizer=K.optimizers.SGD(learning_rate=0.05, momentum=0.9, nesterov=True), loss="mse")
    return m

def data(name):
    r = np.random.default_rng(7)
    if name == "mlp":
        return r.normal(size=(16, 6)).astype("float32"), np.eye(3, dtype="float32")[r.integers(0, 3, 16)]
    if name == "functional":
        x = [r.normal(size=(16, 5)).astype("float32"), r.normal(size=(16, 3)).astype("float32")]
        return x, {"out": r.normal(size=(16, 2)).astype("float32"), "scaled": r.normal(size=(16, 2)).astype("float32")}
    if name == "cnn":
        return r.normal(size=(16, 8, 8, 2)).astype("float32"), r.normal(size=(16, 2)).astype("float32")
    return r.integers(0, 20, size=(16, 7)).astype("int32"), r.normal(size=(16, 1)).astype("float32")
'''

NAMES = ["mlp", "functional", "cnn", "rnn"]


def _namespace():
    ns = {}
    exec(MODELS, ns)
    return ns


def _as_list(p):
    if isinstance(p, dict):
        return [np.asarray(p[k]) for k in sorted(p)]
    if isinstance(p, (list, tuple)):
        return [np.asarray(v) for v in p]
    return [np.asarray(p)]


def _weights_close(a, b, atol):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=atol, rtol=0)


@pytest.mark.parametrize("name", NAMES)
def test_keras_writes_eagerflow_loads_and_continues(name, tmp_path, run_client):
    run_client(MODELS + f'''
import keras
m = {name}(keras)
x, y = data("{name}")
m.fit(x, y, batch_size=8, epochs=2, verbose=0)
m.save("m.keras")
p = m.predict(x, verbose=0)
np.savez("before.npz", *( [p[k] for k in sorted(p)] if isinstance(p, dict) else [p]))
m.train_on_batch(x, y)
np.savez("after.npz", *[np.asarray(w) for w in m.get_weights()])
''', tmp_path)
    ns = _namespace()
    x, y = ns["data"](name)
    m = keras.models.load_model(str(tmp_path / "m.keras"))
    before = np.load(tmp_path / "before.npz")
    got = _as_list(m.predict(x, verbose=0))
    assert len(got) == len(before.files)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, before[f"arr_{i}"], atol=1e-6, rtol=0)
    # The optimizer's state came along: one more step lands where Keras' did.
    m.train_on_batch(x, y)
    after = np.load(tmp_path / "after.npz")
    _weights_close(m.get_weights(), [after[f"arr_{i}"] for i in range(len(after.files))], 2e-5)


@pytest.mark.parametrize("name", NAMES)
def test_eagerflow_writes_keras_loads_and_continues(name, tmp_path, run_client):
    ns = _namespace()
    m = ns[name](keras)
    x, y = ns["data"](name)
    m.fit(x, y, batch_size=8, epochs=2, verbose=0)
    m.save(str(tmp_path / "m.keras"))
    p = _as_list(m.predict(x, verbose=0))
    np.savez(tmp_path / "ours.npz", *p)
    m.train_on_batch(x, y)
    np.savez(tmp_path / "ours_after.npz", *[np.asarray(w) for w in m.get_weights()])
    run_client(MODELS + f'''
import keras
m = keras.models.load_model("m.keras")
x, y = data("{name}")
p = m.predict(x, verbose=0)
got = [p[k] for k in sorted(p)] if isinstance(p, dict) else [p]
ours = np.load("ours.npz")
assert len(got) == len(ours.files), (len(got), ours.files)
for i, g in enumerate(got):
    np.testing.assert_allclose(g, ours[f"arr_{{i}}"], atol=1e-6, rtol=0)
m.train_on_batch(x, y)
after = np.load("ours_after.npz")
w = m.get_weights()
assert len(w) == len(after.files)
for i, v in enumerate(w):
    np.testing.assert_allclose(np.asarray(v), after[f"arr_{{i}}"], atol=2e-5, rtol=0)
print("ok")
''', tmp_path)


def test_legacy_h5_from_keras_loads(tmp_path, run_client):
    run_client(MODELS + '''
import keras
for name in ("mlp", "cnn", "functional"):
    m = globals()[name](keras)
    x, y = data(name)
    m.fit(x, y, batch_size=8, epochs=1, verbose=0)
    m.save(name + ".h5")
    p = m.predict(x, verbose=0)
    np.savez(name + ".npz", *( [p[k] for k in sorted(p)] if isinstance(p, dict) else [p]))
''', tmp_path)
    ns = _namespace()
    for name in ("mlp", "cnn", "functional"):
        x, _ = ns["data"](name)
        m = keras.models.load_model(str(tmp_path / (name + ".h5")))
        ref = np.load(tmp_path / (name + ".npz"))
        got = _as_list(m.predict(x, verbose=0))
        assert len(got) == len(ref.files), name
        for i, g in enumerate(got):
            np.testing.assert_allclose(g, ref[f"arr_{i}"], atol=1e-6, rtol=0, err_msg=name)


CUSTOM = r'''
import numpy as np

def define(K):
    @K.saving.register_keras_serializable(package="interop")
    class Scale(K.layers.Layer):
        def __init__(self, factor=1.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, x):
            return x * self.w * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}
    return Scale
'''


def test_registered_custom_layers_cross_both_ways(tmp_path, run_client):
    ns = {}
    exec(CUSTOM, ns)
    Scale = ns["define"](keras)
    x = np.random.default_rng(1).normal(size=(4, 3)).astype("float32")
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3), Scale(2.5)])
    m.layers[-1].w.assign(np.array([1.0, -2.0, 0.5], "float32"))
    m.save(str(tmp_path / "ours.keras"))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "ours.npy", m.predict(x, verbose=0))
    run_client(CUSTOM + '''
import keras
Scale = define(keras)
x = np.load("x.npy")
m = keras.models.load_model("ours.keras")
np.testing.assert_allclose(m.predict(x, verbose=0), np.load("ours.npy"), atol=1e-6, rtol=0)
k = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3), Scale(0.5)])
k.save("theirs.keras")
np.save("theirs.npy", k.predict(x, verbose=0))
''', tmp_path)
    theirs = keras.models.load_model(str(tmp_path / "theirs.keras"))
    np.testing.assert_allclose(theirs.predict(x, verbose=0), np.load(tmp_path / "theirs.npy"), atol=1e-6, rtol=0)
    assert theirs.layers[-1].factor == 0.5


def test_legacy_h5_from_eagerflow_loads_in_keras(tmp_path, run_client):
    ns = _namespace()
    for name in ("mlp", "cnn", "functional", "rnn"):
        m = ns[name](keras)
        x, y = ns["data"](name)
        m.fit(x, y, batch_size=8, epochs=1, verbose=0)
        m.save(str(tmp_path / (name + ".h5")))
        np.savez(tmp_path / (name + ".npz"), *_as_list(m.predict(x, verbose=0)))
        # eagerflow reads its own legacy files back too.
        again = keras.models.load_model(str(tmp_path / (name + ".h5")))
        for a, b in zip(_as_list(again.predict(x, verbose=0)), _as_list(m.predict(x, verbose=0))):
            np.testing.assert_array_equal(a, b)
    run_client(MODELS + '''
import keras
for name in ("mlp", "cnn", "functional", "rnn"):
    m = keras.models.load_model(name + ".h5")
    x, y = data(name)
    p = m.predict(x, verbose=0)
    got = [p[k] for k in sorted(p)] if isinstance(p, dict) else [p]
    ref = np.load(name + ".npz")
    assert len(got) == len(ref.files), name
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, ref[f"arr_{i}"], atol=1e-6, rtol=0, err_msg=name)
    m.fit(x, y, epochs=1, verbose=0)  # compiled from training_config
print("ok")
''', tmp_path)


SUBCLASSED = r'''
def define(K):
    @K.saving.register_keras_serializable(package="interop_sub")
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


def test_subclassed_models_cross_both_ways(tmp_path, run_client):
    ns = {}
    exec(SUBCLASSED, ns)
    TwoLayer = ns["define"](keras)
    x = np.random.default_rng(5).normal(size=(8, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    m = TwoLayer(units=5)
    m.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    m.fit(x, y, epochs=2, batch_size=4, verbose=0)
    m.save(str(tmp_path / "ours.keras"))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "ours.npy", m.predict(x, verbose=0))
    m.train_on_batch(x, y)
    np.savez(tmp_path / "ours_after.npz", *m.get_weights())
    run_client(SUBCLASSED + '''
import numpy as np, keras
TwoLayer = define(keras)
x = np.load("x.npy"); y = x.sum(axis=1, keepdims=True)
m = keras.models.load_model("ours.keras")
assert type(m).__name__ == "TwoLayer" and m.units == 5
np.testing.assert_allclose(m.predict(x, verbose=0), np.load("ours.npy"), atol=1e-6, rtol=0)
m.train_on_batch(x, y)
after = np.load("ours_after.npz")
for i, w in enumerate(m.get_weights()):
    np.testing.assert_allclose(np.asarray(w), after[f"arr_{i}"], atol=2e-5, rtol=0)
k = TwoLayer(units=3)
k.compile(optimizer="sgd", loss="mse")
k.fit(x, y, epochs=1, verbose=0)
k.save("theirs.keras")
np.save("theirs.npy", k.predict(x, verbose=0))
''', tmp_path)
    theirs = keras.models.load_model(str(tmp_path / "theirs.keras"))
    assert theirs.units == 3
    np.testing.assert_allclose(theirs.predict(x, verbose=0), np.load(tmp_path / "theirs.npy"), atol=1e-6, rtol=0)
