"""Issue 18's recurrent and 1-D layers from Python: ef.keras.layers.LSTM / GRU / SimpleRNN /
Bidirectional with Keras 3's arguments and call (initial_state, mask, return_state as a list),
Embedding(mask_zero=True), Conv1D and the 1-D / global pooling layers; numbers against Keras
(reference values below) and NumPy loops, the fused path against the unrolled one, traces, fit
and saving."""
import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

L = keras.layers


def det(shape, a):
    n = int(np.prod(shape))
    return (0.4 * np.sin(a * np.arange(n) + 0.3)).reshape(shape).astype(np.float32)


X = (np.sin(np.arange(2 * 5 * 3) * 0.3) * 0.9).reshape(2, 5, 3).astype(np.float32)

# Keras 3.15.1 (TensorFlow backend, CPU) in the peer virtualenv (~/.cache/eagerflow/peers/bin/python):
#   l = keras.layers.LSTM(4, return_sequences=True, return_state=True); l.build((2, 5, 3))
#   l.set_weights([det((3, 16), 0.5), det((4, 16), 0.7), det((16,), 0.9)])
#   l(X, initial_state=[det((2, 4), 1.1), det((2, 4), 1.3)])
#   g = keras.layers.GRU(4, go_backwards=True); g.build((2, 5, 3))
#   g.set_weights([det((3, 12), 0.5), det((4, 12), 0.7), det((2, 12), 0.9)]); g(X)
# with det and X as defined here, printed rounded to 7 digits.
KERAS_LSTM_SEQ = [[[0.0875733, 0.1599717, 0.0660177, -0.1171092], [0.1048092, 0.1676171, 0.1060272, -0.0470586],
                   [0.0757245, 0.1326735, 0.078214, -0.0437835], [0.0523791, 0.0782101, -0.0060513, -0.1211841],
                   [0.0589181, 0.0599318, -0.0617198, -0.2028605]],
                  [[0.0482429, 0.090801, 0.040421, -0.1999092], [0.1066545, 0.1283758, 0.039177, -0.1668702],
                   [0.135879, 0.163058, 0.0883557, -0.0981581], [0.1269425, 0.1736402, 0.1186339, -0.0367145],
                   [0.0843829, 0.1341438, 0.0828247, -0.0389438]]]
KERAS_LSTM_C = [[0.1533927, 0.1332447, -0.1117862, -0.3377936], [0.1764335, 0.2578151, 0.1404943, -0.0637152]]
KERAS_GRU_BACK = [[-0.0735503, -0.0245232, -0.108904, -0.2825425], [0.6011308, 0.6648284, 0.5784263, 0.3357414]]


def set_weights(layer, shapes):
    for w, s, a in zip(layer.weights, shapes, (0.5, 0.7, 0.9)):
        assert tuple(w.shape) == s
        w.assign(det(s, a))


@pytest.mark.parametrize("fused", [True, False])
def test_lstm_and_gru_match_keras(fused):
    lstm = L.LSTM(4, return_sequences=True, return_state=True)
    lstm.allow_fused = fused
    h0, c0 = det((2, 4), 1.1), det((2, 4), 1.3)
    lstm(X, initial_state=[h0, c0])  # builds
    set_weights(lstm, [(3, 16), (4, 16), (16,)])
    seq, h, c = lstm(X, initial_state=[h0, c0])
    np.testing.assert_allclose(np.asarray(seq), KERAS_LSTM_SEQ, atol=2e-6)
    np.testing.assert_allclose(np.asarray(h), np.asarray(KERAS_LSTM_SEQ)[:, -1], atol=2e-6)
    np.testing.assert_allclose(np.asarray(c), KERAS_LSTM_C, atol=2e-6)
    gru = L.GRU(4, go_backwards=True)
    gru.allow_fused = fused
    gru(X)
    set_weights(gru, [(3, 12), (4, 12), (2, 12)])
    np.testing.assert_allclose(np.asarray(gru(X)), KERAS_GRU_BACK, atol=2e-6)


def simple_rnn_numpy(x, k, r, b, act):
    h = np.zeros((x.shape[0], k.shape[1]), np.float64)
    out = []
    for t in range(x.shape[1]):
        h = act(x[:, t] @ k + h @ r + b)
        out.append(h)
    return np.stack(out, 1)


