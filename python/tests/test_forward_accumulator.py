"""ef.autodiff.ForwardAccumulator (tf.autodiff's): Jacobian-vector products against closed forms
in NumPy, nested targets, variables as primals, unconnected targets, Hessian-vector products
(forward over backward) and backward over forward, and the same inside ef.function."""
import numpy as np
import pytest

import eagerflow as ef

X = np.array([1.0, 2.0], np.float32)
T = np.array([1.0, -1.0], np.float32)


def f_np_grad(x):
    # f(x) = sum(x^3 sin x): f' = 3x^2 sin x + x^3 cos x, f'' = 6x sin x + 6x^2 cos x - x^3 sin x.
    return 3 * x ** 2 * np.sin(x) + x ** 3 * np.cos(x)


def f_np_second(x):
    return 6 * x * np.sin(x) + 6 * x ** 2 * np.cos(x) - x ** 3 * np.sin(x)


def test_jvp_of_elementwise_and_reduction():
    v = ef.Variable([1.0, 2.0])
    with ef.autodiff.ForwardAccumulator(v, ef.constant([1.0, 0.0])) as acc:
        y = v * v
        z = ef.reduce_sum(v ** 3.0)
    np.testing.assert_allclose(acc.jvp(y).numpy(), [2.0, 0.0])
    np.testing.assert_allclose(acc.jvp(z).numpy(), 3.0)
    nested = acc.jvp([y, {"a": z}])
    assert isinstance(nested, list) and set(nested[1]) == {"a"}
    np.testing.assert_allclose(nested[1]["a"].numpy(), 3.0)


def test_matmul_against_a_kernel_direction():
    x = ef.constant([[2.0, 3.0], [1.0, 4.0]])
    kernel = ef.Variable([[0.5, -1.0], [2.0, 1.5]])
    direction = np.array([[1.0, 0.0], [0.0, 0.0]], np.float32)
    with ef.autodiff.ForwardAccumulator(primals=kernel, tangents=ef.constant(direction)) as acc:
        y = x @ kernel
    np.testing.assert_allclose(acc.jvp(y).numpy(), x.numpy() @ direction)


def test_hessian_vector_product_forward_over_backward():
    x = ef.constant(X)
    with ef.autodiff.ForwardAccumulator(x, ef.constant(T)) as acc:
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(x ** 3 * ef.sin(x))
        g = tape.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), f_np_grad(X), rtol=1e-5)
    np.testing.assert_allclose(acc.jvp(g).numpy(), f_np_second(X) * T, rtol=1e-5)


def test_backward_over_forward():
    x = ef.constant(X)
    with ef.GradientTape() as tape:
        tape.watch(x)
        with ef.autodiff.ForwardAccumulator(x, ef.constant(T)) as acc:
            y = ef.reduce_sum(x ** 3 * ef.sin(x))
        jvp = acc.jvp(y)
    np.testing.assert_allclose(jvp.numpy(), np.sum(f_np_grad(X) * T), rtol=1e-5)
    np.testing.assert_allclose(tape.gradient(jvp, x).numpy(), f_np_second(X) * T, rtol=1e-5)


def test_unconnected_targets_and_the_primal_itself():
    x = ef.constant(X)
    c = ef.constant(1.0)
    with ef.autodiff.ForwardAccumulator(x, ef.constant(T)) as acc:
        w = c * 2.0
    assert acc.jvp(w) is None
    np.testing.assert_array_equal(acc.jvp(w, unconnected_gradients="zero").numpy(), 0.0)
    np.testing.assert_array_equal(acc.jvp(x).numpy(), T)
    with pytest.raises(ValueError):
        acc.jvp(w, unconnected_gradients="maybe")


def test_tangent_must_match_its_primal():
    with pytest.raises(ValueError):
        ef.autodiff.ForwardAccumulator(ef.constant(X), ef.constant([1.0, 2.0, 3.0]))
    with pytest.raises((ValueError, TypeError)):
        ef.autodiff.ForwardAccumulator([ef.constant(X)], ef.constant(T))  # structures differ


def test_inside_function_equals_closed_form_and_traces_once():
    @ef.function
    def jvp(x, t):
        with ef.autodiff.ForwardAccumulator(x, t) as acc:
            y = ef.sin(x) * x
        return acc.jvp(y)
    x = np.array([0.5, 1.0], np.float32)
    t = np.array([1.0, 2.0], np.float32)
    want = (np.cos(x) * x + np.sin(x)) * t
    for _ in range(2):
        np.testing.assert_allclose(jvp(ef.constant(x), ef.constant(t)).numpy(), want, rtol=1e-5)
    assert jvp.experimental_get_tracing_count() == 1


def test_namespace():
    assert ef.autodiff.GradientTape is ef.GradientTape
