"""ef.scan (JAX's lax.scan) from Python: eager and traced, pytrees, gradients, errors."""
import collections

import numpy as np
import pytest

import eagerflow as ef


def rng(seed):
    return np.random.default_rng(seed)


def cumsum_scan(xs, reverse=False):
    return ef.scan(lambda c, x: (c + x, c + x), ef.zeros([xs.shape[1]], ef.float64), xs, reverse=reverse)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_sum_eager_and_traced(reverse):
    xs = rng(0).normal(size=(6, 3))
    want = np.cumsum(xs[::-1], axis=0)[::-1] if reverse else np.cumsum(xs, axis=0)
    traced = ef.function(lambda x: cumsum_scan(x, reverse))
    for total, ys in (cumsum_scan(ef.constant(xs), reverse), traced(ef.constant(xs))):
        np.testing.assert_allclose(ys.numpy(), want, rtol=1e-12)
        np.testing.assert_allclose(total.numpy(), want[0] if reverse else want[-1], rtol=1e-12)
    assert traced.experimental_get_tracing_count() == 1


def rnn_loss(h0, xs, w, u, b, unrolled=False):
    if unrolled:
        h, loss = h0, 0.0
        for i in range(xs.shape[0]):
            h = ef.tanh(ef.matmul(xs[i], w) + ef.matmul(h, u) + b)
            loss = loss + ef.reduce_sum(h * h)
        return loss + ef.reduce_sum(h)

    def cell(h, x):
        n = ef.tanh(ef.matmul(x, w) + ef.matmul(h, u) + b)
        return n, n

    h, hs = ef.scan(cell, h0, xs)
    return ef.reduce_sum(hs * hs) + ef.reduce_sum(h)


def rnn_args():
    r = rng(1)
    return [ef.constant(a) for a in (r.normal(size=(2, 3)), r.normal(size=(5, 2, 4)), 0.5 * r.normal(size=(4, 3)),
                                     0.5 * r.normal(size=(3, 3)), 0.1 * r.normal(size=(3,)))]


def loss_and_grads(args, unrolled=False):
    with ef.GradientTape() as tape:
        for a in args:
            tape.watch(a)
        loss = rnn_loss(*args, unrolled=unrolled)
    return [loss] + list(tape.gradient(loss, list(args)))


