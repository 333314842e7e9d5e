""".keras files written by Keras 3 for models of many layer kinds: eagerflow loads each one and
predicts what Keras predicted (1e-5), so every layer's config is read with Keras' meaning."""
import json
import os

import numpy as np
import pytest

import eagerflow as tf

# name -> (Keras code building `m`, input shape without batch, input dtype)
CASES = {
    "dense": ("keras.Sequential([I((6,)), L.Dense(4, activation='relu', kernel_regularizer='l2'), L.Dense(2, use_bias=False)])", (6,), "float32"),
    "conv2d": ("keras.Sequential([I((9, 9, 3)), L.Conv2D(4, 3, strides=2, padding='same', activation='elu'), L.Conv2D(2, (2, 3), dilation_rate=2)])", (9, 9, 3), "float32"),
    "conv_misc": ("keras.Sequential([I((10, 10, 3)), L.DepthwiseConv2D(3, depth_multiplier=2), L.SeparableConv2D(4, 3, padding='same'), L.Conv2DTranspose(3, 2, strides=2)])", (10, 10, 3), "float32"),
    "pooling": ("keras.Sequential([I((8, 8, 2)), L.MaxPooling2D(), L.AveragePooling2D(pool_size=2, strides=1, padding='same'), L.GlobalMaxPooling2D()])", (8, 8, 2), "float32"),
    "conv1d": ("keras.Sequential([I((12, 3)), L.Conv1D(4, 3, padding='causal'), L.MaxPooling1D(2), L.AveragePooling1D(2), L.GlobalAveragePooling1D()])", (12, 3), "float32"),
    "batchnorm": ("keras.Sequential([I((5,)), L.BatchNormalization(momentum=0.8, epsilon=0.01, center=False)])", (5,), "float32"),
    "norms": ("keras.Sequential([I((8,)), L.LayerNormalization(epsilon=1e-3), L.Dense(6), L.GroupNormalization(groups=3), L.UnitNormalization()])", (8,), "float32"),
    "activations": ("keras.Sequential([I((6,)), L.Dense(6), L.LeakyReLU(negative_slope=0.3), L.Dense(6), L.PReLU(), L.ELU(alpha=0.5), L.ReLU(max_value=2.0), L.Softmax(), L.Activation('swish')])", (6,), "float32"),
    "reshaping": ("keras.Sequential([I((12,)), L.Reshape((3, 4)), L.Permute((2, 1)), L.Flatten(), L.RepeatVector(2), L.Cropping1D((1, 0)), L.ZeroPadding1D(2), L.UpSampling1D(2)])", (12,), "float32"),
    "padding2d": ("keras.Sequential([I((4, 4, 2)), L.ZeroPadding2D(((1, 0), (0, 2))), L.Cropping2D(((0, 1), (1, 1))), L.UpSampling2D(2)])", (4, 4, 2), "float32"),
    "embedding_lstm": ("keras.Sequential([I((7,), dtype='int32'), L.Embedding(30, 8), L.LSTM(6, return_sequences=True), L.LSTM(4)])", (7,), "int32"),
    "gru_simple": ("keras.Sequential([I((6, 3)), L.GRU(5, return_sequences=True), L.SimpleRNN(4, activation='relu')])", (6, 3), "float32"),
    "bidirectional": ("keras.Sequential([I((6, 3)), L.Bidirectional(L.LSTM(3, return_sequences=True)), L.Bidirectional(L.GRU(2), merge_mode='sum')])", (6, 3), "float32"),
    "timedistributed": ("keras.Sequential([I((5, 4)), L.TimeDistributed(L.Dense(3)), L.GlobalAveragePooling1D()])", (5, 4), "float32"),
    "attention": ("_mha()", (6, 8), "float32"),
    "merge": ("_merge()", (4,), "float32"),
    "preprocessing": ("keras.Sequential([I((4,)), L.Rescaling(0.5, offset=1.0), L.Normalization(mean=[1., 2., 3., 4.], variance=[1., 4., 9., 16.]), L.Dense(2)])", (4,), "float32"),
    "nested": ("_nested()", (5,), "float32"),
}

CLIENT = r'''
import json, os, numpy as np, keras
L, I = keras.layers, keras.Input

def _mha():
    x = I((6, 8)); y = L.MultiHeadAttention(num_heads=2, key_dim=4)(x, x); y = L.Add()([x, y])
    return keras.Model(x, L.LayerNormalization()(y))

def _merge():
    x = I((4,)); a = L.Dense(4)(x); b = L.Dense(4, activation="tanh")(x)
    outs = [L.Add()([a, b]), L.Multiply()([a, b]), L.Subtract()([a, b]), L.Average()([a, b]), L.Maximum()([a, b]),
            L.Minimum()([a, b]), L.Dot(axes=1)([a, b]), L.Concatenate()([a, b])]
    return keras.Model(x, outs)

def _nested():
    inner = keras.Sequential([I((5,)), L.Dense(3, activation="relu")], name="inner")
    x = I((5,)); return keras.Model(x, L.Dense(2)(inner(x)))

cases = json.loads(os.environ["CASES"])
rng = np.random.default_rng(3)
for name, (code, shape, dtype) in cases.items():
    keras.utils.set_random_seed(1)
    m = eval(code)
    for w in m.weights:  # non-default values everywhere, moving statistics included
        w.assign(rng.normal(size=w.shape).astype(w.dtype) * 0.5 + (1.0 if "variance" in w.path else 0.0))
    x = rng.integers(0, 30, size=(3,) + tuple(shape)).astype(dtype) if dtype == "int32" else rng.normal(size=(3,) + tuple(shape)).astype(dtype)
    p = m.predict(x, verbose=0)
    m.save(name + ".keras")
    np.savez(name + ".npz", x=x, *(p if isinstance(p, list) else [p]))
print("ok")
'''


@pytest.fixture(scope="module")
def written(tmp_path_factory, run_client):
    folder = tmp_path_factory.mktemp("keras_layers")
    os.environ["CASES"] = json.dumps(CASES)
    try:
        run_client(CLIENT, folder)
    finally:
        del os.environ["CASES"]
    return folder


@pytest.mark.parametrize("name", sorted(CASES))
def test_keras_file_of_each_layer_kind_predicts_the_same(name, written):
    m = tf.keras.models.load_model(str(written / f"{name}.keras"))
    data = np.load(written / f"{name}.npz")
    outs = m.predict(data["x"], verbose=0)
    outs = outs if isinstance(outs, list) else [outs]
    refs = [data[f"arr_{i}"] for i in range(len(data.files) - 1)]
    assert len(outs) == len(refs)
    for got, ref in zip(outs, refs):
        np.testing.assert_allclose(np.asarray(got), ref, atol=1e-5, rtol=1e-5, err_msg=name)
