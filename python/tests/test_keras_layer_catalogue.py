"""The Keras 3 layer catalogue written in Python (keras/_layers_*.py): one table row per layer with a
NumPy reference of Keras' result, run through values, configs, gradients, eager == traced,
functional models with fit, and save/load."""
import itertools

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

L = keras.layers
RNG = np.random.default_rng(7)


# ---- NumPy references (channels-last, Keras' / TF's padding rules) ----
def _same_pads(n, k, s):
    out = -(-n // s)
    total = max((out - 1) * s + k - n, 0)
    return total // 2, total - total // 2


def np_conv(x, w, strides, padding, dilation):
    """x (B, *spatial, C), w (*k, C, F): TF's convolution, by summing one shifted product per tap."""
    rank = x.ndim - 2
    k_eff = [(k - 1) * d + 1 for k, d in zip(w.shape[:rank], dilation)]
    if padding == "same":
        pads = [_same_pads(n, k, s) for n, k, s in zip(x.shape[1:-1], k_eff, strides)]
        x = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    outs = [(n - k) // s + 1 for n, k, s in zip(x.shape[1:-1], k_eff, strides)]
    y = np.zeros((x.shape[0], *outs, w.shape[-1]))
    for tap in itertools.product(*[range(k) for k in w.shape[:rank]]):
        idx = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilation, outs, strides))
        y += x[(slice(None),) + idx] @ w[tap]
    return y


