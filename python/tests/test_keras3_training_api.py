"""Keras 3's training APIs from issue 33: compile without a loss for a model whose train_step
computes its own, metrics in model.metrics reset each epoch, fit on pandas DataFrames/Series and
on dicts keyed by input name, metric functions in compile, optimizer.apply / build."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras
pd = pytest.importorskip("pandas")


def _data(n=48, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(n, 3).astype("float32")
    y = (x.sum(1, keepdims=True) > 1.5).astype("float32")
    return x, y


class _OwnLoss(keras.Model):
    """A model whose train_step computes its own loss and keeps its own trackers."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.batches = keras.metrics.Sum(name="batches")

    def call(self, x):
        return self.dense(x)

    @property
    def metrics(self):
        return [self.loss_tracker, self.batches]

    def train_step(self, data):
        x, y = data
        with ef.GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(self(x, training=True) - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        self.loss_tracker.update_state(loss)
        self.batches.update_state(1.0)
        return {m.name: m.result() for m in self.metrics}

    def test_step(self, data):
        x, y = data
        self.loss_tracker.update_state(ef.reduce_mean(ef.square(self(x) - y)))
        self.batches.update_state(1.0)
        return {m.name: m.result() for m in self.metrics}


def test_compile_without_loss_for_own_train_step_and_metrics_reset_each_epoch():
    x, y = _data()
    model = _OwnLoss()
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    # Each epoch's count starts again from 0 (3 batches), as Keras resets model.metrics.
    assert history.history["batches"] == [3.0, 3.0, 3.0]
    assert history.history["loss"][2] < history.history["loss"][0]
    logs = model.evaluate(x, y, batch_size=24, verbose=0, return_dict=True)
    assert logs["batches"] == 2.0  # evaluate resets too


def test_compile_without_loss_fails_in_the_default_train_step_with_keras_message():
    x, y = _data()
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam")
    with pytest.raises(ValueError, match="No loss to compute"):
        model.fit(x, y, verbose=0)


def _twin_models():
    first = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    second = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    second.set_weights(first.get_weights())
    for m in (first, second):
        m.compile(keras.optimizers.SGD(0.05), "mse")
    return first, second


def test_fit_evaluate_predict_on_pandas_as_on_arrays():
    x, y = _data()
    frame = pd.DataFrame(x.astype("float64"), columns=["a", "b", "c"])
    frame["c"] = (x[:, 2] * 100).astype("int64")  # mixed dtypes promote to one array
    labels = pd.Series(y[:, 0])
    arrays = frame.to_numpy().astype("float32")
    on_pandas, on_arrays = _twin_models()
    h1 = on_pandas.fit(frame, labels, batch_size=8, epochs=2, shuffle=False, verbose=0)
    h2 = on_arrays.fit(arrays, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-6)
    assert on_pandas.evaluate(frame, labels, verbose=0) == pytest.approx(on_arrays.evaluate(arrays, y, verbose=0))
    np.testing.assert_allclose(on_pandas.predict(frame, verbose=0), on_arrays.predict(arrays, verbose=0), rtol=1e-6)


def test_pandas_text_column_is_a_type_error():
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(TypeError, match="non-numeric"):
        model.fit(frame, np.zeros(2), verbose=0)


def _two_input_model():
    a = keras.Input(shape=(2,), name="a")
    b = keras.Input(shape=(1,), name="b")
    out = keras.layers.Dense(1)(keras.layers.Concatenate()([a, b]))
    return keras.Model([a, b], out)


def test_fit_on_dicts_keyed_by_input_name_and_pandas_columns():
    x, y = _data()
    by_list, by_dict = _two_input_model(), _two_input_model()
    by_dict.set_weights(by_list.get_weights())
    for m in (by_list, by_dict):
        m.compile(keras.optimizers.SGD(0.1), "mse")
    frame = pd.DataFrame({"p": x[:, 0], "q": x[:, 1], "r": x[:, 2]})
    h1 = by_list.fit([x[:, :2], x[:, 2:]], y, batch_size=16, shuffle=False, verbose=0)
    # Keras' usual structured-data idiom: a dict of the frame's columns by input name.
    h2 = by_dict.fit({"b": frame["r"].to_numpy()[:, None], "a": frame[["p", "q"]]}, pd.Series(y[:, 0]),
                     batch_size=16, shuffle=False, verbose=0)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-6)


def test_metric_functions_in_compile_report_under_their_names():
    x, y = _data()
    labels = y[:, 0].astype("int64")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.sparse_categorical_accuracy, "accuracy"])
    logs = model.evaluate(x, labels, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    assert logs["sparse_categorical_accuracy"] == pytest.approx(np.mean(pred.argmax(1) == labels))
    assert logs["sparse_categorical_accuracy"] == pytest.approx(logs["accuracy"])


def test_optimizer_apply_eager_and_traced_as_sgd():
    v = ef.Variable([1.0, 2.0])
    w = ef.Variable(3.0)
    opt = keras.optimizers.SGD(learning_rate=0.1)
    opt.apply([ef.constant([1.0, -1.0]), ef.constant(2.0)], [v, w])
    np.testing.assert_allclose(v.numpy(), [0.9, 2.1], rtol=1e-6)
    assert float(w.numpy()) == pytest.approx(2.8)

    @ef.function
    def step():
        with ef.GradientTape() as tape:
            loss = ef.reduce_sum(v * v)
        opt.apply(tape.gradient(loss, [v]), [v])

    step()
    step()
    np.testing.assert_allclose(v.numpy(), np.array([0.9, 2.1]) * 0.8 * 0.8, rtol=1e-6)
    assert int(opt.iterations.numpy()) == 3


def test_optimizer_build_then_apply_grads_alone():
    v = ef.Variable([1.0, 1.0])
    opt = keras.optimizers.Adam(learning_rate=0.01)
    assert not opt.built
    with pytest.raises(ValueError, match="build"):
        opt.apply([ef.constant([1.0, 1.0])])
    opt.build([v])
    assert opt.built
    opt.apply([ef.constant([1.0, -1.0])])
    # Adam's first step moves each weight by the rate against its gradient's sign.
    np.testing.assert_allclose(v.numpy(), [0.99, 1.01], rtol=1e-5)
    with pytest.raises(ValueError, match="same length"):
        opt.apply([ef.constant([1.0, 1.0])], [v, v])


def _capture_server():
    import http.server
    import threading
    received = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"], body.decode()))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, received


@pytest.mark.parametrize("as_json", [False, True])
def test_remote_monitor_posts_each_epochs_logs(as_json):
    import json
    import urllib.parse
    server, received = _capture_server()
    try:
        x, y = _data()
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        monitor = keras.callbacks.RemoteMonitor(root=f"http://127.0.0.1:{server.server_port}", path="/logs",
                                                send_as_json=as_json)
        history = model.fit(x, y, epochs=2, verbose=0, callbacks=[monitor])
    finally:
        server.shutdown()
    assert len(received) == 2
    for epoch, (path, kind, body) in enumerate(received):
        assert path == "/logs"
        sent = json.loads(body) if as_json else json.loads(urllib.parse.parse_qs(body)["data"][0])
        assert kind == ("application/json" if as_json else "application/x-www-form-urlencoded")
        assert sent["epoch"] == epoch
        assert sent["loss"] == pytest.approx(history.history["loss"][epoch])


def test_remote_monitor_unreachable_server_warns():
    import socket
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monitor = keras.callbacks.RemoteMonitor(root=f"http://127.0.0.1:{port}")
    with pytest.warns(UserWarning, match="Could not reach"):
        monitor.on_epoch_end(0, {"loss": np.float32(1.5)})
