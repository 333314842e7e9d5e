"""GradientTape.jacobian and batch_jacobian: TF's shapes (target.shape + source.shape, and per
example target.shape + source.shape[1:]), values against closed forms in NumPy, nested sources,
unconnected sources, persistent and non-persistent tapes, Hessians by nested tapes, and the same
results inside ef.function (traced once)."""
import numpy as np
import pytest

import eagerflow as ef

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3)).astype(np.float32)
XT = ef.constant(X)
W0 = RNG.standard_normal((3, 2)).astype(np.float32)


def tanh_layer_jacobian(x, w):
    """d tanh(x @ w)[b, i] / d w[k, l] = (1 - y[b, i]^2) x[b, k] [i == l]."""
    y = np.tanh(x @ w)
    return np.einsum("bi,bk,il->bikl", 1 - y ** 2, x, np.eye(w.shape[1]))


def test_elementwise_square_gives_diagonal():
    x = ef.constant([1.0, 2.0, 5.0])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    j = tape.jacobian(y, x)
    assert j.shape == (3, 3)
    np.testing.assert_allclose(j.numpy(), np.diag([2.0, 4.0, 10.0]))


def test_vector_target_against_scalar_variable():
    x = np.linspace(-3.0, 3.0, 13).astype(np.float32)
    delta = ef.Variable(0.5)
    with ef.GradientTape() as tape:
        y = ef.nn.sigmoid(x + delta)
    j = tape.jacobian(y, delta)
    s = 1 / (1 + np.exp(-(x + 0.5)))
    assert j.shape == (13,)
    np.testing.assert_allclose(j.numpy(), s * (1 - s), rtol=1e-5, atol=1e-6)


def test_matrix_target_against_matrix_variable_sums_to_gradient():
    w = ef.Variable(W0)
    with ef.GradientTape(persistent=True) as tape:
        y = ef.tanh(XT @ w)
    j = tape.jacobian(y, w)
    assert j.shape == (4, 2, 3, 2)
    np.testing.assert_allclose(j.numpy(), tanh_layer_jacobian(X, W0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ef.reduce_sum(j, axis=[0, 1]).numpy(), tape.gradient(y, w).numpy(), rtol=1e-5, atol=1e-6)


def test_nested_sources_keep_their_structure_and_unconnected_ones():
    w = ef.Variable(W0)
    other = ef.Variable(1.0)
    with ef.GradientTape(persistent=True) as tape:
        y = ef.tanh(XT @ w)
    out = tape.jacobian(y, {"w": w, "rest": [other]})
    assert set(out) == {"w", "rest"} and out["rest"] == [None]
    assert out["w"].shape == (4, 2, 3, 2)
    j_w, j_other = tape.jacobian(y, (w, other), unconnected_gradients=ef.UnconnectedGradients.ZERO)
    assert j_other.shape == (4, 2)
    np.testing.assert_array_equal(j_other.numpy(), np.zeros((4, 2), np.float32))
    with pytest.raises(ValueError):
        tape.jacobian(y, w, unconnected_gradients="sometimes")


def test_non_persistent_tape_gives_one_jacobian():
    w = ef.Variable(W0)
    with ef.GradientTape() as tape:
        y = ef.tanh(XT @ w)
    tape.jacobian(y, w)
    with pytest.raises(RuntimeError):
        tape.jacobian(y, w)
    with ef.GradientTape() as tape:
        y = ef.tanh(XT @ w)
    # TF's loop without vectorization needs a persistent tape when eager.
    with pytest.raises(RuntimeError):
        tape.jacobian(y, w, experimental_use_pfor=False)


def test_loop_and_chunks_equal_vectorized():
    w = ef.Variable(W0)
    with ef.GradientTape(persistent=True) as tape:
        y = ef.tanh(XT @ w)
    want = tanh_layer_jacobian(X, W0)
    np.testing.assert_allclose(tape.jacobian(y, w, experimental_use_pfor=False).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tape.jacobian(y, w, parallel_iterations=3).numpy(), want, rtol=1e-5, atol=1e-6)


def test_hessian_by_nested_tapes():
    # f(W) = sum((x W)^2): its gradient is 2 x^T x W, its Hessian 2 (x^T x)[k, m] [l == n].
    w = ef.Variable(W0)
    with ef.GradientTape() as outer:
        with ef.GradientTape() as inner:
            loss = ef.reduce_sum((XT @ w) ** 2)
        g = inner.gradient(loss, w)
    h = outer.jacobian(g, w)
    assert h.shape == (3, 2, 3, 2)
    want = 2 * np.einsum("km,ln->klmn", X.T @ X, np.eye(2))
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-4, atol=1e-4)


