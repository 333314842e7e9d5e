"""The arguments of Keras' base Layer on the simple C++ layers: Flatten(input_shape=(28, 28)) as the
first layer of a Sequential (Keras 2's tutorials), trainable=False, dtype=."""
import numpy as np
import pytest

from eagerflow import keras

L = keras.layers


def test_flatten_with_input_shape_builds_the_sequential():
    m = keras.Sequential([L.Flatten(input_shape=(28, 28)), L.Dense(10)])
    assert [tuple(w.shape) for w in m.weights] == [(784, 10), (10,)]
    assert np.asarray(m(np.zeros((2, 28, 28), np.float32))).shape == (2, 10)


def test_trainable_false_freezes_the_layer():
    bn = L.BatchNormalization(trainable=False)
    m = keras.Sequential([L.Dense(4, input_shape=(3,)), bn, L.Dense(1)])
    assert bn.trainable is False and bn.trainable_weights == []
    before = [np.asarray(w) for w in bn.weights]
    m.compile(optimizer="sgd", loss="mse")
    m.fit(np.ones((8, 3), np.float32), np.zeros((8, 1), np.float32), epochs=1, verbose=0)
    gamma_beta = [np.asarray(w) for w in bn.weights][:2]
    for b, a in zip(before[:2], gamma_beta):
        np.testing.assert_array_equal(a, b)
    assert L.Dropout(0.5, trainable=False).trainable is False


@pytest.mark.parametrize("make", [lambda **k: L.Activation("relu", **k), lambda **k: L.Flatten(**k),
                                  lambda **k: L.Dropout(0.1, **k), lambda **k: L.MaxPooling2D(**k),
                                  lambda **k: L.LayerNormalization(**k)])
def test_dtype_policy_and_bad_arguments(make):
    assert make(dtype="float32").dtype_policy.name == "float32"
    with pytest.raises(ValueError, match="dtype"):
        make(dtype="float8")
    with pytest.raises(TypeError):
        make(kernel_initializr="zeros")


EVERY_LAYER = {
    "Lambda": lambda **k: L.Lambda(lambda x: x, **k), "Rescaling": lambda **k: L.Rescaling(0.5, **k),
    "Normalization": lambda **k: L.Normalization(**k), "LeakyReLU": lambda **k: L.LeakyReLU(**k),
    "ELU": lambda **k: L.ELU(**k), "UpSampling2D": lambda **k: L.UpSampling2D(**k),
    "ZeroPadding2D": lambda **k: L.ZeroPadding2D(**k), "Conv2DTranspose": lambda **k: L.Conv2DTranspose(2, 3, **k),
    "MultiHeadAttention": lambda **k: L.MultiHeadAttention(2, 4, **k),
    "PositionalEmbedding": lambda **k: L.PositionalEmbedding(10, 5, 4, **k), "SimpleRNN": lambda **k: L.SimpleRNN(3, **k),
    "LSTM": lambda **k: L.LSTM(3, **k), "GRU": lambda **k: L.GRU(3, **k),
    "Bidirectional": lambda **k: L.Bidirectional(L.LSTM(3), **k), "Conv1D": lambda **k: L.Conv1D(2, 3, **k),
    "MaxPooling1D": lambda **k: L.MaxPooling1D(**k), "AveragePooling1D": lambda **k: L.AveragePooling1D(**k),
    "GlobalAveragePooling1D": lambda **k: L.GlobalAveragePooling1D(**k),
    "GlobalMaxPooling1D": lambda **k: L.GlobalMaxPooling1D(**k), "GlobalMaxPooling2D": lambda **k: L.GlobalMaxPooling2D(**k),
    "Embedding": lambda **k: L.Embedding(10, 4, **k), "Add": lambda **k: L.Add(**k),
    "Concatenate": lambda **k: L.Concatenate(**k), "Dense": lambda **k: L.Dense(2, **k),
    "Conv2D": lambda **k: L.Conv2D(2, 3, **k), "Reshape": lambda **k: L.Reshape((2, -1), **k),
}


@pytest.mark.parametrize("name", sorted(EVERY_LAYER))
def test_every_layer_takes_the_base_layer_arguments(name):
    make = EVERY_LAYER[name]
    assert make(trainable=False).trainable is False
    assert make(dtype="float64").dtype_policy.name == "float64"
    assert make(name="custom_name").name == "custom_name"
    assert make(name=None).name  # Keras' default: a generated name
    make(input_shape=(5, 4))
    with pytest.raises(TypeError):
        make(not_an_argument=1)


def test_recurrent_first_layer_with_input_shape_and_a_policy():
    m = keras.Sequential([L.LSTM(8, input_shape=(5, 4)), L.Dense(1)])
    assert len(m.weights) == 5  # built at once, as in Keras 2
    m.compile(optimizer="adam", loss="mse")
    m.fit(np.ones((4, 5, 4), np.float32), np.zeros((4, 1), np.float32), epochs=1, verbose=0)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        gru = L.GRU(3, dtype="float32")  # Keras' per-layer override of a mixed global policy
        out = gru(np.ones((2, 4, 5), np.float32))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert gru.dtype_policy.name == "float32" and str(out.dtype.name) == "float32"