def test_simple_rnn_matches_a_numpy_loop_and_gradients_flow():
    rnn = L.SimpleRNN(3, activation="relu", return_sequences=True)
    y = rnn(X)
    k, r, b = (np.asarray(w) for w in rnn.weights)
    np.testing.assert_allclose(np.asarray(y), simple_rnn_numpy(X.astype(np.float64), k, r, b, lambda v: np.maximum(v, 0)),
                               rtol=1e-5, atol=1e-6)
    x = ef.constant(X)
    with ef.GradientTape() as tape:
        tape.watch(x)
        loss = ef.reduce_sum(rnn(x))
    g = tape.gradient(loss, [x] + list(rnn.trainable_weights))
    assert all(t is not None for t in g) and g[0].shape == (2, 5, 3)


def test_masks_from_embedding_and_the_mask_argument():
    ef.random.set_seed(0)
    emb = L.Embedding(6, 3, mask_zero=True)
    assert emb.mask_zero
    lstm = L.LSTM(4)
    ids = np.array([[2, 5, 0, 0], [1, 2, 3, 4]], np.int64)
    last = np.asarray(lstm(emb(ids)))
    # Trailing padding does not change the last output: the same as the unpadded sequence.
    np.testing.assert_allclose(last[0], np.asarray(lstm(emb(ids[:1, :2])))[0], atol=1e-6)
    # The mask argument gives the same as the embedding's mask; without a mask the numbers differ.
    plain = L.Embedding(6, 3)
    plain(ids)
    plain.embeddings.assign(np.asarray(emb.embeddings))
    np.testing.assert_allclose(np.asarray(lstm(plain(ids), mask=ids != 0)), last, atol=1e-6)
    assert np.abs(np.asarray(lstm(plain(ids)))[0] - last[0]).max() > 1e-4
    seq = L.GRU(2, return_sequences=True)(emb(ids))
    assert ef._core._mask_of(seq) is not None  # return_sequences passes the mask on


def test_bidirectional_concat_state_and_weights():
    bi = L.Bidirectional(L.LSTM(3, return_sequences=True, return_state=True), merge_mode="concat")
    out = bi(X)
    assert isinstance(out, list) and len(out) == 5
    assert out[0].shape == (2, 5, 6) and all(s.shape == (2, 3) for s in out[1:])
    assert len(bi.weights) == 6
    # The forward half is the forward layer run alone.
    fwd = np.asarray(bi.forward_layer(X)[0])
    np.testing.assert_allclose(np.asarray(out[0])[..., :3], fwd, atol=1e-6)
    with pytest.raises(Exception, match="merge_mode"):
        L.Bidirectional(L.GRU(2), merge_mode="max")