def test_rnn_gradients_traced_eager_unrolled_and_finite_differences():
    args = rnn_args()
    want = loss_and_grads(args, unrolled=True)
    eager = loss_and_grads(args)
    traced = ef.function(lambda *a: loss_and_grads(list(a)))(*args)
    for w, e, t in zip(want, eager, traced):
        np.testing.assert_allclose(e.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(t.numpy(), w.numpy(), rtol=1e-9, atol=1e-12)
    # Central differences on u (argument 3), in float64.
    u = args[3].numpy()
    fd = np.zeros_like(u)
    for idx in np.ndindex(*u.shape):
        p, m = u.copy(), u.copy()
        p[idx] += 1e-6
        m[idx] -= 1e-6
        fp = rnn_loss(*args[:3], ef.constant(p), args[4], unrolled=True).numpy()
        fm = rnn_loss(*args[:3], ef.constant(m), args[4], unrolled=True).numpy()
        fd[idx] = (fp - fm) / 2e-6
    np.testing.assert_allclose(traced[4].numpy(), fd, rtol=1e-6, atol=1e-8)


LSTMState = collections.namedtuple("LSTMState", ["h", "c"])


def test_pytrees_of_carries_xs_and_ys():
    r = rng(2)
    a, b = r.normal(size=(4, 2)), r.normal(size=(4, 2))

    def body(state, x):
        p = x["a"] * x["b"]
        s = state.h + p
        return LSTMState(h=s, c=state.c + 1), (p, [s, None])

    def run(a, b):
        return ef.scan(body, LSTMState(h=ef.zeros([2], ef.float64), c=ef.constant(np.int64(0))), {"b": b, "a": a})

    for carry, (p, (s, none)) in (run(ef.constant(a), ef.constant(b)), ef.function(run)(ef.constant(a), ef.constant(b))):
        assert isinstance(carry, LSTMState)
        assert none is None
        np.testing.assert_allclose(p.numpy(), a * b)
        np.testing.assert_allclose(s.numpy(), np.cumsum(a * b, axis=0))
        np.testing.assert_allclose(carry.h.numpy(), np.sum(a * b, axis=0))
        assert int(carry.c.numpy()) == 4


def test_length_without_xs_and_gradient():
    def run(x0):
        with ef.GradientTape() as tape:
            tape.watch(x0)
            c, ys = ef.scan(lambda c, _: (c * 0.5 + 1.0, c * 0.5 + 1.0), x0, None, length=5)
            total = ef.reduce_sum(ys)
        return c, ys, tape.gradient(total, x0)

    x, want, g, d = 2.0, [], 0.0, 1.0
    for _ in range(5):
        x = 0.5 * x + 1
        want.append(x)
        d *= 0.5
        g += d
    for c, ys, grad in (run(ef.constant(2.0)), ef.function(run)(ef.constant(2.0))):
        np.testing.assert_allclose(c.numpy(), x)
        np.testing.assert_allclose(ys.numpy(), want)
        np.testing.assert_allclose(grad.numpy(), g)


def test_dynamic_length_keeps_one_trace():
    w = ef.constant(rng(3).normal(size=(3, 3)) * 0.5)

    def run(xs):
        with ef.GradientTape() as tape:
            tape.watch(xs)
            h, hs = ef.scan(lambda h, x: (ef.tanh(ef.matmul(h, w) + x),) * 2, ef.zeros([2, 3], ef.float64), xs)
            loss = ef.reduce_sum(hs)
        return loss, tape.gradient(loss, xs)

    f = ef.function(run, input_signature=[ef.TensorSpec([None, 2, 3], ef.float64)])
    for n in (4, 1, 7):
        xs = ef.constant(rng(n).normal(size=(n, 2, 3)))
        got, want = f(xs), run(xs)
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-10)
        np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), rtol=1e-10)
    assert f.experimental_get_tracing_count() == 1


def test_hessian_through_scan():
    xs = ef.constant(rng(4).normal(size=(4, 3)))

    def loss(w):
        h, ys = ef.scan(lambda c, x: (ef.tanh(ef.reduce_sum(x * w) + 0.7 * c),) * 2, ef.constant(0.0, ef.float64), xs)
        return ef.reduce_sum(ys * ys) + h

    def loss_unrolled(w):
        h, total = 0.0, 0.0
        for i in range(4):
            h = ef.tanh(ef.reduce_sum(xs[i] * w) + 0.7 * h)
            total = total + h * h
        return total + h

    w = ef.constant(rng(5).normal(size=(3,)) * 0.5)
    want = ef.hessian(loss_unrolled)(w).numpy()
    np.testing.assert_allclose(ef.hessian(loss)(w).numpy(), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ef.function(ef.hessian(loss))(w).numpy(), want, rtol=1e-9, atol=1e-12)


def test_errors_name_the_problem():
    xs = ef.zeros([4, 3])
    with pytest.raises(ef.Error, match=r"scan.*keep each carry's dtype and shape"):
        ef.scan(lambda c, x: (ef.concat([c, x], 0), x), ef.zeros([3]), xs)
    with pytest.raises(ef.Error, match=r"scan.*carry's structure"):
        ef.scan(lambda c, x: ((c, c), x), ef.zeros([3]), xs)
    with pytest.raises(ef.Error, match=r"scan.*length"):
        ef.scan(lambda c, x: (c, c), ef.zeros([3]), None)
    with pytest.raises(ef.Error, match=r"scan.*leading dim"):
        ef.scan(lambda c, x: (c, c), ef.zeros([3]), (ef.zeros([4, 3]), ef.zeros([5, 3])))
    with pytest.raises(ef.Error, match=r"scan.*step 2 of 4.*matmul"):
        ef.scan(lambda c, x: (c, ef.matmul(c, ef.zeros([5, 5])) if float(x.numpy()) == 2.0 else c),
                ef.zeros([1, 3]), ef.constant(np.arange(4.0, dtype=np.float32)))
    with pytest.raises(ef.Error, match=r"scan.*tracing the body.*matmul"):
        ef.function(lambda x: ef.scan(lambda c, r: (c, ef.matmul(c, r)), ef.zeros([2, 3]), x))(ef.zeros([4, 5, 5]))
    with pytest.raises(ef.Error, match=r"scan.*pair"):
        ef.scan(lambda c, x: c, ef.zeros([3]), xs)


