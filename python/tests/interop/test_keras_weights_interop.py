"""Keras 3's `.weights.h5` and legacy `.h5` files between Keras 3.15 (in its own virtualenv, a
subprocess) and eagerflow: the same architecture built on both sides, weights written by one and
loaded by the other, predictions compared; optimizer state carried over so that the next
training step matches."""
import json
import pickle
import textwrap

import numpy as np
import pytest

import eagerflow as tf

keras = tf.keras
L = keras.layers

# Each architecture is Python text that builds a model from `keras` (Keras 3, or eagerflow's
# keras) and names an input array `x`: the same text runs on both sides.
ARCHS = {
    "dense_bn": """
        model = keras.Sequential([keras.Input((4,)), L.Dense(8, activation="tanh"), L.BatchNormalization(),
                                  L.Dense(3)])
        x = rng.normal(size=(5, 4)).astype("float32")
    """,
    "conv": """
        model = keras.Sequential([keras.Input((9, 9, 2)), L.Conv2D(4, 3), L.DepthwiseConv2D(3),
                                  L.SeparableConv2D(3, 3), L.Conv2DTranspose(2, 3), L.Conv1D(2, 2) if False else L.Flatten(),
                                  L.Dense(2)])
        x = rng.normal(size=(2, 9, 9, 2)).astype("float32")
    """,
    "rnn": """
        model = keras.Sequential([keras.Input((6,), dtype="int32"), L.Embedding(10, 4),
                                  L.LSTM(3, return_sequences=True), L.GRU(3, return_sequences=True),
                                  L.SimpleRNN(2)])
        x = rng.integers(0, 10, size=(3, 6)).astype("int32")
    """,
    "bidi_td": """
        model = keras.Sequential([keras.Input((5, 3)), L.Bidirectional(L.LSTM(3, return_sequences=True)),
                                  L.TimeDistributed(L.Dense(2)), L.Bidirectional(L.GRU(2))])
        x = rng.normal(size=(2, 5, 3)).astype("float32")
    """,
    "mha": """
        inp = keras.Input((4, 6))
        h = L.MultiHeadAttention(2, 3)(inp, inp)
        h = L.LayerNormalization()(L.Add()([h, inp]))
        model = keras.Model(inp, L.Dense(2)(h))
        x = rng.normal(size=(2, 4, 6)).astype("float32")
    """,
    "nested": """
        inner = keras.Sequential([keras.Input((4,)), L.Dense(3), L.Dense(3)])
        inp = keras.Input((4,))
        h = L.Dense(4)(inp)
        h = inner(h)
        h = L.BatchNormalization()(h)
        model = keras.Model(inp, L.Dense(2)(h))
        x = rng.normal(size=(3, 4)).astype("float32")
    """,
    "norms": """
        model = keras.Sequential([keras.Input((8,)), L.PReLU(), L.GroupNormalization(2), L.LayerNormalization(),
                                  L.Dense(2)])
        x = rng.normal(size=(3, 8)).astype("float32")
    """,
    "conv_more": """
        model = keras.Sequential([keras.Input((10, 3)), L.Conv1D(4, 3), L.DepthwiseConv1D(2), L.SeparableConv1D(3, 2),
                                  L.Conv1DTranspose(2, 3), L.Flatten(), L.Dense(2)])
        x = rng.normal(size=(2, 10, 3)).astype("float32")
    """,
    "conv3d": """
        model = keras.Sequential([keras.Input((5, 5, 5, 2)), L.Conv3D(3, 2), L.Conv3DTranspose(2, 2), L.Flatten(),
                                  L.Dense(2)])
        x = rng.normal(size=(2, 5, 5, 5, 2)).astype("float32")
    """,
    "convlstm": """
        model = keras.Sequential([keras.Input((3, 6, 6, 2)), L.ConvLSTM2D(3, 3), L.Flatten(), L.Dense(2)])
        x = rng.normal(size=(2, 3, 6, 6, 2)).astype("float32")
    """,
    "einsum_gqa": """
        inp = keras.Input((4, 6))
        h = L.EinsumDense("abc,cd->abd", output_shape=(None, 5), bias_axes="d")(inp)
        h = L.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)(h, h)
        model = keras.Model(inp, h)
        x = rng.normal(size=(2, 4, 6)).astype("float32")
    """,
    "attention": """
        q = keras.Input((3, 4))
        v = keras.Input((5, 4))
        a = L.Attention(use_scale=True)([q, v])
        b = L.AdditiveAttention()([q, v])
        model = keras.Model([q, v], L.Concatenate()([a, b]))
        x = [rng.normal(size=(2, 3, 4)).astype("float32"), rng.normal(size=(2, 5, 4)).astype("float32")]
    """,
    "norm_layers": """
        model = keras.Sequential([keras.Input((6,)), L.Normalization(), L.RMSNormalization(), L.UnitNormalization(),
                                  L.Dense(2)])
        x = rng.normal(size=(3, 6)).astype("float32")
    """,
    "branchy": """
        inp = keras.Input((4,))
        side = L.Dense(5, name="side")(inp)
        a = L.Dense(3)(inp)
        b = L.Dense(4)(a)
        c = L.Dense(6)(L.Concatenate()([b, side]))
        d = L.Dense(2)(L.Concatenate()([c, a]))
        model = keras.Model(inp, d)
        x = rng.normal(size=(3, 4)).astype("float32")
    """,
    "wrappers_cells": """
        inp = keras.Input((3, 4))
        h = L.RNN(L.LSTMCell(3), return_sequences=True)(inp)
        h = L.RNN([L.GRUCell(3), L.SimpleRNNCell(2)], return_sequences=True)(h)
        h = L.LSTM(3, use_bias=False)(h)
        h = L.SpectralNormalization(L.Dense(3))(h)
        model = keras.Model(inp, L.Dense(2, use_bias=False)(h))
        x = rng.normal(size=(2, 3, 4)).astype("float32")
    """,
    "convlstm1d": """
        model = keras.Sequential([keras.Input((2, 6, 2)), L.ConvLSTM1D(2, 3), L.Conv2D(2, 1, use_bias=False) if False else L.Flatten(), L.Dense(2)])
        x = rng.normal(size=(2, 2, 6, 2)).astype("float32")
    """,
    "subclassed": """
        class Net(keras.Model):
            def __init__(self):
                super().__init__()
                self.encoder = L.Dense(4, activation="tanh")
                self.blocks = [L.Dense(4), [L.Dense(4)], L.Dense(4)]
                self.head = L.Dense(2)
            def call(self, x):
                return self.head(self.blocks[2](self.blocks[1][0](self.blocks[0](self.encoder(x)))))
        model = Net()
        x = rng.normal(size=(3, 5)).astype("float32")
        model(x)
    """,
    "custom": """
        class Scaled(keras.layers.Layer):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.proj = L.Dense(3)
            def build(self, input_shape):
                self.scale = self.add_weight(shape=(input_shape[-1],), initializer="random_normal", name="scale")
            def call(self, x):
                return self.proj(x * self.scale)
        model = keras.Sequential([keras.Input((4,)), Scaled(), L.Dense(2)])
        x = rng.normal(size=(3, 4)).astype("float32")
    """,
}

