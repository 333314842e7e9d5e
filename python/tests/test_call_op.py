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
    by_name = {v.path: v for v in loaded.trainable_variables}
    got = tape.gradient(loss2, [by_name[v.path] for v in model.trainable_weights])
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
    want = {v.path: v.numpy() for v in model.trainable_weights}
    got = {v.path: v.numpy() for v in tuned_layer.trainable_weights}
    assert want.keys() == got.keys()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)
    frozen = ef.saved_model.SavedModelLayer(ef.saved_model.load(path), trainable=False)
    assert len(frozen.trainable_weights) == 0
    with pytest.raises(ef.Error, match="nope"):
        keras.layers.TFSMLayer(path, call_endpoint="nope")


def test_while_loop_gradient_inside_a_function():
    # v <- tanh(v @ w) n times, differentiated in the trace; checked against numpy's chain rule
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((2, 3)).astype(np.float32) * 0.5
    w0 = rng.standard_normal((3, 3)).astype(np.float32) * 0.5
    traces = []

    @ef.function
    def f(x, w, n):
        traces.append(1)
        with ef.GradientTape() as tape:
            tape.watch(x)
            tape.watch(w)
            v, _ = ef.while_loop(lambda v, i: i < n, lambda v, i: (ef.tanh(ef.matmul(v, w)), i + 1),
                                 [x, ef.constant(0, dtype=ef.int64)])
            y = ef.reduce_sum(v)
        return (y,) + tuple(tape.gradient(y, [x, w]))

    for n in (1, 3):
        y, gx, gw = f(ef.constant(x0), ef.constant(w0), ef.constant(n, dtype=ef.int64))
        vs = [x0]
        for _ in range(n):
            vs.append(np.tanh(vs[-1] @ w0))
        g = np.ones_like(vs[-1])
        want_w = np.zeros_like(w0)
        for k in range(n, 0, -1):
            pre = g * (1 - vs[k] ** 2)
            want_w += vs[k - 1].T @ pre
            g = pre @ w0.T
        np.testing.assert_allclose(float(y), vs[-1].sum(), rtol=1e-5)
        np.testing.assert_allclose(gx.numpy(), g, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gw.numpy(), want_w, rtol=1e-4, atol=1e-5)
    assert len(traces) == 1


def test_cond_gradient_uses_the_draw_of_the_branch():
    @ef.function
    def f(x, p):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.cond(p, lambda: ef.reduce_sum(ef.random.uniform([128]) * x), lambda: ef.reduce_sum(x * 2.0))
        return y, tape.gradient(y, x)

    y, g = f(ef.ones([128]), ef.constant(True))
    assert abs(float(y) - float(np.sum(g.numpy()))) < 1e-3
    y, g = f(ef.ones([128]), ef.constant(False))
    np.testing.assert_allclose(g.numpy(), np.full(128, 2.0, np.float32))


def test_a_concrete_function_is_one_differentiable_call():
    f = ef.function(lambda x: ef.reduce_sum(ef.sin(x) * x))
    cf = f.get_concrete_function(ef.TensorSpec([None], ef.float32))
    x = ef.constant(np.array([0.5, 1.0, 2.0], np.float32))
    g = ef.grad(lambda z: cf(z))(x)  # one result: a tensor, as TF's
    xs = x.numpy()
    np.testing.assert_allclose(g.numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-5)

    @ef.function
    def outer(z):
        with ef.GradientTape() as tape:
            tape.watch(z)
            y = cf(z) * 3.0
        return tape.gradient(y, z)

    np.testing.assert_allclose(outer(x).numpy(), 3 * (np.cos(xs) * xs + np.sin(xs)), rtol=1e-5)
    assert f.experimental_get_tracing_count() == 1


def test_a_function_called_inside_another_is_one_call_node_traced_once():
    runs = []

    @ef.function
    def inner(x):
        runs.append(1)
        return x * 2.0

    @ef.function
    def outer(x):
        return inner(x) + 1.0

    @ef.function
    def other(x):
        return inner(x) * inner(x)

    x = ef.constant(np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(outer(x).numpy(), [3.0, 5.0])
    np.testing.assert_allclose(other(x).numpy(), [4.0, 16.0])
    np.testing.assert_allclose(inner(x).numpy(), [2.0, 4.0])  # the trace made inside outer
    assert len(runs) == 1 and inner.experimental_get_tracing_count() == 1
    assert "call" in outer.get_concrete_function(x).traced_graph

    # A closure over a value of the outer trace becomes an input of the call.
    @ef.function
    def closure(x):
        y = x * 3.0
        return ef.function(lambda z: z + y)(x)

    np.testing.assert_allclose(closure(x).numpy(), [4.0, 8.0])

    # Recursion with a Python condition on a static argument inlines.
    @ef.function
    def power(x, n):
        return x if n == 0 else power(x * 2.0, n - 1)

    np.testing.assert_allclose(power(x, 3).numpy(), [8.0, 16.0])


def test_a_model_around_a_loaded_model_exports_to_onnx(saved, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    model, x, path = saved
    wrapped = keras.Sequential([keras.layers.TFSMLayer(path), keras.layers.Dense(2)])
    want = wrapped(x).numpy()
    ef.onnx.export_model(wrapped, tmp_path / "wrapped.onnx")
    sess = ort.InferenceSession(str(tmp_path / "wrapped.onnx"), providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
