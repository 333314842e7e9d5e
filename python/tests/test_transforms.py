"""ef.jvp, ef.jacfwd, ef.jacrev, ef.hessian and ef.vmap against NumPy."""
import numpy as np
import pytest

import eagerflow as ef


def rng(seed):
    return np.random.default_rng(seed)


def test_jvp_matches_the_analytic_tangent():
    x = rng(0).normal(size=(3, 2))
    v = rng(1).normal(size=(3, 2))
    y, t = ef.jvp(lambda a: ef.sin(a) * a, (x,), (v,))
    np.testing.assert_allclose(y.numpy(), np.sin(x) * x, rtol=1e-12)
    np.testing.assert_allclose(t.numpy(), (np.cos(x) * x + np.sin(x)) * v, rtol=1e-12)
    # Several outputs come back in the function's structure; a None tangent is zero.
    ys, ts = ef.jvp(lambda a, b: (a * b, ef.sum(a)), (x, x), (v, None))
    assert isinstance(ts, tuple)
    np.testing.assert_allclose(ts[0].numpy(), v * x, rtol=1e-12)
    np.testing.assert_allclose(float(ts[1].numpy()), v.sum(), rtol=1e-12)


def test_linearize_equals_jvp():
    x = rng(2).normal(size=(4,))
    y, lin = ef.linearize(lambda a: ef.exp(a) * a, x)
    v = rng(3).normal(size=(4,))
    np.testing.assert_allclose(lin(v).numpy(), (np.exp(x) * x + np.exp(x)) * v, rtol=1e-12)


def test_jacobians_have_numpy_values_and_shapes():
    a = rng(4).normal(size=(3, 4))
    x = rng(5).normal(size=(2, 3))
    f = lambda m: ef.tanh(ef.matmul(m, a))  # noqa: E731
    y = np.tanh(x @ a)
    want = np.zeros((2, 4, 2, 3))
    for i in range(2):
        for j in range(4):
            want[i, j, i, :] = (1 - y[i, j] ** 2) * a[:, j]
    jf = ef.jacfwd(f)(x)
    jr = ef.jacrev(f)(x)
    assert tuple(jf.shape) == (2, 4, 2, 3)
    np.testing.assert_allclose(jf.numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jr.numpy(), want, rtol=1e-10, atol=1e-12)
    # With respect to the second argument; the first stays whatever Python gave.
    w = rng(6).normal(size=(3,))
    j = ef.jacrev(lambda scale, b: b * b * scale, argnums=1)(2.0, w)
    np.testing.assert_allclose(j.numpy(), np.diag(4.0 * w), rtol=1e-12)


def test_hessian_of_a_quadratic_form_and_a_cubic():
    m = rng(7).normal(size=(4, 4))
    x = rng(8).normal(size=(4,))
    f = lambda a: ef.sum(a * ef.reshape(ef.matmul(ef.reshape(a, (1, 4)), m), (4,))) + ef.sum(a * a * a)  # noqa: E731
    h = ef.hessian(f)(x)
    np.testing.assert_allclose(h.numpy(), m + m.T + np.diag(6 * x), rtol=1e-10, atol=1e-12)


def test_vmap_matches_a_loop_with_axes():
    w = rng(9).normal(size=(4, 3))
    xs = rng(10).normal(size=(4, 5))  # batch on axis 1
    f = lambda x, m: ef.softmax(ef.matmul(ef.reshape(x, (1, 4)), m), -1)  # noqa: E731
    out = ef.vmap(f, in_axes=(1, None), out_axes=-1)(xs, w)
    loop = np.stack([f(xs[:, i], w).numpy() for i in range(5)], axis=-1)
    assert tuple(out.shape) == (1, 3, 5)
    np.testing.assert_allclose(out.numpy(), loop, rtol=1e-12)


def mlp_loss(w1, b1, w2, x, y):
    h = ef.relu(ef.matmul(x, w1) + b1)
    return -ef.sum(y * ef.log_softmax(ef.matmul(h, w2), -1))


def numpy_mlp_grads(w1, b1, w2, x, y):
    z = x @ w1 + b1
    h = np.maximum(z, 0)
    logits = h @ w2
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dlogits = p * y.sum(-1, keepdims=True) - y
    dw2 = h.T @ dlogits
    dz = (dlogits @ w2.T) * (z > 0)
    return x.T @ dz, dz.sum(0), dw2


def test_per_example_gradients_equal_numpy():
    r = rng(11)
    w1, b1, w2 = r.normal(size=(6, 8)), r.normal(size=(8,)), r.normal(size=(8, 3))
    xs = r.normal(size=(5, 1, 6))
    ys = np.eye(3)[[0, 2, 1, 1, 0]].reshape(5, 1, 3)
    per_example = ef.vmap(ef.grad(mlp_loss, argnums=(0, 1, 2)), in_axes=(None, None, None, 0, 0))
    g = per_example(w1, b1, w2, xs, ys)
    assert [tuple(t.shape) for t in g] == [(5, 6, 8), (5, 8), (5, 8, 3)]
    for i in range(5):
        want = numpy_mlp_grads(w1, b1, w2, xs[i], ys[i])
        for k in range(3):
            np.testing.assert_allclose(g[k].numpy()[i], want[k], rtol=1e-10, atol=1e-12)


def test_vmap_of_grad_inside_function_traces_once():
    r = rng(12)
    w1, b1, w2 = (r.normal(size=s).astype(np.float32) for s in [(6, 8), (8,), (8, 3)])
    per_example = ef.vmap(ef.grad(mlp_loss, argnums=(0, 2)), in_axes=(None, None, None, 0, 0))
    traced = ef.function(lambda x, y: per_example(w1, b1, w2, x, y))
    xs = r.normal(size=(4, 1, 6)).astype(np.float32)
    ys = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]].reshape(4, 1, 3)
    first = traced(xs, ys)
    again = traced(xs * 2, ys)
    assert traced.experimental_get_tracing_count() == 1
    eager = per_example(w1, b1, w2, xs * 2, ys)
    for k in range(2):
        np.testing.assert_allclose(again[k].numpy(), eager[k].numpy(), rtol=1e-5, atol=1e-6)
    assert tuple(first[0].shape) == (4, 6, 8)


def test_vmap_of_vmap_and_errors():
    a, b = rng(13).normal(size=(3, 2)), rng(14).normal(size=(4, 2))
    r = ef.vmap(lambda x: ef.vmap(lambda y: ef.sum(x * y))(b))(a)
    np.testing.assert_allclose(r.numpy(), a @ b.T, rtol=1e-12)
    with pytest.raises(ef.Error, match="batch sizes differ"):
        ef.vmap(lambda x, y: x + y)(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ef.Error, match="no argument is batched"):
        ef.vmap(lambda x: x, in_axes=None)(np.zeros(3))
    with pytest.raises(ef.Error, match="tangent 0"):
        ef.jvp(lambda x: x, (np.zeros(3),), (np.zeros(4),))
    # A Python exception inside the batched function reaches the caller unchanged.
    def bad(x):
        raise ValueError("from the body")
    with pytest.raises(ValueError, match="from the body"):
        ef.vmap(bad)(np.zeros((2, 2)))
