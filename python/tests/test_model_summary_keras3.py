"""model.summary() as Keras 3 prints it: its columns (Connected to only for a functional model
that is not a chain, Trainable with show_trainable), its rows in Keras' order, nested models'
layers under them with expand_nested, and totals with their sizes. The expected rows and
totals were recorded from keras 3.15 (TensorFlow backend); the borders differ (Keras draws
with rich)."""
import re

import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras
layers = keras.layers


def _table(model, **kwargs):
    text = []
    model.summary(print_fn=text.append, **kwargs)
    assert len(text) == 1  # Keras hands print_fn the whole table at once
    return text[0]


def _rows(text):
    """Each row's cells: split where the plain table puts two or more spaces."""
    out = []
    for line in text.splitlines():
        if not line.startswith(" ") or line.startswith((" Total", " Trainable", " Non-trainable", " Layer (type)")):
            continue
        out.append([c for c in re.split(r"\s{2,}", line.strip())])
    return out


def _nested_functional():
    inner_in = keras.Input((4,), name="ii")
    inner = keras.Model(inner_in, layers.Dense(3, name="d3")(inner_in), name="innerf")
    x = keras.Input((4,), name="x")
    out = layers.Add(name="add")([inner(x), layers.Dense(3, name="d4")(x)])
    return keras.Model(x, out, name="outer")


def test_functional_rows_columns_and_nested_layers():
    text = _table(_nested_functional(), expand_nested=True)
    header = next(line for line in text.splitlines() if "Layer (type)" in line)
    assert re.split(r"\s{2,}", header.strip()) == ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    assert _rows(text) == [
        ["x (InputLayer)", "(None, 4)", "0", "-"],
        ["innerf (Functional)", "(None, 3)", "15", "x[0][0]"],
        ["└ ii (InputLayer)", "(None, 4)", "0", "-"],
        ["└ d3 (Dense)", "(None, 3)", "15", "-"],
        ["d4 (Dense)", "(None, 3)", "15", "x[0][0]"],
        ["add (Add)", "(None, 3)", "0", "innerf[0][0], d4[0][0]"],
    ]
    assert " Total params: 30 (120.00 B)" in text.splitlines()
    assert " Trainable params: 30 (120.00 B)" in text.splitlines()
    assert " Non-trainable params: 0 (0.00 B)" in text.splitlines()
    assert [r[0] for r in _rows(_table(_nested_functional()))] == [
        "x (InputLayer)", "innerf (Functional)", "d4 (Dense)", "add (Add)"]  # not expanded by default


def test_multi_input_rows_in_keras_order_with_trainable_column():
    inner = keras.Sequential([keras.Input((4,)), layers.Dense(3, name="in_d"), layers.BatchNormalization(name="bn")],
                             name="inner")
    a, b = keras.Input((4,), name="a"), keras.Input((2,), name="b")
    joined = layers.Concatenate(name="cat")([inner(a), b])
    model = keras.Model([a, b], layers.Dense(1, name="head")(joined))
    inner.layers[0].trainable = False
    rows = _rows(_table(model, expand_nested=True, show_trainable=True))
    # keras 3.15: an input comes right before the first layer that needs it
    assert rows == [
        ["a (InputLayer)", "(None, 4)", "0", "-", "-"],
        ["inner (Sequential)", "(None, 3)", "27", "a[0][0]", "Y"],
        ["└ in_d (Dense)", "(None, 3)", "15", "-", "N"],
        ["└ bn (BatchNormalization)", "(None, 3)", "12", "-", "Y"],
        ["b (InputLayer)", "(None, 2)", "0", "-", "-"],
        ["cat (Concatenate)", "(None, 5)", "0", "inner[0][0], b[0][0]", "-"],
        ["head (Dense)", "(None, 1)", "6", "cat[0][0]", "Y"],
    ]
    text = _table(model)
    assert " Total params: 33 (132.00 B)" in text and " Trainable params: 12 (48.00 B)" in text
    assert " Non-trainable params: 21 (84.00 B)" in text


def test_chain_models_have_no_connected_to_column():
    x = keras.Input((4,), name="cx")
    chain = keras.Model(x, layers.Dense(2, name="c2")(layers.Dense(3, name="c1")(x)))
    text = _table(chain, show_trainable=True)
    assert "Connected to" not in text
    assert _rows(text) == [["cx (InputLayer)", "(None, 4)", "0", "-"], ["c1 (Dense)", "(None, 3)", "15", "Y"],
                           ["c2 (Dense)", "(None, 2)", "8", "Y"]]
    seq = keras.Sequential([keras.Input((4,)), _nested_functional(), layers.Dropout(0.1, name="drop")], name="seq")
    assert _rows(_table(seq, expand_nested=True, show_trainable=True)) == [
        ["outer (Functional)", "(None, 3)", "30", "Y"],
        ["└ x (InputLayer)", "(None, 4)", "0", "-"],
        ["└ innerf (Functional)", "(None, 3)", "15", "Y"],
        ["└ ii (InputLayer)", "(None, 4)", "0", "-"],
        ["└ d3 (Dense)", "(None, 3)", "15", "Y"],
        ["└ d4 (Dense)", "(None, 3)", "15", "Y"],
        ["└ add (Add)", "(None, 3)", "0", "-"],
        ["drop (Dropout)", "(None, 3)", "0", "-"],
    ]
    assert "      └ d3 (Dense)" in _table(seq, expand_nested=True)  # three spaces more per level


def test_subclassed_model_and_layer_range():
    class Two(keras.Model):
        def __init__(self):
            super().__init__()
            self.first = layers.Dense(2, name="s1")
            self.second = layers.Dense(1, name="s2")

        def call(self, x):
            return self.second(self.first(x))

    model = Two()
    model(np.ones((1, 3), np.float32))
    # keras 3.15 shows the shapes of the last call
    assert _rows(_table(model, show_trainable=True)) == [["s1 (Dense)", "(1, 2)", "8", "Y"],
                                                         ["s2 (Dense)", "(1, 1)", "3", "Y"]]
    text = _table(_nested_functional(), layer_range=["innerf", "d4"])
    assert [r[0] for r in _rows(text)] == ["innerf (Functional)", "d4 (Dense)"]
    with pytest.raises(ValueError, match="layer_range"):
        _nested_functional().summary(layer_range=["nope", "d4"])


def test_sizes_in_kilobytes():
    model = keras.Sequential([keras.Input((100,)), layers.Dense(100)])
    # 10,100 float32 parameters: 40,400 bytes = 39.45 KB (Keras divides by 1024)
    assert " Total params: 10,100 (39.45 KB)" in _table(model)