PRELUDE = """
import numpy as np
rng = np.random.default_rng(0)
L = keras.layers
"""


def build(name, keras_module):
    scope = {"keras": keras_module}
    exec(textwrap.dedent(PRELUDE) + textwrap.dedent(ARCHS[name]), scope)
    return scope["model"], scope["x"]


def randomize(model, seed):
    """Fresh values everywhere (loading must overwrite every one of them); positive, so that
    variances (Normalization's) stay valid."""
    rng = np.random.default_rng(seed)
    model.set_weights([rng.uniform(0.1, 1.0, size=w.shape).astype(np.asarray(w).dtype) for w in model.get_weights()])


CLIENT_BUILD = """
import os, json, pickle, numpy as np, keras
ARCHS = json.loads(open("archs.json").read())
PRELUDE = open("prelude.py").read()
def build(name):
    scope = {"keras": keras}
    exec(PRELUDE + ARCHS[name], scope)
    return scope["model"], scope["x"]
"""


def write_arch_files(tmp_path):
    (tmp_path / "archs.json").write_text(json.dumps({k: textwrap.dedent(v) for k, v in ARCHS.items()}))
    (tmp_path / "prelude.py").write_text(textwrap.dedent(PRELUDE))


def test_keras_writes_eagerflow_reads_and_back(run_client, tmp_path):
    write_arch_files(tmp_path)
    names = list(ARCHS)
    run_client(CLIENT_BUILD + f"""
for name in {names!r}:
    model, x = build(name)
    rng = np.random.default_rng(1)
    model.set_weights([rng.uniform(0.1, 1.0, size=w.shape).astype(w.dtype) for w in model.get_weights()])
    for layer in model.layers:  # Keras' set_weights leaves Normalization's mean as it was until then
        if type(layer).__name__ == "Normalization":
            layer.finalize_state()
    model.save_weights(name + ".k.weights.h5")
    pickle.dump(x, open(name + ".x.pkl", "wb"))
    np.save(name + ".k.npy", np.asarray(model(x, training=False)))
""", tmp_path)
    for name in names:
        model, _ = build(name, keras)
        x = pickle.load(open(tmp_path / f"{name}.x.pkl", "rb"))
        model(x)  # built
        randomize(model, 2)
        model.load_weights(str(tmp_path / f"{name}.k.weights.h5"))
        got = np.asarray(model(x, training=False))
        want = np.load(tmp_path / f"{name}.k.npy")
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
        # eagerflow writes its own values; Keras must load and predict the same.
        randomize(model, 3)
        model.save_weights(str(tmp_path / f"{name}.e.weights.h5"))
        np.save(tmp_path / f"{name}.e.npy", np.asarray(model(x, training=False)))
    out = run_client(CLIENT_BUILD + f"""
for name in {names!r}:
    model, x = build(name)
    x = pickle.load(open(name + ".x.pkl", "rb"))
    model(x)
    model.load_weights(name + ".e.weights.h5")
    got = np.asarray(model(x, training=False))
    np.testing.assert_allclose(got, np.load(name + ".e.npy"), rtol=1e-5, atol=1e-6, err_msg=name)
    print("ok", name)
""", tmp_path)
    assert out.split() == [w for n in names for w in ("ok", n)]