def test_conv1d_causal_and_pooling_match_numpy():
    conv = L.Conv1D(4, 3, padding="causal", dilation_rate=2, activation="relu")
    y = np.asarray(conv(X))
    k, b = np.asarray(conv.kernel), np.asarray(conv.bias)
    xp = np.concatenate([np.zeros((2, 4, 3), np.float32), X], 1)
    want = np.zeros((2, 5, 4))
    for t in range(5):
        for j in range(3):
            want[:, t] += xp[:, t + 2 * j] @ k[j]
    np.testing.assert_allclose(y, np.maximum(want + b, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(L.MaxPooling1D(2)(X)), X[:, :4].reshape(2, 2, 2, 3).max(2))
    np.testing.assert_allclose(np.asarray(L.AveragePooling1D(2, strides=1)(X)), (X[:, :-1] + X[:, 1:]) / 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(L.GlobalAveragePooling1D()(X)), X.mean(1), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(L.GlobalMaxPooling1D(keepdims=True)(X)), X.max(1, keepdims=True))
    img = X.reshape(2, 5, 3, 1)
    np.testing.assert_allclose(np.asarray(L.GlobalMaxPooling2D()(img)), img.max((1, 2)))


def test_traced_equals_eager_and_fit_traces_once_and_saves(tmp_path):
    ef.random.set_seed(3)
    lstm = L.LSTM(5, return_sequences=True)
    f = ef.function(lambda a: lstm(a))
    np.testing.assert_array_equal(np.asarray(f(X)), np.asarray(lstm(X)))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6, 2)).astype(np.float32)
    y = (x.sum((1, 2)) > 0).astype(np.float32).reshape(64, 1)
    model = keras.Sequential([L.Conv1D(4, 2, padding="causal"), L.GRU(6, return_sequences=True),
                              L.Bidirectional(L.LSTM(4), merge_mode="sum"), L.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss="mse")
    h = model.fit(x, y, batch_size=16, epochs=10, verbose=0)
    assert h.history["loss"][-1] < 0.7 * h.history["loss"][0]
    assert model.tracing_count() == 1
    masked = keras.Sequential([L.Embedding(7, 3, mask_zero=True), L.LSTM(2)])
    ids = np.array([[1, 2, 0, 0], [3, 0, 4, 0]])
    masked(ids)  # builds: the file holds the weights
    masked.save(str(tmp_path / "masked.efmodel"))
    again = keras.models.load_model(str(tmp_path / "masked.efmodel"))
    assert again.layers[0].mask_zero
    np.testing.assert_array_equal(np.asarray(again(ids)), np.asarray(masked(ids)))
    path = str(tmp_path / "rnn.efmodel")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(np.asarray(loaded.predict(x, verbose=0)), np.asarray(model.predict(x, verbose=0)))


def test_onnx_export_runs_in_onnxruntime_like_eagerflow(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    ef.random.set_seed(5)
    model = keras.Sequential([L.LSTM(4, return_sequences=True), L.GRU(3, go_backwards=True), L.Dense(2)])
    x = np.random.default_rng(1).normal(size=(3, 6, 5)).astype(np.float32)
    want = np.asarray(model.predict(x, verbose=0))
    path = str(tmp_path / "rnn.onnx")
    ef.onnx.export_model(model, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bad_inputs_and_arguments_are_errors():
    lstm = L.LSTM(3, name="my_lstm")
    with pytest.raises(Exception, match="my_lstm"):
        lstm(np.ones((2, 5), np.float32))
    with pytest.raises(ValueError, match="dropout"):
        L.LSTM(3, dropout=1.5)
    with pytest.raises(ValueError, match="recurrent_dropout"):
        L.LSTM(3, recurrent_dropout=0.5)
    with pytest.raises(Exception, match="padding"):
        L.Conv1D(2, 3, padding="full")
    with pytest.raises(Exception, match="initial state"):
        lstm(X, initial_state=[np.zeros((2, 3), np.float32)])


def _linear_rnn(dropout):
    # h_t = x_t (identity kernel): the output at every step is the (dropped) input.
    return L.SimpleRNN(4, activation=None, use_bias=False, kernel_initializer="identity",
                       recurrent_initializer="zeros", return_sequences=True, dropout=dropout)


def test_dropout_drops_input_features_with_one_mask_per_sequence_in_training_only():
    x = np.ones((64, 5, 4), np.float32)
    layer = _linear_rnn(0.5)
    np.testing.assert_array_equal(layer(x).numpy(), x)  # inference: untouched
    y = layer(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}  # kept features scaled by 1 / (1 - rate)
    np.testing.assert_array_equal(y, np.repeat(y[:, :1, :], 5, axis=1))  # the same mask at every step
    assert 0.3 < (y[:, 0, :] == 0).mean() < 0.7  # about half dropped, differently per sequence
    assert len({tuple(row) for row in y[:, 0, :]}) > 4
    assert not np.array_equal(layer(x, training=True).numpy(), y)  # a new mask each call
    f = ef.function(lambda t: layer(t, training=True))
    first, second = f(x).numpy(), f(x).numpy()
    assert set(np.unique(first)) <= {0.0, 2.0} and not np.array_equal(first, second)  # replayed: drawn again
    assert layer.get_config()["dropout"] == 0.5
    assert L.SimpleRNN.from_config(layer.get_config()).get_config()["dropout"] == 0.5


def test_dropout_in_fit_and_inside_bidirectional():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(32, 6, 3)).astype(np.float32), rng.normal(size=(32, 1)).astype(np.float32)
    model = keras.Sequential([keras.Input((6, 3)), L.LSTM(8, dropout=0.25), L.Dense(1)])
    model.compile("adam", "mse")
    history = model.fit(x, y, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))  # no dropout in predict
    both = L.Bidirectional(_linear_rnn(0.5))
    ones = np.ones((16, 3, 4), np.float32)
    np.testing.assert_array_equal(both(ones).numpy(), np.ones((16, 3, 8)))
    dropped = both(ones, training=True).numpy()
    assert set(np.unique(dropped)) <= {0.0, 2.0} and (dropped == 0).any()
