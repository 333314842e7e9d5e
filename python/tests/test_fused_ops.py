"""Fused ops from Python: ef.nn.layer_norm (the op keras.layers.LayerNormalization runs on)
against NumPy's formula and central differences, its errors, and an exported model with
LayerNormalization in onnxruntime."""
import numpy as np
import pytest

import eagerflow as ef
from gradcheck import assert_directional_derivatives

keras = ef.keras
L = keras.layers


def rand(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def naive_layer_norm(x, gamma, beta, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * gamma + beta


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_layer_norm_matches_numpy(dtype, tol):
    x = (rand(3, 5, 40, seed=1) * 4 + 2).astype(dtype)
    g, b = rand(40, seed=2).astype(dtype), rand(40, seed=3).astype(dtype)
    got = ef.nn.layer_norm(x, g, b, epsilon=1e-5).numpy()
    assert got.dtype == dtype
    want = naive_layer_norm(x.astype(np.float64), g.astype(np.float64), b.astype(np.float64), 1e-5)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_layer_norm_gradients_match_central_differences():
    x, g, b, w = rand(2, 3, 6, seed=4), rand(6, seed=5), rand(6, seed=6), rand(2, 3, 6, seed=7)
    xt, gt, bt = ef.constant(x), ef.constant(g), ef.constant(b)
    with ef.GradientTape() as tape:
        tape.watch([xt, gt, bt])
        loss = ef.reduce_sum(ef.nn.layer_norm(xt, gt, bt, epsilon=1e-3) * w)
    grads = [t.numpy() for t in tape.gradient(loss, [xt, gt, bt])]

    def f(a, c, d):
        return float((naive_layer_norm(a, c, d, 1e-3) * w).sum())
    assert_directional_derivatives(f, [x, g, b], grads)


def test_layer_norm_errors_name_the_op_and_shapes():
    x = rand(2, 4).astype(np.float32)
    with pytest.raises(ef.Error, match=r"layer_norm.*gamma.*float32\[3\]"):
        ef.nn.layer_norm(x, np.ones(3, np.float32), np.zeros(4, np.float32))
    with pytest.raises(ef.Error, match="layer_norm.*epsilon must be positive"):
        ef.nn.layer_norm(x, np.ones(4, np.float32), np.zeros(4, np.float32), epsilon=0.0)
    with pytest.raises(ef.Error, match="layer_norm.*float32 or float64"):
        ef.nn.layer_norm(np.ones((2, 4), np.int32), np.ones(4, np.int32), np.zeros(4, np.int32))


def test_layer_normalization_layer_runs_on_the_fused_op_and_trains():
    layer = L.LayerNormalization(epsilon=1e-4)
    x = rand(4, 7, 12, seed=8).astype(np.float32)
    y = layer(x).numpy()
    np.testing.assert_allclose(y, naive_layer_norm(x.astype(np.float64), 1.0, 0.0, 1e-4), rtol=2e-5, atol=2e-5)
    f = ef.function(lambda a: layer(a))
    np.testing.assert_array_equal(f(x).numpy(), y)
    xt = ef.constant(x)
    with ef.GradientTape() as tape:
        tape.watch(xt)
        loss = ef.reduce_sum(layer(xt) * rand(4, 7, 12, seed=9).astype(np.float32))
    dx, dg, db = tape.gradient(loss, [xt] + list(layer.trainable_weights))
    assert dx.shape == (4, 7, 12) and dg.shape == (12,) and db.shape == (12,)
    # Each row's dx sums to 0 (the normalization removes the mean).
    np.testing.assert_allclose(dx.numpy().sum(-1), 0.0, atol=1e-4)


def test_onnx_export_of_layer_normalization_runs_in_onnxruntime(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    ef.random.set_seed(3)
    inp = keras.Input((5, 8), name="x")
    h = L.LayerNormalization(epsilon=1e-5)(L.Dense(8, activation="gelu")(inp))
    model = keras.Model(inp, L.Dense(3)(L.LayerNormalization()(h)))
    for w in model.weights:  # gamma and beta other than 1 and 0
        if "gamma" in w.name or "beta" in w.name:
            w.assign(rand(*w.shape, seed=len(w.name)).astype(np.float32))
    x = rand(4, 5, 8, seed=10).astype(np.float32)
    want = np.asarray(model.predict(x, verbose=0))
    path = str(tmp_path / "layer_norm.onnx")
    ef.onnx.export_model(model, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_sparse_softmax_cross_entropy_with_logits_matches_numpy():
    logits = rand(3, 4, 7, seed=11) * 3
    labels = np.random.default_rng(12).integers(0, 7, size=(3, 4))
    z = logits - logits.max(-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
    want = -np.take_along_axis(log_p, labels[..., None], -1)[..., 0]
    got = ef.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    lt = ef.constant(logits)
    w = rand(3, 4, seed=13)
    with ef.GradientTape() as tape:
        tape.watch(lt)
        loss = ef.reduce_sum(ef.nn.sparse_softmax_cross_entropy_with_logits(labels, lt) * w)
    onehot = np.eye(7)[labels]
    np.testing.assert_allclose(tape.gradient(loss, lt).numpy(), (np.exp(log_p) - onehot) * w[..., None], rtol=1e-12, atol=1e-12)
    # The Keras loss from logits gives the mean of the same numbers.
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(float(keras_loss(labels, logits.astype(np.float32)).numpy()), want.mean(), rtol=1e-5)
    with pytest.raises(ef.Error, match=r"sparse_softmax_cross_entropy.*label 7.*\[0, 7\)"):
        ef.nn.sparse_softmax_cross_entropy_with_logits(np.full((3, 4), 7), logits)
