"""A NumPy array on the left of an operator with a tensor or variable gives a tensor, as TF's
(__array_priority__ = 100): the result is recorded by tapes and works inside ef.function."""
import operator

import numpy as np
import pytest

import eagerflow as ef

A = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
B = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv, operator.matmul,
                                operator.pow, operator.lt, operator.ge])
@pytest.mark.parametrize("make", [ef.constant, ef.Variable])
def test_result_is_a_tensor_with_numpy_values(op, make):
    right = make(np.abs(B) + 0.5)
    out = op(A, right)
    assert isinstance(out, ef.Tensor)
    np.testing.assert_allclose(out.numpy(), op(A, np.abs(B) + 0.5), rtol=1e-6)


def test_gradient_flows_through_a_left_numpy_operand():
    w = ef.Variable(B)
    with ef.GradientTape() as tape:
        y = ef.reduce_sum((A @ w) * 2.0 + A * w)
    # d/dw sum(A @ w) = A^T 1, and d/dw sum(A * w) = A.
    want = 2.0 * A.T @ np.ones((2, 2), np.float32) + A
    np.testing.assert_allclose(tape.gradient(y, w).numpy(), want, rtol=1e-6)


def test_inside_function():
    w = ef.Variable(B)
    f = ef.function(lambda: A @ w + A)
    np.testing.assert_allclose(f().numpy(), A @ B + A, rtol=1e-6)
