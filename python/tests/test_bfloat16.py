"""bfloat16 and Keras' mixed_bfloat16 policy from Python: the dtype, NumPy interop (ml_dtypes),
casts and their gradients, the ops computing in float32 for it, the policy on layers and in fit."""
import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


@pytest.fixture(autouse=True)
def _float32_policy_after():
    yield
    keras.mixed_precision.set_global_policy("float32")


def bits_of(x):
    return np.asarray(x.numpy()).view(np.uint16)


def test_dtype_names_and_casts():
    assert ef.bfloat16.name == "bfloat16"
    assert ef.bfloat16.is_floating
    x = ef.constant([1.0, 0.1, -2.5, 3.4e38, float("inf")])
    b = ef.cast(x, ef.bfloat16)
    assert b.dtype == ef.bfloat16
    f = ef.cast(b, ef.float32).numpy()
    assert f[0] == 1.0 and f[2] == -2.5
    assert f[1] == np.float32(0.10009765625)  # 0.1 rounded to 8 significant bits
    assert np.isinf(f[3]) and np.isinf(f[4])  # 3.4e38: over half a step past bfloat16's largest (3.39e38)
    assert b.astype("float32").dtype == ef.float32
    assert x.astype("bfloat16").dtype == ef.bfloat16
    assert "dtype=bfloat16" in repr(b)


def test_ties_round_to_even_and_nan_stays_nan():
    halfway = np.array([0x3F808000, 0x3F818000, 0x7FC00000, 0x00018000], dtype=np.uint32).view(np.float32)
    bits = bits_of(ef.cast(ef.constant(halfway), ef.bfloat16))
    assert bits[0] == 0x3F80 and bits[1] == 0x3F82 and bits[3] == 0x0002
    assert np.isnan(ef.cast(ef.cast(ef.constant(halfway), ef.bfloat16), ef.float32).numpy()[2])


def test_numpy_interop_with_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.5, -0.25, 7.0], dtype=ml_dtypes.bfloat16)
    t = ef.constant(a)
    assert t.dtype == ef.bfloat16
    back = t.numpy()
    assert back.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(back.astype(np.float32), [1.5, -0.25, 7.0])
    # The same rounding as ml_dtypes (and so JAX and TensorFlow).
    r = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    ours = ef.cast(ef.constant(r), ef.bfloat16).numpy()
    np.testing.assert_array_equal(ours.view(np.uint16), r.astype(ml_dtypes.bfloat16).view(np.uint16))
    assert ef.bfloat16.as_numpy_dtype == np.dtype(ml_dtypes.bfloat16)


def test_ops_compute_in_float32_and_match_within_bf16():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 32)).astype(np.float32)
    w = rng.standard_normal((32, 4)).astype(np.float32)
    ab, wb = ef.cast(ef.constant(a), ef.bfloat16), ef.cast(ef.constant(w), ef.bfloat16)
    y = ef.matmul(ab, wb)
    assert y.dtype == ef.bfloat16
    np.testing.assert_allclose(ef.cast(y, ef.float32).numpy(), a @ w, rtol=3e-2, atol=0.15)
    s = ef.softmax(ab)
    assert s.dtype == ef.bfloat16
    np.testing.assert_allclose(ef.cast(ef.reduce_sum(s, axis=1), ef.float32).numpy(), np.ones(8), atol=2e-2)
    z = ef.relu(ab) * 2.0 + 1.0
    assert z.dtype == ef.bfloat16


def test_traced_equals_eager():
    w = ef.cast(ef.constant(np.random.default_rng(2).standard_normal((6, 3)).astype(np.float32)), ef.bfloat16)

    def body(x):
        return ef.tanh(ef.matmul(x, w))

    f = ef.function(body)
    x = ef.cast(ef.constant(np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)), ef.bfloat16)
    np.testing.assert_array_equal(bits_of(f(x)), bits_of(body(x)))


def test_cast_gradient_is_the_cast_back():
    v = ef.Variable(ef.constant([1.0, 2.0, 3.0]))
    with ef.GradientTape() as tape:
        y = ef.reduce_sum(ef.cast(v, ef.bfloat16) * 3.0)
    g = tape.gradient(y, v)
    assert g.dtype == ef.float32
    np.testing.assert_array_equal(g.numpy(), [3.0, 3.0, 3.0])