def np_conv_transpose(x, w, strides, padding, dilation, output_padding=None):
    """x (B, *spatial, C), w (*k, F, C): the scatter definition (each input adds kernel * value at
    position i * stride + tap * dilation), cropped as TF's conv_transpose with Keras' output size."""
    rank = x.ndim - 2
    ks = w.shape[:rank]
    k_eff = [(k - 1) * d + 1 for k, d in zip(ks, dilation)]
    full = [(n - 1) * s + k for n, s, k in zip(x.shape[1:-1], strides, k_eff)]
    y = np.zeros((x.shape[0], *[f + s for f, s in zip(full, strides)], w.shape[-2]))
    for pos in itertools.product(*[range(n) for n in x.shape[1:-1]]):
        for tap in itertools.product(*[range(k) for k in ks]):
            at = tuple(p * s + t * d for p, s, t, d in zip(pos, strides, tap, dilation))
            y[(slice(None),) + at] += x[(slice(None),) + pos] @ w[tap].T
    out = []
    for i, (n, k, s) in enumerate(zip(x.shape[1:-1], k_eff, strides)):
        if output_padding is None:
            out.append(n * s + max(k - s, 0) if padding == "valid" else n * s)
        else:
            pad = k // 2 if padding == "same" else 0
            out.append((n - 1) * s + k - 2 * pad + output_padding[i])
    before = [max(f - o, 0) // 2 for f, o in zip(full, out)]
    return y[(slice(None),) + tuple(slice(b, b + o) for b, o in zip(before, out))]


def np_depthwise(x, w, strides, padding, dilation):
    c, m = w.shape[-2:]
    parts = [np_conv(x[..., i:i + 1], w[..., i:i + 1, j:j + 1], strides, padding, dilation)
             for i in range(c) for j in range(m)]
    return np.concatenate(parts, -1)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_pool3d(x, k, s, op):
    outs = [(n - kk) // ss + 1 for n, kk, ss in zip(x.shape[1:4], k, s)]
    y = np.zeros((x.shape[0], *outs, x.shape[-1]))
    for i, j, l in itertools.product(*[range(o) for o in outs]):
        win = x[:, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1], l * s[2]:l * s[2] + k[2]]
        y[:, i, j, l] = op(win, axis=(1, 2, 3))
    return y


def np_group_norm(x, groups, gamma, beta, eps=1e-3):
    shape = x.shape
    g = x.reshape(shape[0], -1, groups, shape[-1] // groups)
    mean = g.mean(axis=(1, 3), keepdims=True)
    var = g.var(axis=(1, 3), keepdims=True)
    return ((g - mean) / np.sqrt(var + eps)).reshape(shape) * gamma + beta


def np_attention(q, v, k, scale=None, causal=False, v_mask=None):
    s = q @ np.swapaxes(k, -1, -2)
    if scale is not None:
        s = s * scale
    if v_mask is not None:
        s = np.where(v_mask[:, None, :], s, s - 1e9)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, s - 1e9)
    return np_softmax(s) @ v


def np_additive(q, v, k, scale):
    s = (scale * np.tanh(q[:, :, None, :] + k[:, None, :, :])).sum(-1)
    return np_softmax(s) @ v


def np_adaptive(x, out, op):
    """Adaptive pooling by its definition: output cell i pools floor(i*n/out) .. ceil((i+1)*n/out)."""
    bins = [[(i * n // o, -(-(i + 1) * n // o)) for i in range(o)] for n, o in zip(x.shape[1:-1], out)]
    y = np.zeros((x.shape[0], *out, x.shape[-1]))
    for cell in itertools.product(*[range(o) for o in out]):
        win = x[(slice(None),) + tuple(slice(*bins[a][c]) for a, c in enumerate(cell))]
        y[(slice(None),) + cell] = op(win, axis=tuple(range(1, len(out) + 1)))
    return y


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_rnn(x, w, kind, backwards=False, sequences=False):
    """Keras' cells step by step: SimpleRNN, LSTM (gates i, f, c, o), GRU (reset_after)."""
    units = w[1].shape[0]
    h = np.zeros((x.shape[0], units))
    c = np.zeros_like(h)
    outs = []
    for t in (range(x.shape[1] - 1, -1, -1) if backwards else range(x.shape[1])):
        xt = x[:, t]
        if kind == "simple":
            h = np.tanh(xt @ w[0] + h @ w[1] + w[2])
        elif kind == "lstm":
            i, f, g, o = np.split(xt @ w[0] + h @ w[1] + w[2], 4, -1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
        else:
            xz, xr, xh = np.split(xt @ w[0] + w[2][0], 3, -1)
            rz, rr, rh = np.split(h @ w[1] + w[2][1], 3, -1)
            z, r = _sigmoid(xz + rz), _sigmoid(xr + rr)
            h = z * h + (1 - z) * np.tanh(xh + r * rh)
        outs.append(h)
    return np.stack(outs, 1) if sequences else h


def np_conv_lstm(x, w, padding="same", sequences=False):
    """ConvLSTM: LSTM gates from a convolution of x_t (kernel w[0], bias w[2]) plus a same-padded
    convolution of h (w[1])."""
    kernel, recurrent, bias = w
    rank = x.ndim - 3
    h = c = None
    outs = []
    for t in range(x.shape[1]):
        z = np_conv(x[:, t], kernel, (1,) * rank, padding, (1,) * rank) + bias
        if h is None:
            h = c = np.zeros(z.shape[:-1] + (recurrent.shape[-2],))
        z = z + np_conv(h, recurrent, (1,) * rank, "same", (1,) * rank)
        i, f, g, o = np.split(z, 4, -1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, 1) if sequences else h


def _relu(x, max_value, slope, threshold):
    y = np.where(x >= threshold, x, slope * (x - threshold))
    return y if max_value is None else np.minimum(y, max_value)


# ---- the table: (id, factory, input shapes, reference(inputs, weights)) ----
CASES = [
    ("ReLU", lambda: L.ReLU(max_value=2.0, negative_slope=0.1, threshold=0.5), [(4, 6)],
     lambda xs, w: _relu(xs[0], 2.0, 0.1, 0.5)),
    ("ReLU_default", lambda: L.ReLU(), [(4, 6)], lambda xs, w: np.maximum(xs[0], 0)),
    ("Softmax", lambda: L.Softmax(axis=1), [(3, 4, 5)], lambda xs, w: np_softmax(xs[0], 1)),
    ("PReLU", lambda: L.PReLU(shared_axes=[1]), [(2, 3, 4)],
     lambda xs, w: np.maximum(xs[0], 0) + w[0] * np.minimum(xs[0], 0)),
    ("Conv3D", lambda: L.Conv3D(3, 2, strides=(1, 2, 1), padding="same"), [(2, 4, 5, 3, 2)],
     lambda xs, w: np_conv(xs[0], w[0], (1, 2, 1), "same", (1, 1, 1)) + w[1]),
    ("Conv1DTranspose", lambda: L.Conv1DTranspose(3, 3, strides=2, padding="same"), [(2, 5, 2)],
     lambda xs, w: np_conv_transpose(xs[0], w[0], (2,), "same", (1,)) + w[1]),
    ("Conv1DTranspose_valid", lambda: L.Conv1DTranspose(2, 2, strides=3), [(2, 4, 3)],
     lambda xs, w: np_conv_transpose(xs[0], w[0], (3,), "valid", (1,)) + w[1]),
    ("Conv1DTranspose_outpad", lambda: L.Conv1DTranspose(2, 4, strides=2, padding="same", output_padding=1),
     [(2, 4, 3)], lambda xs, w: np_conv_transpose(xs[0], w[0], (2,), "same", (1,), (1,)) + w[1]),
    ("Conv3DTranspose", lambda: L.Conv3DTranspose(2, 2, strides=2, use_bias=False), [(1, 2, 3, 2, 3)],
     lambda xs, w: np_conv_transpose(xs[0], w[0], (2, 2, 2), "valid", (1, 1, 1))),
    ("DepthwiseConv2D", lambda: L.DepthwiseConv2D(3, depth_multiplier=2, padding="same"), [(2, 5, 4, 3)],
     lambda xs, w: np_depthwise(xs[0], w[0], (1, 1), "same", (1, 1)) + w[1]),
    ("DepthwiseConv1D", lambda: L.DepthwiseConv1D(3, strides=2, dilation_rate=1), [(2, 9, 3)],
     lambda xs, w: np_depthwise(xs[0][:, None], w[0][None], (1, 2), "valid", (1, 1))[:, 0] + w[1]),
    ("SeparableConv2D", lambda: L.SeparableConv2D(4, 3, depth_multiplier=2, activation="relu"), [(2, 6, 5, 3)],
     lambda xs, w: np.maximum(np_depthwise(xs[0], w[0], (1, 1), "valid", (1, 1)) @ w[1][0, 0] + w[2], 0)),
    ("SeparableConv1D", lambda: L.SeparableConv1D(4, 3, padding="same"), [(2, 7, 3)],
     lambda xs, w: np_depthwise(xs[0][:, None], w[0][None], (1, 1), "same", (1, 1))[:, 0] @ w[1][0] + w[2]),
    ("MaxPooling3D", lambda: L.MaxPooling3D(), [(2, 4, 4, 6, 2)],
     lambda xs, w: np_pool3d(xs[0], (2, 2, 2), (2, 2, 2), np.max)),
    ("AveragePooling3D", lambda: L.AveragePooling3D(pool_size=(2, 1, 3), strides=1), [(2, 3, 4, 5, 2)],
     lambda xs, w: np_pool3d(xs[0], (2, 1, 3), (1, 1, 1), np.mean)),
    ("GlobalMaxPooling3D", lambda: L.GlobalMaxPooling3D(), [(2, 3, 4, 5, 2)],
     lambda xs, w: xs[0].max(axis=(1, 2, 3))),
    ("GlobalAveragePooling3D", lambda: L.GlobalAveragePooling3D(keepdims=True), [(2, 3, 4, 5, 2)],
     lambda xs, w: xs[0].mean(axis=(1, 2, 3), keepdims=True)),
    ("RepeatVector", lambda: L.RepeatVector(3), [(2, 4)], lambda xs, w: np.repeat(xs[0][:, None], 3, 1)),
    ("Permute", lambda: L.Permute((3, 1, 2)), [(2, 3, 4, 5)], lambda xs, w: xs[0].transpose(0, 3, 1, 2)),
    ("UpSampling1D", lambda: L.UpSampling1D(3), [(2, 4, 3)], lambda xs, w: np.repeat(xs[0], 3, 1)),
    ("UpSampling3D", lambda: L.UpSampling3D((1, 2, 3)), [(2, 2, 3, 2, 2)],
     lambda xs, w: np.repeat(np.repeat(xs[0], 2, 2), 3, 3)),
    ("ZeroPadding1D", lambda: L.ZeroPadding1D((1, 2)), [(2, 4, 3)],
     lambda xs, w: np.pad(xs[0], [(0, 0), (1, 2), (0, 0)])),
    ("ZeroPadding3D", lambda: L.ZeroPadding3D(((1, 0), 2, (0, 1))), [(2, 2, 3, 2, 2)],
     lambda xs, w: np.pad(xs[0], [(0, 0), (1, 0), (2, 2), (0, 1), (0, 0)])),
    ("Cropping1D", lambda: L.Cropping1D((1, 2)), [(2, 6, 3)], lambda xs, w: xs[0][:, 1:-2]),
    ("Cropping2D", lambda: L.Cropping2D(((1, 0), (0, 2))), [(2, 5, 6, 3)], lambda xs, w: xs[0][:, 1:, :-2]),
    ("Cropping3D", lambda: L.Cropping3D(1), [(2, 4, 5, 3, 2)], lambda xs, w: xs[0][:, 1:-1, 1:-1, 1:-1]),
    ("Identity", lambda: L.Identity(), [(2, 3)], lambda xs, w: xs[0]),
    ("GaussianNoise", lambda: L.GaussianNoise(0.5), [(4, 5)], lambda xs, w: xs[0]),
    ("GaussianDropout", lambda: L.GaussianDropout(0.4), [(4, 5)], lambda xs, w: xs[0]),
    ("AlphaDropout", lambda: L.AlphaDropout(0.4), [(4, 5)], lambda xs, w: xs[0]),
    ("SpatialDropout1D", lambda: L.SpatialDropout1D(0.4), [(4, 5, 3)], lambda xs, w: xs[0]),
    ("SpatialDropout2D", lambda: L.SpatialDropout2D(0.4), [(4, 5, 3, 2)], lambda xs, w: xs[0]),
    ("SpatialDropout3D", lambda: L.SpatialDropout3D(0.4), [(2, 3, 3, 2, 2)], lambda xs, w: xs[0]),
    ("ActivityRegularization", lambda: L.ActivityRegularization(l1=0.1), [(3, 4)], lambda xs, w: xs[0]),
    ("Multiply", lambda: L.Multiply(), [(2, 3), (2, 3), (2, 3)], lambda xs, w: xs[0] * xs[1] * xs[2]),
    ("Subtract", lambda: L.Subtract(), [(2, 3), (2, 3)], lambda xs, w: xs[0] - xs[1]),
    ("Average", lambda: L.Average(), [(2, 3), (2, 3)], lambda xs, w: (xs[0] + xs[1]) / 2),
    ("Maximum", lambda: L.Maximum(), [(2, 3), (2, 3)], lambda xs, w: np.maximum(xs[0], xs[1])),
    ("Minimum", lambda: L.Minimum(), [(2, 3), (2, 3)], lambda xs, w: np.minimum(xs[0], xs[1])),
    ("Dot", lambda: L.Dot(axes=1), [(2, 4), (2, 4)], lambda xs, w: (xs[0] * xs[1]).sum(1, keepdims=True)),
    ("Dot_3d", lambda: L.Dot(axes=(2, 2)), [(2, 3, 4), (2, 5, 4)],
     lambda xs, w: np.einsum("bnd,bmd->bnm", xs[0], xs[1])),
    ("Dot_normalize", lambda: L.Dot(axes=1, normalize=True), [(2, 4), (2, 4)],
     lambda xs, w: (xs[0] * xs[1]).sum(1, keepdims=True) / np.linalg.norm(xs[0], axis=1, keepdims=True)
     / np.linalg.norm(xs[1], axis=1, keepdims=True)),
    ("UnitNormalization", lambda: L.UnitNormalization(), [(3, 4)],
     lambda xs, w: xs[0] / np.linalg.norm(xs[0], axis=-1, keepdims=True)),
    ("GroupNormalization", lambda: L.GroupNormalization(groups=2), [(2, 3, 4)],
     lambda xs, w: np_group_norm(xs[0], 2, w[0], w[1])),
    ("Attention", lambda: L.Attention(use_scale=True), [(2, 3, 4), (2, 5, 4), (2, 5, 4)],
     lambda xs, w: np_attention(xs[0], xs[1], xs[2], scale=w[0])),
    ("AdditiveAttention", lambda: L.AdditiveAttention(), [(2, 3, 4), (2, 5, 4)],
     lambda xs, w: np_additive(xs[0], xs[1], xs[1], w[0])),
    ("TimeDistributed", lambda: L.TimeDistributed(L.Dense(3)), [(2, 4, 5)], lambda xs, w: xs[0] @ w[0] + w[1]),
    ("AdaptiveAveragePooling1D", lambda: L.AdaptiveAveragePooling1D(3), [(2, 7, 2)],
     lambda xs, w: np_adaptive(xs[0], (3,), np.mean)),
    ("AdaptiveMaxPooling2D", lambda: L.AdaptiveMaxPooling2D((4, 2)), [(2, 7, 5, 2)],
     lambda xs, w: np_adaptive(xs[0], (4, 2), np.max)),
    ("AdaptiveAveragePooling3D", lambda: L.AdaptiveAveragePooling3D(2), [(1, 5, 3, 4, 2)],
     lambda xs, w: np_adaptive(xs[0], (2, 2, 2), np.mean)),
    ("EinsumDense", lambda: L.EinsumDense("abc,cde->abde", output_shape=(None, 2, 3), bias_axes="de"), [(2, 3, 4)],
     lambda xs, w: np.einsum("abc,cde->abde", xs[0], w[0]) + w[1]),
    ("EinsumDense_ellipsis", lambda: L.EinsumDense("...b,bc->...c", output_shape=4, activation="relu"), [(2, 3, 5)],
     lambda xs, w: np.maximum(xs[0] @ w[0], 0)),
    ("RNN_SimpleRNNCell", lambda: L.RNN(L.SimpleRNNCell(3), return_sequences=True), [(2, 4, 5)],
     lambda xs, w: np_rnn(xs[0], w, "simple", sequences=True)),
    ("RNN_LSTMCell", lambda: L.RNN(L.LSTMCell(3)), [(2, 4, 5)], lambda xs, w: np_rnn(xs[0], w, "lstm")),
    ("RNN_GRUCell_backwards", lambda: L.RNN(L.GRUCell(3), go_backwards=True), [(2, 4, 5)],
     lambda xs, w: np_rnn(xs[0], w, "gru", backwards=True)),
    ("RNN_StackedRNNCells", lambda: L.RNN(L.StackedRNNCells([L.SimpleRNNCell(3), L.LSTMCell(2)])), [(2, 4, 5)],
     lambda xs, w: np_rnn(np_rnn(xs[0], w[:3], "simple", sequences=True), w[3:], "lstm")),
    ("ConvLSTM1D", lambda: L.ConvLSTM1D(2, 3, padding="same"), [(2, 3, 5, 2)], lambda xs, w: np_conv_lstm(xs[0], w)),
    ("ConvLSTM2D", lambda: L.ConvLSTM2D(2, 2, return_sequences=True), [(1, 3, 4, 3, 2)],
     lambda xs, w: np_conv_lstm(xs[0], w, "valid", sequences=True)),
    ("Masking", lambda: L.Masking(mask_value=0.5), [(2, 3, 4)], lambda xs, w: xs[0]),
    ("RMSNormalization", lambda: L.RMSNormalization(), [(2, 3, 4)],
     lambda xs, w: xs[0] / np.sqrt((xs[0] ** 2).mean(-1, keepdims=True) + 1e-6) * w[0]),
]
IDS = [c[0] for c in CASES]


def _inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype(np.float32) for s in shapes]


def _call(layer, xs, **kwargs):
    return layer(xs if len(xs) > 1 else xs[0], **kwargs)


def _built(factory, xs):
    """The layer called once, then given random weights (so the reference sees non-trivial ones)."""
    layer = factory()
    _call(layer, xs)
    rng = np.random.default_rng(1)
    layer.set_weights([rng.normal(size=w.shape).astype(np.float32) * 0.5 for w in layer.get_weights()])
    return layer


@pytest.mark.parametrize("name,factory,shapes,reference", CASES, ids=IDS)
def test_values_match_keras(name, factory, shapes, reference):
    xs = _inputs(shapes)
    layer = _built(factory, xs)
    y = _call(layer, xs)
    want = reference(xs, layer.get_weights())
    assert tuple(y.shape) == want.shape
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,factory,shapes,reference", CASES, ids=IDS)
def test_config_round_trip(name, factory, shapes, reference):
    xs = _inputs(shapes)
    layer = _built(factory, xs)
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert type(clone) is type(layer)
    assert clone.get_config() == config
    _call(clone, xs)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_call(clone, xs).numpy(), _call(layer, xs).numpy(), rtol=1e-6)


@pytest.mark.parametrize("name,factory,shapes,reference", CASES, ids=IDS)
def test_gradients_flow_and_traced_equals_eager(name, factory, shapes, reference):
    xs = [ef.constant(x) for x in _inputs(shapes)]
    layer = _built(factory, [x.numpy() for x in xs])
    with ef.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        loss = ef.reduce_sum(ef.square(_call(layer, xs)))
    grads = tape.gradient(loss, xs + list(layer.trainable_weights))
    assert all(g is not None and np.all(np.isfinite(g.numpy())) for g in grads)
    assert any(np.abs(g.numpy()).sum() > 0 for g in grads)
    traced = ef.function(lambda *a: _call(layer, list(a)))
    np.testing.assert_allclose(traced(*xs).numpy(), _call(layer, xs).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,factory,shapes,reference", CASES, ids=IDS)
def test_functional_fit_save_load(name, factory, shapes, reference, tmp_path):
    inputs = [keras.Input(s[1:]) for s in shapes]
    y = _call(factory(), inputs)
    out = L.Dense(1)(L.Flatten()(y))
    model = keras.Model(inputs if len(inputs) > 1 else inputs[0], out)
    xs = _inputs([(8,) + s[1:] for s in shapes], seed=3)
    target = np.ones((8, 1), np.float32)
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(xs if len(xs) > 1 else xs[0], target, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    feed = xs if len(xs) > 1 else xs[0]
    np.testing.assert_allclose(loaded.predict(feed, verbose=0), model.predict(feed, verbose=0), rtol=1e-5, atol=1e-6)


def test_sequential_builds_catalogue_layers():
    model = keras.Sequential([keras.Input((8, 8, 3)), L.SeparableConv2D(4, 3, padding="same"), L.ReLU(),
                              L.DepthwiseConv2D(3), L.SpatialDropout2D(0.2), L.GlobalMaxPooling2D(),
                              L.RepeatVector(2), L.Permute((2, 1)), L.Flatten(), L.Dense(2), L.Softmax()])
    y = model(np.zeros((3, 8, 8, 3), np.float32))
    assert y.shape == (3, 2)
    np.testing.assert_allclose(y.numpy().sum(1), 1.0, rtol=1e-6)


# ---- training vs inference ----
@pytest.mark.parametrize("factory", [lambda: L.GaussianNoise(0.3), lambda: L.GaussianDropout(0.3),
                                     lambda: L.SpatialDropout1D(0.3)],
                         ids=["GaussianNoise", "GaussianDropout", "SpatialDropout1D"])
def test_noise_only_in_training(factory):
    layer = factory()
    x = np.ones((256, 10, 16), np.float32)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    y = layer(x, training=True).numpy()
    assert not np.allclose(y, x)
    assert abs(y.mean() - 1.0) < 0.05  # every one of them keeps the mean


def test_gaussian_noise_and_dropout_spread():
    x = np.ones((200, 100), np.float32)
    assert abs(L.GaussianNoise(0.5)(x, training=True).numpy().std() - 0.5) < 0.02
    rate = 0.2
    assert abs(L.GaussianDropout(rate)(x, training=True).numpy().std() - np.sqrt(rate / (1 - rate))) < 0.02


def test_alpha_dropout_keeps_selu_moments():
    x = np.random.default_rng(0).normal(size=(400, 400)).astype(np.float32)
    y = L.AlphaDropout(0.2)(x, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02


def test_spatial_dropout_drops_whole_channels():
    x = np.ones((16, 10, 6), np.float32)
    y = L.SpatialDropout1D(0.5)(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert np.all(y == y[:, :1, :])  # one decision per (sample, channel)
    y2 = L.SpatialDropout2D(0.5, data_format="channels_first")(np.ones((8, 4, 3, 3), np.float32), training=True)
    y2 = y2.numpy()
    assert np.all(y2 == y2[:, :, :1, :1])


def test_noise_is_fresh_each_fit_step():
    model = keras.Sequential([keras.Input((4,)), L.GaussianNoise(1.0), L.Dense(1, kernel_initializer="ones")])
    model.compile("sgd", "mse")
    h = model.fit(np.zeros((32, 4), np.float32), np.zeros((32, 1), np.float32), batch_size=8, epochs=3, verbose=0)
    assert len(set(np.round(h.history["loss"], 6))) == 3
    p = model.predict(np.zeros((3, 4), np.float32), verbose=0)
    np.testing.assert_array_equal(p, np.full_like(p, p[0, 0]))  # no noise at inference


def test_activity_regularization_loss_is_per_sample():
    layer = L.ActivityRegularization(l1=0.1, l2=0.01)
    x = np.full((4, 5), 2.0, np.float32)
    layer(x)
    assert len(layer.losses) == 1
    np.testing.assert_allclose(float(layer.losses[0]), (0.1 * 40 + 0.01 * 80) / 4, rtol=1e-6)


# ---- arguments, masks, errors ----
def test_relu_rejects_negative_arguments():
    for kwargs in ({"max_value": -1.0}, {"negative_slope": -0.1}, {"threshold": -1.0}):
        with pytest.raises(ValueError, match="cannot be a negative value"):
            L.ReLU(**kwargs)


def test_softmax_mask_and_multi_axis():
    x = np.array([[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5]], np.float32)
    mask = np.array([[True, False, True, False], [False, False, False, False]])
    y = L.Softmax()(x, mask=mask).numpy()
    np.testing.assert_allclose(y[0], [np_softmax(np.array([1.0, 3.0]))[0], 0, np_softmax(np.array([1.0, 3.0]))[1], 0],
                               rtol=1e-6)
    np.testing.assert_array_equal(y[1], 0)  # a fully masked row is zeros
    z = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    e = np.exp(z - z.max(axis=(1, 2), keepdims=True))
    np.testing.assert_allclose(L.Softmax(axis=(1, 2))(z).numpy(), e / e.sum(axis=(1, 2), keepdims=True), rtol=1e-5)


def test_attention_masks_causal_and_scores():
    q, v = _inputs([(2, 4, 3), (2, 4, 3)])
    v_mask = np.array([[1, 1, 0, 1], [1, 1, 1, 0]], bool)
    q_mask = np.array([[1, 0, 1, 1], [1, 1, 1, 1]], bool)
    out, scores = L.Attention()([q, v], mask=[q_mask, v_mask], return_attention_scores=True, use_causal_mask=True)
    want = np_attention(q, v, v, causal=True, v_mask=v_mask) * q_mask[..., None]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    assert scores.shape == (2, 4, 4)
    np.testing.assert_allclose(np.triu(scores.numpy(), 1), 0, atol=1e-7)
    # in a functional model trained by fit, with masks and both flags
    qi, vi, mi = keras.Input((4, 3)), keras.Input((4, 3)), keras.Input((4,), dtype="bool")
    attention = L.Attention()
    o, s = attention([qi, vi], mask=[None, mi], use_causal_mask=True, return_attention_scores=True)
    model = keras.Model([qi, vi, mi], L.Dense(1)(L.Flatten()(o)))
    model.compile("adam", "mse")
    model.fit([q, v, v_mask], np.ones((2, 1), np.float32), verbose=0)
    np.testing.assert_allclose(attention([q, v], mask=[None, v_mask], use_causal_mask=True,
                                               return_attention_scores=True)[0].numpy(),
                               np_attention(q, v, v, causal=True, v_mask=v_mask), rtol=1e-5, atol=1e-6)
    layer = L.Attention()
    layer([q, v])
    with pytest.raises(NotImplementedError):
        layer([q, v], use_causal_mask=True)
    with pytest.raises(ValueError, match="list of inputs"):
        L.Attention()(q)


def test_merge_errors_and_functions():
    a, b, c = _inputs([(2, 3), (2, 3), (2, 3)])
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        L.Subtract()([a, b, c])
    with pytest.raises(ValueError, match="at least 2 inputs"):
        L.Multiply()([a])
    with pytest.raises(ValueError, match="Incompatible input shapes"):
        L.Dot(axes=1)([a, np.ones((2, 4), np.float32)])
    np.testing.assert_allclose(L.multiply([a, b]).numpy(), a * b, rtol=1e-6)
    np.testing.assert_allclose(L.subtract([a, b]).numpy(), a - b, rtol=1e-6)
    np.testing.assert_allclose(L.average([a, b, c]).numpy(), (a + b + c) / 3, rtol=1e-6)
    np.testing.assert_allclose(L.maximum([a, b]).numpy(), np.maximum(a, b))
    np.testing.assert_allclose(L.minimum([a, b]).numpy(), np.minimum(a, b))
    np.testing.assert_allclose(L.add([a, b]).numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose(L.concatenate([a, b]).numpy(), np.concatenate([a, b], -1))
    np.testing.assert_allclose(L.dot([a, b], axes=1).numpy(), (a * b).sum(1, keepdims=True), rtol=1e-5)


def test_shape_argument_errors():
    with pytest.raises(ValueError, match="consecutive"):
        L.Permute((1, 3))
    with pytest.raises(ValueError, match="smaller than"):
        L.Cropping1D((2, 2))(np.ones((1, 4, 2), np.float32))
    with pytest.raises(ValueError, match="multiple"):
        L.GroupNormalization(groups=3)(np.ones((1, 4), np.float32))
    with pytest.raises(ValueError, match="data_format"):
        L.UpSampling3D(data_format="nchw")
    with pytest.raises(ValueError, match="padding"):
        L.Conv3D(2, 3, padding="full")
    with pytest.raises(ValueError, match="output padding"):
        L.Conv1DTranspose(2, 3, strides=2, output_padding=2)


def test_keras_default_names():
    assert L.UpSampling1D().name.startswith("up_sampling1d")
    assert L.PReLU().name.startswith("p_re_lu")
    assert L.Conv1DTranspose(1, 1).name.startswith("conv1d_transpose")
    assert L.GlobalMaxPooling3D().name.startswith("global_max_pooling3d")


def test_channels_first_convolution_matches_channels_last():
    x = _inputs([(2, 3, 5, 6)])[0]
    last = L.SeparableConv2D(4, 3, padding="same")
    first = L.SeparableConv2D(4, 3, padding="same", data_format="channels_first")
    y_last = last(np.transpose(x, (0, 2, 3, 1)))
    first(x)
    first.set_weights(last.get_weights())
    np.testing.assert_allclose(first(x).numpy(), np.transpose(y_last.numpy(), (0, 3, 1, 2)), rtol=1e-5, atol=1e-6)


def test_serialize_deserialize_layers():
    for layer in (L.Dense(3), L.ReLU(max_value=6.0), L.TimeDistributed(L.Conv1DTranspose(2, 3))):
        config = L.serialize(layer)
        assert config["class_name"] == type(layer).__name__
        again = L.deserialize(config)
        assert type(again) is type(layer) and again.get_config() == layer.get_config()
    with pytest.raises(ValueError, match="Unknown layer"):
        L.deserialize({"class_name": "NoSuchLayer", "config": {}})


def test_mixed_precision_policy():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        layer = L.Conv1DTranspose(2, 3, strides=2)
        y = layer(np.ones((1, 4, 3), np.float32))
        norm = L.GroupNormalization(groups=1)
        z = norm(ef.cast(np.ones((2, 3, 4)), ef.bfloat16))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert layer.kernel.dtype == ef.float32
    assert y.shape == (1, 9, 2) and z.dtype == ef.bfloat16


def test_wrapper_subclass_nests_the_layer_config():
    class Twice(L.Wrapper):
        def call(self, inputs):
            return 2.0 * self.layer(inputs)

    layer = Twice(L.Dense(2, kernel_initializer="ones"))
    np.testing.assert_allclose(layer(np.ones((1, 3), np.float32)).numpy(), [[6.0, 6.0]])
    assert layer.get_config()["layer"]["class_name"] == "Dense"
    assert len(layer.trainable_weights) == 2
    clone = Twice.from_config(layer.get_config())
    assert clone.layer.get_config()["units"] == 2
    with pytest.raises(ValueError, match="isn't a supported layer"):
        L.Wrapper("dense")


def test_einsum_dense_shapes_and_errors():
    layer = L.EinsumDense("abc,cd->abd", output_shape=(None, 5), bias_axes="d")
    layer(np.ones((2, 3, 4), np.float32))
    assert layer.kernel.shape == (4, 5) and layer.bias.shape == (5,)
    assert layer.get_config()["output_shape"] == (None, 5)
    assert L.EinsumDense("ab,bc->ac", 4).get_config()["output_shape"] == (4,)
    with pytest.raises(ValueError, match="Invalid einsum equation"):
        L.EinsumDense("ab->a", 4)
    with pytest.raises(ValueError, match="Bias dimension 'z'"):
        L.EinsumDense("ab,bc->ac", 4, bias_axes="z")(np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match="do not match at shared dimension"):
        L.EinsumDense("abc,cd->abd", output_shape=(7, 5))(np.ones((1, 3, 4), np.float32))


class MinimalRNNCell(L.Layer):
    """A user's cell as in Keras' RNN guide: call(inputs, states) -> (output, new_states)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones", name="kernel")

    def call(self, inputs, states):
        output = ef.matmul(inputs, self.kernel) + 0.5 * states[0]
        return output, [output]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_rnn_runs_a_user_cell_in_fit_and_save(tmp_path):
    x = np.ones((4, 3, 2), np.float32)
    layer = L.RNN(MinimalRNNCell(2), return_sequences=True)
    # h_t = sum(x_t) + 0.5 h_{t-1}: 2, 3, 3.5
    np.testing.assert_allclose(layer(x).numpy()[0, :, 0], [2.0, 3.0, 3.5])
    inputs = keras.Input((3, 2))
    model = keras.Model(inputs, L.Dense(1)(L.RNN(MinimalRNNCell(2))(inputs)))
    model.compile("adam", "mse")
    model.fit(x, np.zeros((4, 1), np.float32), epochs=2, verbose=0)
    assert len(model.trainable_weights) == 3
    path = str(tmp_path / "rnn.keras")
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects={"MinimalRNNCell": MinimalRNNCell})
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)


def test_rnn_states_initial_state_and_cells_alone():
    x = np.random.default_rng(0).normal(size=(2, 4, 5)).astype(np.float32)
    layer = L.RNN(L.LSTMCell(3), return_state=True)
    out, h, c = layer(x)
    np.testing.assert_allclose(out.numpy(), h.numpy())
    assert c.shape == (2, 3)
    gru = L.RNN(L.GRUCell(3))
    start = np.ones((2, 3), np.float32)
    assert not np.allclose(gru(x, initial_state=start).numpy(), gru(x).numpy())
    cell = L.LSTMCell(3)
    out, states = cell(x[:, 0], [np.zeros((2, 3), np.float32)] * 2)
    assert out.shape == (2, 3) and len(states) == 2
    np.testing.assert_allclose(states[0].numpy(), out.numpy())
    bias = cell.bias.numpy()
    np.testing.assert_array_equal(bias[3:6], 1.0)  # unit_forget_bias
    np.testing.assert_array_equal(np.delete(bias, range(3, 6)), 0.0)
    rk = L.SimpleRNNCell(4)
    rk(x[:, 0], [np.zeros((2, 4), np.float32)])
    q = rk.recurrent_kernel.numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)  # orthogonal, as Keras' default
    with pytest.raises(ValueError, match="state_size"):
        L.RNN(L.Dense(2))
    with pytest.raises(ValueError, match="must be known"):
        L.RNN(L.GRUCell(2))(keras.Input((None, 3)))
    with pytest.raises(NotImplementedError):
        L.LSTMCell(2, dropout=0.2)


def test_masking_makes_the_rnn_skip_steps():
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype(np.float32)
    x[0, 3:] = 0.0  # the first sample has 3 steps
    masked = L.Masking()(x)
    np.testing.assert_array_equal(ef._core._mask_of(masked).numpy(), [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    lstm = L.LSTM(4)
    out = lstm(masked).numpy()
    np.testing.assert_allclose(out[0], lstm(x[:1, :3]).numpy()[0], rtol=1e-5, atol=1e-6)
    inputs = keras.Input((5, 3))
    model = keras.Model(inputs, L.LSTM(4)(L.Masking()(inputs)))
    model.layers[-1].set_weights(lstm.get_weights())
    np.testing.assert_allclose(model.predict(x, verbose=0), out, rtol=1e-5, atol=1e-6)
    pooled = L.GlobalAveragePooling1D()(L.Masking()(x)).numpy()
    np.testing.assert_allclose(pooled[0], x[0, :3].mean(0), rtol=1e-6)


def np_gqa(q, v, w, heads, kv_heads, head_dim, mask=None):
    """Grouped-query attention from its definition: projections, each key/value head shared by
    heads / kv_heads query heads, scaled dot products, masked softmax, output projection."""
    qk, qb, kk, kb, vk, vb, ok, ob = w
    qp = np.einsum("bqm,muh->bquh", q, qk) + qb
    kp = np.repeat(np.einsum("bkm,mvh->bkvh", v, kk) + kb, heads // kv_heads, axis=2)
    vp = np.repeat(np.einsum("bkm,mvh->bkvh", v, vk) + vb, heads // kv_heads, axis=2)
    s = np.einsum("bquh,bkuh->buqk", qp / np.sqrt(head_dim), kp)
    if mask is not None:
        s = np.where(mask[:, None], s, -1e9)
    p = np_softmax(s) * (1 if mask is None else mask[:, None])
    return np.einsum("bquh,uhm->bqm", np.einsum("buqk,bkuh->bquh", p, vp), ok) + ob


def test_group_query_attention(tmp_path):
    q, v = _inputs([(2, 4, 6), (2, 5, 6)])
    layer = L.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)
    layer(q, v)
    rng = np.random.default_rng(2)
    layer.set_weights([rng.normal(size=w.shape).astype(np.float32) * 0.5 for w in layer.get_weights()])
    w = layer.get_weights()
    np.testing.assert_allclose(layer(q, v).numpy(), np_gqa(q, v, w, 4, 2, 3), rtol=1e-4, atol=1e-5)
    assert [x.shape for x in w[:2]] == [(6, 4, 3), (4, 3)] and w[2].shape == (6, 2, 3)
    v_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    masked = L.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)
    masked(q, v, value_mask=v_mask)
    masked.set_weights(w)
    np.testing.assert_allclose(masked(q, v, value_mask=v_mask).numpy(),
                               np_gqa(q, v, w, 4, 2, 3, mask=np.broadcast_to(v_mask[:, None], (2, 4, 5))),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="divisible"):
        L.GroupQueryAttention(head_dim=2, num_query_heads=3, num_key_value_heads=2)
    # causal self-attention in a functional model, trained and reloaded
    inputs = keras.Input((5, 6))
    out = L.GroupQueryAttention(head_dim=2, num_query_heads=2, num_key_value_heads=1)(inputs, inputs,
                                                                                      use_causal_mask=True)
    model = keras.Model(inputs, L.Dense(1)(L.Flatten()(out)))
    model.compile("adam", "mse")
    model.fit(v, np.ones((2, 1), np.float32), epochs=2, verbose=0)
    path = str(tmp_path / "gqa.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(v, verbose=0), model.predict(v, verbose=0), rtol=1e-5, atol=1e-6)
    # causal: changing the last step leaves the first step's output unchanged
    attn = L.GroupQueryAttention(head_dim=2, num_query_heads=2, num_key_value_heads=1)
    a = attn(v, v, use_causal_mask=True).numpy()
    v2 = v.copy()
    v2[:, -1] += 1.0
    np.testing.assert_allclose(attn(v2, v2, use_causal_mask=True).numpy()[:, 0], a[:, 0], rtol=1e-5, atol=1e-6)


def test_spectral_normalization_scales_the_kernel_in_training(tmp_path):
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    layer = L.SpectralNormalization(L.Dense(3), power_iterations=30)
    before = layer(x).numpy()
    kernel = layer.layer.kernel.numpy()
    np.testing.assert_allclose(layer(x, training=False).numpy(), before)  # inference leaves the kernel alone
    layer(x, training=True)
    sigma = np.linalg.svd(kernel, compute_uv=False)[0]
    np.testing.assert_allclose(layer.layer.kernel.numpy(), kernel / sigma, rtol=1e-4)
    assert layer.vector_u.shape == (1, 3) and not layer.vector_u.trainable
    inputs = keras.Input((5,))
    model = keras.Model(inputs, L.SpectralNormalization(L.Dense(2))(inputs))
    model.compile("adam", "mse")
    model.fit(x, np.ones((4, 2), np.float32), epochs=2, verbose=0)
    assert len(model.trainable_weights) == 2 and len(model.non_trainable_weights) == 1
    path = str(tmp_path / "sn.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    with pytest.raises(ValueError, match="power_iterations"):
        L.SpectralNormalization(L.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="kernel"):
        L.SpectralNormalization(L.ReLU())(x)


def test_reversible_embedding_both_directions(tmp_path):
    ids = np.array([[1, 2, 0], [3, 0, 0]])
    layer = L.ReversibleEmbedding(10, 4, mask_zero=True, logit_soft_cap=2.0)
    hidden = layer(ids)
    table = layer.embeddings.numpy()
    np.testing.assert_allclose(hidden.numpy(), table[ids])
    np.testing.assert_array_equal(ef._core._mask_of(hidden).numpy(), ids != 0)
    assert np.abs(table).max() <= 0.05  # Keras' "uniform": RandomUniform(-0.05, 0.05)
    np.testing.assert_allclose(layer(hidden, reverse=True).numpy(), np.tanh(table[ids] @ table.T / 2.0) * 2.0,
                               rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="hidden states"):
        layer(ids, reverse=True)
    untied = L.ReversibleEmbedding(10, 4, tie_weights=False)
    untied(ids)
    assert [w.shape for w in untied.weights] == [(10, 4), (4, 10)]
    # one layer at both ends of a functional model
    inputs = keras.Input((3,), dtype="int32")
    shared = L.ReversibleEmbedding(10, 4)
    logits = shared(L.Dense(4)(shared(inputs)), reverse=True)
    model = keras.Model(inputs, logits)
    assert len(model.trainable_weights) == 3
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ids, ids, epochs=2, verbose=0)
    path = str(tmp_path / "rev.keras")
    model.save(path)
    np.testing.assert_allclose(keras.models.load_model(path).predict(ids, verbose=0), model.predict(ids, verbose=0),
                               rtol=1e-6)


@pytest.mark.parametrize("factory,x,weight,factor", [
    (lambda: L.Conv1DTranspose(2, 3, kernel_regularizer=keras.regularizers.L2(0.1)), (2, 5, 3), "kernel", 0.1),
    (lambda: L.SeparableConv2D(2, 3, pointwise_regularizer=keras.regularizers.L2(0.2)), (1, 5, 5, 3),
     "pointwise_kernel", 0.2),
    (lambda: L.EinsumDense("ab,bc->ac", 4, kernel_regularizer=keras.regularizers.L2(0.3)), (2, 3), "kernel", 0.3),
    (lambda: L.PReLU(alpha_initializer="ones", alpha_regularizer=keras.regularizers.L2(0.5)), (2, 3), "alpha", 0.5),
], ids=["Conv1DTranspose", "SeparableConv2D", "EinsumDense", "PReLU"])
def test_weight_regularizers_add_losses(factory, x, weight, factor):
    layer = factory()
    layer(np.ones(x, np.float32))
    layer(np.ones(x, np.float32))  # the losses are the last call's, not a running list
    assert len(layer.losses) == 1
    np.testing.assert_allclose(float(layer.losses[0]), factor * (getattr(layer, weight).numpy() ** 2).sum(),
                               rtol=1e-5)
    again = type(layer).from_config(layer.get_config())
    again(np.ones(x, np.float32))
    assert len(again.losses) == 1


def test_rnn_adds_its_cells_regularization_and_fit_minimises_it():
    layer = L.RNN(L.GRUCell(2, kernel_regularizer=keras.regularizers.L2(0.1)))
    layer(np.ones((2, 3, 4), np.float32))
    assert len(layer.losses) == 1
    np.testing.assert_allclose(float(layer.losses[0]), 0.1 * (layer.cell.kernel.numpy() ** 2).sum(), rtol=1e-5)
    inputs = keras.Input((5, 3))
    out = L.Dense(1)(L.Flatten()(L.Conv1DTranspose(2, 3, kernel_regularizer=keras.regularizers.L2(10.0))(inputs)))
    model = keras.Model(inputs, out)
    model.compile("sgd", "mse")
    x, y = np.ones((2, 5, 3), np.float32), np.zeros((2, 1), np.float32)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=5, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before


@pytest.mark.parametrize("name,factory,shapes,reference", CASES, ids=IDS)
def test_mixed_bfloat16_policy(name, factory, shapes, reference):
    xs = _inputs(shapes)
    want = _call(factory(), xs).numpy()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        layer = factory()
        y = _call(layer, xs)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert y.dtype == ef.bfloat16  # computed in bfloat16 ...
    assert all(w.dtype == ef.float32 for w in layer.weights)  # ... from float32 weights
    assert y.shape == want.shape and np.all(np.isfinite(ef.cast(y, ef.float32).numpy()))


def test_input_spec_checks_a_python_layers_inputs():
    class Images(L.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.input_spec = L.InputSpec(ndim=4, axes={-1: 3})

        def call(self, x):
            return x

    layer = Images()
    assert layer(np.ones((1, 2, 2, 3), np.float32)).shape == (1, 2, 2, 3)
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=3"):
        layer(np.ones((1, 2, 3), np.float32))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        layer(np.ones((1, 2, 2, 4), np.float32))
    with pytest.raises(ValueError, match="expected ndim=4"):
        Images()(keras.Input((2, 3)))  # at model building time too
    spec = L.InputSpec(shape=(None, 28, 28, 1), allow_last_axis_squeeze=True)
    assert spec.ndim == 4 and repr(spec) == "InputSpec(shape=(None, 28, 28, 1), ndim=4)"
    assert L.InputSpec.from_config(spec.get_config()).shape == spec.shape
    with pytest.raises(ValueError, match="greater than the maximum"):
        L.InputSpec(ndim=2, axes={3: 1})
    with pytest.raises(TypeError, match="integer keys"):
        L.InputSpec(axes={"a": 1})