class CumulativeRnn(ef.keras.layers.Layer):
    """h' = tanh(x w + h u) over the time axis (axis 1) with ef.scan; returns all h."""

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], 3), initializer="glorot_uniform", name="w")
        self.u = self.add_weight(shape=(3, 3), initializer="glorot_uniform", name="u")

    def call(self, x):
        xs = ef.transpose(x, [1, 0, 2])  # time first
        h0 = ef.zeros_like(ef.matmul(xs[0], self.w))
        _, hs = ef.scan(lambda h, xt: (ef.tanh(ef.matmul(xt, self.w) + ef.matmul(h, self.u)),) * 2, h0, xs)
        return ef.transpose(hs, [1, 0, 2])


def test_saved_model_with_scan_round_trip(tmp_path):
    x = rng(6).normal(size=(2, 5, 4)).astype(np.float32)
    model = ef.keras.Sequential([CumulativeRnn()])
    want = model(x).numpy()
    ef.saved_model.save(model, tmp_path / "rnn")
    loaded = ef.saved_model.load(tmp_path / "rnn")
    np.testing.assert_allclose(loaded(ef.constant(x)).numpy(), want, rtol=1e-6, atol=1e-6)
    # By hand in NumPy, from the model's weights.
    w, u = (v.numpy() for v in model.layers[0].trainable_weights)
    h, hs = np.zeros((2, 3), np.float32), []
    for t in range(5):
        h = np.tanh(x[:, t] @ w + h @ u)
        hs.append(h)
    np.testing.assert_allclose(want, np.stack(hs, 1), rtol=1e-5, atol=1e-6)


def test_vmap_and_per_example_gradients_through_scan():
    r = rng(7)
    xs = ef.constant(r.normal(size=(3, 5, 2)))  # batch 3 of sequences of 5 rows of 2
    w = ef.constant(r.normal(size=(2,)))

    def loss(w, seq):
        h, hs = ef.scan(lambda c, x: (ef.tanh(c + ef.reduce_sum(x * w)),) * 2, ef.constant(0.0, ef.float64), seq)
        return ef.reduce_sum(hs) + h

    def loss_np(w, seq):
        c, total = 0.0, 0.0
        for x in seq:
            c = np.tanh(c + np.sum(x * w))
            total += c
        return total + c

    got = ef.vmap(loss, in_axes=(None, 0))(w, xs).numpy()
    np.testing.assert_allclose(got, [loss_np(w.numpy(), s) for s in xs.numpy()], rtol=1e-12)
    grads = ef.function(ef.vmap(ef.grad(loss), in_axes=(None, 0)))(w, xs).numpy()
    for i, s in enumerate(xs.numpy()):
        fd = np.array([(loss_np(w.numpy() + e, s) - loss_np(w.numpy() - e, s)) / 2e-6 for e in np.eye(2) * 1e-6])
        np.testing.assert_allclose(grads[i], fd, rtol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
def test_onnx_export_of_a_scan_runs_in_onnxruntime(tmp_path, reverse):
    ort = pytest.importorskip("onnxruntime")

    class Rnn(CumulativeRnn):
        def call(self, x):
            xs = ef.transpose(x, [1, 0, 2])
            h0 = ef.zeros_like(ef.matmul(xs[0], self.w))
            h, hs = ef.scan(lambda h, xt: (ef.tanh(ef.matmul(xt, self.w) + ef.matmul(h, self.u) + 0.5),) * 2, h0, xs,
                            reverse=reverse)
            return ef.transpose(hs, [1, 0, 2]) + ef.expand_dims(h, 1)

    x = rng(8).normal(size=(2, 5, 4)).astype(np.float32)
    model = ef.keras.Sequential([Rnn()])
    want = model(x).numpy()
    path = tmp_path / "rnn.onnx"
    ef.onnx.export_model(model, path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