def test_every_op_computes_in_float32_and_mixing_is_a_clear_error():
    x = ef.cast(ef.constant([3.0, 1.0, 2.5, -4.0]), ef.bfloat16)
    # No list of names: every op that computes does so in float32 and rounds back.
    s = ef.sort(x)
    assert s.dtype == ef.bfloat16
    np.testing.assert_array_equal(s.numpy().astype(np.float32), [-4.0, 1.0, 2.5, 3.0])
    assert ef.argsort(x).dtype == ef.int64  # integer results keep their dtype
    with pytest.raises(ef.Error, match=r"\[add\] dtypes differ.*bfloat16 and float32 do not mix"):
        ef.add(x, ef.constant([1.0, 1.0, 1.0, 1.0]))


def test_policy_api():
    p = keras.mixed_precision.DTypePolicy("mixed_bfloat16")
    assert p.name == "mixed_bfloat16"
    assert p.compute_dtype == "bfloat16" and p.variable_dtype == "float32"
    assert keras.mixed_precision.global_policy().name == "float32"
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
    with pytest.raises(ef.Error, match="mixed_int8"):
        keras.mixed_precision.set_global_policy("mixed_int8")


def test_layers_under_the_mixed_policy():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    dense = keras.layers.Dense(4, activation="relu")
    assert dense.dtype_policy.name == "mixed_bfloat16"
    assert dense.compute_dtype == "bfloat16" and dense.variable_dtype == "float32"
    y = dense(np.ones((2, 3), np.float32))
    assert y.dtype == ef.bfloat16
    assert all(w.dtype == ef.float32 for w in dense.weights)
    out = keras.layers.Activation("softmax", dtype="float32")
    assert out.dtype_policy.name == "float32"
    assert out(y).dtype == ef.float32
    with pytest.raises(ValueError, match="is built"):
        dense.dtype_policy = "float32"


def test_mixed_fit_keeps_float32_variables_and_learns():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2),
                              keras.layers.Activation("softmax", dtype="float32")])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    h = model.fit(x, y, batch_size=16, epochs=8, verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert h.history["accuracy"][-1] > 0.8
    assert all(w.dtype == ef.float32 for w in model.weights)
    assert model.predict(x[:4], verbose=0).dtype == np.float32


def _fit_checked(model, x, y, loss, metrics, epochs=6):
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss, metrics=metrics)
    h = model.fit(x, y, batch_size=8, epochs=epochs, shuffle=False, verbose=0)
    losses = h.history["loss"]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses
    assert all(w.dtype == ef.float32 for w in model.weights)
    assert np.isfinite(model.evaluate(x, y, batch_size=8, verbose=0)[0])
    return model.predict(x, batch_size=8, verbose=0)


