"""Traced functions and loaded saved models as single call ops: differentiable from their
graph with saved forward values; a loaded model fine-tunes (issue 16)."""
import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


def _mlp():
    return keras.Sequential([keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(3)])


@pytest.fixture
def saved(tmp_path):
    model = _mlp()
    x = ef.constant(np.random.default_rng(1).standard_normal((32, 5)).astype(np.float32))
    model(x)
    ef.saved_model.save(model, tmp_path / "mlp")
    return model, x, tmp_path / "mlp"


def test_function_under_a_tape_keeps_its_random_draw():
    f = ef.function(lambda x: ef.reduce_sum(ef.random.uniform([64]) * x))
    x = ef.ones([64])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x)
    # dy/dx is the draw that made y: a gradient that ran f again would draw other numbers
    assert abs(float(y) - float(np.sum(g.numpy()))) < 1e-3
    assert f.experimental_get_tracing_count() == 1


def test_loaded_model_gradients_match_the_original(saved):
    model, x, path = saved
    loaded = ef.saved_model.load(path)
    assert len(loaded.trainable_variables) == 4
    with ef.GradientTape() as tape:
        loss = ef.reduce_sum(ef.square(model(x)))
    want = tape.gradient(loss, model.trainable_weights)
    with ef.GradientTape() as tape:
        loss2 = ef.reduce_sum(ef.square(loaded(x)))
    by_name = {v.name: v for v in loaded.trainable_variables}
    got = tape.gradient(loss2, [by_name[v.name] for v in model.trainable_weights])
    assert abs(float(loss) - float(loss2)) < 1e-4 * (1 + abs(float(loss)))
    for w, g in zip(want, got):
        assert g is not None and np.abs(g.numpy()).max() > 0, "a gradient through a loaded model is zero"
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_loaded_model_inside_a_traced_step(saved):
    model, x, path = saved
    loaded = ef.saved_model.load(path)
    traces = []

    @ef.function
    def step(inputs):
        traces.append(1)
        with ef.GradientTape() as tape:
            tape.watch(inputs)
            loss = ef.reduce_sum(loaded(inputs))
        return loss, tape.gradient(loss, inputs)

    loss, g = step(x)
    step(x)
    assert len(traces) == 1
    w1 = model.layers[0].kernel.numpy()
    w2 = model.layers[1].kernel.numpy()
    h = np.tanh(x.numpy() @ w1 + model.layers[0].bias.numpy())
    # d sum(h @ w2 + b2) / dx = ((1 - h^2) * (1 @ w2^T)) @ w1^T
    want = ((1 - h ** 2) * w2.sum(axis=1)) @ w1.T
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-5)


def test_a_loaded_model_fine_tunes_like_the_original(saved):
    model, x, path = saved
    y = np.random.default_rng(2).integers(0, 3, size=32)
    tuned_layer = keras.layers.TFSMLayer(path)
    tuned = keras.Sequential([tuned_layer])
    for m in (model, tuned):
        m.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    h1 = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    h2 = tuned.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(h2.history["loss"], h1.history["loss"], rtol=1e-5)
    want = {v.name: v.numpy() for v in model.trainable_weights}
    got = {v.name: v.numpy() for v in tuned_layer.trainable_weights}
    assert want.keys() == got.keys()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)
    frozen = ef.saved_model.SavedModelLayer(ef.saved_model.load(path), trainable=False)
    assert len(frozen.trainable_weights) == 0
    with pytest.raises(ef.Error, match="nope"):
        keras.layers.TFSMLayer(path, call_endpoint="nope")