def test_eagerflow_writes_keras_layout_exactly(run_client, tmp_path):
    """The tree eagerflow writes is the tree Keras writes (group paths, dataset names and shapes)."""
    write_arch_files(tmp_path)
    names = list(ARCHS)
    for name in names:
        model, x = build(name, keras)
        model(x)
        model.save_weights(str(tmp_path / f"{name}.e.weights.h5"))
    out = run_client(CLIENT_BUILD + f"""
import h5py
def tree(path):
    out = []
    with h5py.File(path, "r") as f:
        def visit(n, o):
            if isinstance(o, h5py.Dataset):
                out.append((n, o.shape, str(o.dtype)))
            elif n.split("/")[-1] == "vars":
                out.append((n, None, None))
        f.visititems(visit)
    return sorted(out, key=str)
for name in {names!r}:
    model, x = build(name)
    model(x)
    model.save_weights(name + ".k.weights.h5")
    k, e = tree(name + ".k.weights.h5"), tree(name + ".e.weights.h5")
    # Keras also writes empty groups for layers without variables (Dropout inside MHA, ...).
    kd = [t for t in k if t[1] is not None]
    ed = [t for t in e if t[1] is not None]
    print(name, "same" if kd == ed else "DIFF keras=%s eagerflow=%s" % (kd, ed))
""", tmp_path)
    for line in out.strip().splitlines():
        assert line.endswith("same"), line


OPTIMIZERS = {
    "adam": "keras.optimizers.Adam(1e-2)",
    "adamw": "keras.optimizers.AdamW(1e-2)",
    "rmsprop_momentum": "keras.optimizers.RMSprop(1e-2, momentum=0.5)",
    "sgd_momentum": "keras.optimizers.SGD(1e-2, momentum=0.9)",
    "nadam": "keras.optimizers.Nadam(1e-2)",
    "adamax": "keras.optimizers.Adamax(1e-2)",
    "adagrad": "keras.optimizers.Adagrad(1e-2)",
    "adadelta": "keras.optimizers.Adadelta(1.0)",
    "ftrl": "keras.optimizers.Ftrl(1e-2)",
    "lion": "keras.optimizers.Lion(1e-3)",
    "lamb": "keras.optimizers.Lamb(1e-2)",
    "adafactor": "keras.optimizers.Adafactor(1e-2)",
    "adam_schedule": "keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(1e-2, 10, 0.5))",
    "adam_ema": "keras.optimizers.Adam(1e-2, use_ema=True)",
}


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_optimizer_state_continues_training(run_client, tmp_path, optimizer):
    make_opt = OPTIMIZERS[optimizer]
    write_arch_files(tmp_path)
    run_client(CLIENT_BUILD + f"""
model, x = build("dense_bn")
y = np.random.default_rng(5).normal(size=(5, 3)).astype("float32")
model.compile(optimizer={make_opt}, loss="mse")
model.train_on_batch(x, y)
model.train_on_batch(x, y)
model.save_weights("trained.weights.h5")
model.train_on_batch(x, y)
np.save("x.npy", x); np.save("y.npy", y)
np.savez("after.npz", *model.get_weights())
""", tmp_path)
    model, x = build("dense_bn", keras)
    model.compile(optimizer=eval(make_opt, {"keras": keras}), loss="mse")
    model(x)
    model.load_weights(str(tmp_path / "trained.weights.h5"))
    assert int(np.asarray(model.optimizer.iterations)) == 2
    x, y = np.load(tmp_path / "x.npy"), np.load(tmp_path / "y.npy")
    model.train_on_batch(x, y)
    after = np.load(tmp_path / "after.npz")
    for i, w in enumerate(model.get_weights()):
        np.testing.assert_allclose(np.asarray(w), after[f"arr_{i}"], rtol=1e-5, atol=1e-6, err_msg=f"weight {i}")

    # And back: eagerflow's trained state continues in Keras.
    model.save_weights(str(tmp_path / "ef_trained.weights.h5"))
    model.train_on_batch(x, y)
    np.savez(tmp_path / "ef_after.npz", *[np.asarray(w) for w in model.get_weights()])
    out = run_client(CLIENT_BUILD + f"""
model, x = build("dense_bn")
model.compile(optimizer={make_opt}, loss="mse")
model.optimizer.build(model.trainable_variables)
model.load_weights("ef_trained.weights.h5")
assert int(model.optimizer.iterations.numpy()) == 3, model.optimizer.iterations
model.train_on_batch(np.load("x.npy"), np.load("y.npy"))
want = np.load("ef_after.npz")
for i, w in enumerate(model.get_weights()):
    np.testing.assert_allclose(w, want[f"arr_{{i}}"], rtol=1e-5, atol=1e-6, err_msg=f"weight {{i}}")
print("ok")
""", tmp_path)
    assert out.strip() == "ok"