def test_batch_jacobian_per_example():
    x = ef.constant(X)
    w = ef.constant(W0)
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ef.tanh(x @ w)
    jb = tape.batch_jacobian(y, x)
    yv = np.tanh(X @ W0)
    want = np.einsum("bi,ki->bik", 1 - yv ** 2, W0)
    assert jb.shape == (4, 2, 3)
    np.testing.assert_allclose(jb.numpy(), want, rtol=1e-5, atol=1e-6)
    # The full Jacobian's (b, b) blocks are the per-example ones.
    full = tape.jacobian(y, x).numpy()
    np.testing.assert_allclose(np.einsum("bibk->bik", full), want, rtol=1e-5, atol=1e-6)


def test_batch_jacobian_higher_rank_and_unconnected():
    x = ef.constant(RNG.standard_normal((2, 3, 2)).astype(np.float32))
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ef.reshape(x * x, [2, 6, 1])
    jb = tape.batch_jacobian(y, x)
    assert jb.shape == (2, 6, 1, 3, 2)
    want = np.stack([np.diag(2 * x.numpy()[b].ravel()).reshape(6, 1, 3, 2) for b in range(2)])
    np.testing.assert_allclose(jb.numpy(), want, rtol=1e-6)
    # TF's documented behaviour: an unconnected source gives zeros, not None.
    z = ef.ones([2, 4])
    np.testing.assert_array_equal(tape.batch_jacobian(y, z).numpy(), np.zeros((2, 6, 1, 4), np.float32))


def test_batch_jacobian_needs_matching_batches():
    x = ef.constant(X)
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ef.reduce_sum(x, axis=1)
        y2 = ef.tanh(x)
    with pytest.raises(ValueError, match="first dimension"):
        tape.batch_jacobian(y, x)  # a rank-1 target
    with pytest.raises(ValueError, match="first dimension"):
        tape.batch_jacobian(y2, ef.ones([5, 3]))


def test_inside_function_equals_eager_and_traces_once():
    w = ef.Variable(W0)

    def both(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.tanh(x @ w)
        with ef.GradientTape() as tape2:
            tape2.watch(x)
            y2 = ef.tanh(x @ w)
        return tape.jacobian(y, w), tape2.batch_jacobian(y2, x)

    traced = ef.function(both)
    for _ in range(2):
        j, jb = traced(ef.constant(X))
        je, jbe = both(ef.constant(X))
        np.testing.assert_allclose(j.numpy(), je.numpy(), rtol=1e-6)
        np.testing.assert_allclose(jb.numpy(), jbe.numpy(), rtol=1e-6)
    np.testing.assert_allclose(j.numpy(), tanh_layer_jacobian(X, W0), rtol=1e-5, atol=1e-6)
    assert traced.experimental_get_tracing_count() == 1


def test_hessian_inside_function():
    w = ef.Variable(W0)

    @ef.function
    def hessian():
        with ef.GradientTape() as outer:
            with ef.GradientTape() as inner:
                loss = ef.reduce_sum((XT @ w) ** 2)
            g = inner.gradient(loss, w)
        return outer.jacobian(g, w)
    want = 2 * np.einsum("km,ln->klmn", X.T @ X, np.eye(2))
    np.testing.assert_allclose(hessian().numpy(), want, rtol=1e-4, atol=1e-4)


def test_unknown_target_size_in_a_trace_is_a_clear_error():
    # vmap needs the number of rows; TF's pfor would take a dynamic count (a known limitation).
    @ef.function(input_signature=[ef.TensorSpec([None, 3], ef.float32)])
    def f(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = x * 2.0
        return tape.jacobian(y, x)
    with pytest.raises(ValueError, match="shape must be known"):
        f(ef.ones([2, 3]))


def test_variable_target_against_itself_is_the_identity():
    v = ef.Variable([1.0, 2.0, 4.0])
    x = ef.Variable([[1.0, 2.0], [3.0, 4.0]])
    with ef.GradientTape(persistent=True) as tape:
        pass
    np.testing.assert_array_equal(tape.jacobian(v, v).numpy(), np.eye(3))
    np.testing.assert_array_equal(tape.batch_jacobian(x, x).numpy(), np.stack([np.eye(2)] * 2))
    assert tape.jacobian(v, [x]) == [None]