def _tokens(n, steps, seed):
    ids = np.random.default_rng(seed).integers(0, 20, size=(n, steps)).astype(np.int64)
    return ids, (ids[:, 0] * 3 // 20).astype(np.int64)


def test_recurrent_layers_train_under_the_mixed_policy():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    ef.random.set_seed(31)
    L = keras.layers
    x, y = _tokens(32, 6, 1)
    model = keras.Sequential([L.Embedding(20, 8), L.LSTM(8, return_sequences=True), L.GRU(8, return_sequences=True),
                              L.Bidirectional(L.LSTM(4, return_sequences=True)), L.SimpleRNN(8), L.Dense(3)])
    out = _fit_checked(model, x, y, keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    assert str(out.dtype) == "bfloat16"


def test_conv_attention_normalization_and_pooling_train_under_the_mixed_policy():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    ef.random.set_seed(32)
    L = keras.layers
    x, y = _tokens(32, 8, 2)
    inp = keras.Input((8,), dtype="int64")
    h = L.Conv1D(8, 3, padding="same", activation="relu")(L.Embedding(20, 8)(inp))
    h = L.MaxPooling1D(2)(h)
    h = L.LayerNormalization()(L.Add()([h, L.MultiHeadAttention(num_heads=2, key_dim=4)(h, h)]))
    h = L.Dropout(0.1)(L.GlobalAveragePooling1D()(h))
    out = L.Activation("softmax", dtype="float32")(L.Dense(3)(h))
    model = keras.Model(inp, out)
    pred = _fit_checked(model, x, y, "sparse_categorical_crossentropy", ["accuracy"])
    assert pred.dtype == np.float32  # the float32 softmax, as Keras advises for the last layer

    img = np.random.default_rng(3).uniform(size=(32, 8, 8, 1)).astype(np.float32)
    label = (img.mean(axis=(1, 2, 3)) > 0.5).astype(np.float32)[:, None]
    cnn = keras.Sequential([L.Conv2D(4, 3, padding="same", activation="relu"), L.BatchNormalization(),
                            L.MaxPooling2D(), L.Conv2DTranspose(4, 2, strides=2), L.AveragePooling2D(),
                            L.GlobalAveragePooling2D(), L.Dense(1, activation="sigmoid")])
    pred = _fit_checked(cnn, img, label, "binary_crossentropy", ["accuracy", "mse"])
    assert str(pred.dtype) == "bfloat16"


@keras.saving.register_keras_serializable(package="efBf16")
class _Scale(keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight("w", (input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w


def test_configs_hold_the_policy_as_keras_3_writes_it(tmp_path):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    layer = _Scale()
    config = layer.get_config()
    assert config["dtype"] == {"module": "keras", "class_name": "DTypePolicy",
                               "config": {"name": "mixed_bfloat16"}, "registered_name": None}
    keras.mixed_precision.set_global_policy("float32")
    back = _Scale.from_config(config)
    assert back.dtype_policy.name == "mixed_bfloat16"
    assert _Scale.from_config({**config, "dtype": "bfloat16"}).dtype_policy.name == "bfloat16"  # Keras 3.0's form
    p = keras.mixed_precision.DTypePolicy("mixed_bfloat16")
    assert keras.mixed_precision.DTypePolicy.from_config(p.get_config()) == p
    # The C++ layers too: get_config holds the policy and from_config restores it.
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    lstm, dense = keras.layers.LSTM(4, return_sequences=True), keras.layers.Dense(3, activation="relu", name="d3")
    keras.mixed_precision.set_global_policy("float32")
    assert lstm.get_config()["dtype"]["config"]["name"] == "mixed_bfloat16"
    back = keras.layers.Dense.from_config(dense.get_config())
    assert back.dtype_policy.name == "mixed_bfloat16" and back.name == "d3"
    assert keras.layers.LSTM.from_config(lstm.get_config()).dtype_policy.name == "mixed_bfloat16"
    assert back(np.ones((2, 5), np.float32)).dtype == ef.bfloat16
    with pytest.raises(ValueError, match="mixed_float8"):
        keras.layers.Dense(2, dtype={"class_name": "DTypePolicy", "config": {"name": "mixed_float8"}})

    # A model saved under the policy loads mixed under float32; the float32 softmax stays float32.
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    ef.random.set_seed(33)
    model = keras.Sequential([keras.layers.Dense(8, activation="relu"), _Scale(),
                              keras.layers.Dense(3), keras.layers.Activation("softmax", dtype="float32")])
    x = np.random.default_rng(4).standard_normal((4, 5)).astype(np.float32)
    want = np.asarray(model.predict(x, verbose=0))
    path = str(tmp_path / "mixed.efmodel")
    model.save(path)
    keras.mixed_precision.set_global_policy("float32")
    loaded = keras.models.load_model(path)
    assert [layer.dtype_policy.name for layer in loaded.layers] == ["mixed_bfloat16"] * 3 + ["float32"]
    assert all(w.dtype == ef.float32 for w in loaded.weights)
    np.testing.assert_array_equal(np.asarray(loaded.predict(x, verbose=0)), want)


def test_one_hot_in_bfloat16():
    hot = ef.one_hot(np.array([2, 0]), 3, dtype=ef.bfloat16)
    assert hot.dtype == ef.bfloat16
    np.testing.assert_array_equal(np.asarray(hot).astype(np.float32), [[0, 0, 1], [1, 0, 0]])


def test_normalization_returns_the_compute_dtype():
    data = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]], np.float32)
    ref = keras.layers.Normalization()
    ref.adapt(data)
    want = np.asarray(ref(data))
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        norm = keras.layers.Normalization()
        norm.adapt(data)
        got = norm(data)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert got.dtype == ef.bfloat16
    np.testing.assert_allclose(np.asarray(got).astype(np.float32), want, rtol=1e-2, atol=1e-2)
    keras.mixed_precision.set_global_policy("float64")
    try:
        norm = keras.layers.Normalization()
        norm.adapt(data.astype(np.float64))  # statistics in float64 variables
        got = norm(data.astype(np.float64))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert got.dtype == ef.float64
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
