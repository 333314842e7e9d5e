"""ef.keras.saving.save_model / ef.keras.models.load_model: round trips of Sequential and
functional models (two inputs, a shared layer, a nested model, ops), predictions equal after
load, continued training step for step, errors naming what cannot be saved, damaged files."""
import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


def _data(n=32):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32) + (x[:, 1] > 0.5)
    return x, y


def _weights(model):
    return [np.array(w) for w in model.get_weights()]


def test_sequential_round_trip_and_continued_training(tmp_path):
    ef.random.set_seed(1)
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(8, activation="relu", name="h"),
                              keras.layers.Dropout(0.2, seed=3), keras.layers.Dense(3, name="out")])
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    x, y = _data()
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    path = str(tmp_path / "m.efmodel")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, keras.Sequential)
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    np.testing.assert_array_equal(np.asarray(loaded.predict(x, verbose=0)), np.asarray(model.predict(x, verbose=0)))
    for a, b in zip(_weights(model), _weights(loaded)):
        np.testing.assert_array_equal(a, b)
    # The same next epochs, weight for weight (same random state before each run).
    ef.random.set_seed(7)
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    ef.random.set_seed(7)
    loaded.fit(x, y, epochs=2, batch_size=8, verbose=0)
    for a, b in zip(_weights(model), _weights(loaded)):
        np.testing.assert_array_equal(a, b)


def test_functional_two_inputs_shared_layer_nested_model_and_ops(tmp_path):
    ef.random.set_seed(2)
    inner_in = keras.Input((4,), name="inner_in")
    inner = keras.Model(inner_in, keras.layers.Dense(4, activation="tanh", name="inner_dense")(inner_in), name="inner")
    a = keras.Input((4,), name="a")
    b = keras.Input((4,), name="b")
    shared = keras.layers.Dense(4, name="shared")
    mixed = shared(a) * 0.5 + shared(b)
    out = keras.layers.Dense(1, name="head")(inner(mixed))
    model = keras.Model([a, b], out, name="two_in")
    model.compile(optimizer="sgd", loss="mse")
    xa = np.random.default_rng(1).normal(size=(8, 4)).astype(np.float32)
    xb = np.random.default_rng(2).normal(size=(8, 4)).astype(np.float32)
    y = np.random.default_rng(3).normal(size=(8, 1)).astype(np.float32)
    model.fit([xa, xb], y, epochs=1, batch_size=4, verbose=0)
    path = tmp_path / "f.keras"
    keras.saving.save_model(model, path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, keras.Model)
    assert len(loaded.weights) == len(model.weights)
    np.testing.assert_array_equal(np.asarray(loaded.predict([xa, xb], verbose=0)),
                                  np.asarray(model.predict([xa, xb], verbose=0)))
    model.fit([xa, xb], y, epochs=1, batch_size=4, verbose=0, shuffle=False)
    loaded.fit([xa, xb], y, epochs=1, batch_size=4, verbose=0, shuffle=False)
    for w1, w2 in zip(_weights(model), _weights(loaded)):
        np.testing.assert_array_equal(w1, w2)


class Multiplier(keras.layers.Layer):
    """Takes an argument but has no get_config: it cannot be saved (as in Keras)."""

    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor


def test_errors_name_what_cannot_be_saved_and_old_file_survives(tmp_path):
    path = str(tmp_path / "m.efmodel")
    good = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="d")])
    good.save(path)
    with_py = keras.Sequential([keras.Input((3,)), Multiplier(2.0, name="twice")])
    with pytest.raises(NotImplementedError, match="Multiplier \\('twice'\\).*factor.*get_config"):
        keras.saving.save_model(with_py, path)
    def lambda_over(k):
        return keras.layers.Lambda(lambda t: t + k, name="plus")
    with_lambda = keras.Sequential([keras.Input((3,)), lambda_over(ef.constant([1.0, 2.0, 3.0]))])
    with pytest.raises(TypeError, match="plus.*Tensor"):  # a lambda's closure holds a tensor
        with_lambda.save(path)
    assert keras.models.load_model(path).layers[0].name == "d"  # the previous file survived


def test_damaged_files_are_errors_naming_the_file(tmp_path):
    path = tmp_path / "m.efmodel"
    keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]).save(str(path))
    data = path.read_bytes()
    bad = tmp_path / "bad.efmodel"
    future = bytearray(data)
    future[8] = 9
    bad.write_bytes(bytes(future))
    with pytest.raises(Exception, match="newer eagerflow"):
        keras.models.load_model(bad)
    rng = np.random.default_rng(5)
    for _ in range(40):
        b = bytearray(data)
        for i in rng.integers(0, len(b), size=3):
            b[i] ^= 1 << int(rng.integers(0, 8))
        cut = int(rng.integers(0, len(b) + 1)) if rng.random() < 0.3 else len(b)
        bad.write_bytes(bytes(b[:cut]))
        with pytest.raises(Exception, match="bad.efmodel"):
            keras.models.load_model(bad)