def test_legacy_h5_files_written_by_keras(run_client, tmp_path):
    write_arch_files(tmp_path)
    names = ["dense_bn", "rnn", "nested", "conv"]
    run_client(CLIENT_BUILD + f"""
import h5py
from keras.src.legacy.saving import legacy_h5_format
for name in {names!r}:
    model, x = build(name)
    rng = np.random.default_rng(1)
    model.set_weights([rng.uniform(0.1, 1.0, size=w.shape).astype(w.dtype) for w in model.get_weights()])
    legacy_h5_format.save_model_to_hdf5(model, name + ".model.h5")
    with h5py.File(name + ".weights_only.h5", "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, model)
    pickle.dump(x, open(name + ".x.pkl", "wb"))
    np.save(name + ".k.npy", np.asarray(model(x, training=False)))
""", tmp_path)
    for name in names:
        for kind in ("model", "weights_only"):
            model, _ = build(name, keras)
            x = pickle.load(open(tmp_path / f"{name}.x.pkl", "rb"))
            model(x)
            randomize(model, 2)
            model.load_weights(str(tmp_path / f"{name}.{kind}.h5"))
            np.testing.assert_allclose(np.asarray(model(x, training=False)), np.load(tmp_path / f"{name}.k.npy"),
                                       rtol=1e-5, atol=1e-6, err_msg=f"{name} {kind}")
    attrs = tf._core._legacy_h5_attributes(str(tmp_path / "dense_bn.model.h5"))
    assert json.loads(attrs["model_config"])["class_name"] == "Sequential"
    assert attrs["backend"] == "tensorflow"


def test_bfloat16_variables(run_client, tmp_path):
    """Keras stores bfloat16 variables as 2-byte opaque data marked dtype="bfloat16"."""
    run_client("""
import numpy as np, keras
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, dtype="bfloat16")])
rng = np.random.default_rng(0)
model.set_weights([rng.normal(size=w.shape) for w in model.get_weights()])
model.save_weights("k.weights.h5")
np.savez("k.npz", *[np.asarray(w, dtype="float32") for w in model.get_weights()])
""", tmp_path)
    model = keras.Sequential([keras.Input((4,)), L.Dense(3, dtype="bfloat16")])
    assert model.weights[0].dtype == tf.bfloat16
    model.load_weights(str(tmp_path / "k.weights.h5"))
    want = np.load(tmp_path / "k.npz")
    for i, w in enumerate(model.weights):
        np.testing.assert_array_equal(np.asarray(tf.cast(w, tf.float32)), want[f"arr_{i}"])
    model.weights[0].assign(tf.cast(tf.constant(np.full((4, 3), 1.5, "float32")), tf.bfloat16))
    model.save_weights(str(tmp_path / "e.weights.h5"))
    out = run_client("""
import numpy as np, keras
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, dtype="bfloat16")])
model.load_weights("e.weights.h5")
print(str(model.weights[0].dtype), float(np.asarray(model.weights[0], dtype="float32").sum()))
""", tmp_path)
    assert out.split() == ["bfloat16", "18.0"]
