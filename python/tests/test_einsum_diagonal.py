"""ef.einsum with a label repeated within one input term (a diagonal), as TF and NumPy read it:
values against np.einsum, implicit output, ellipses, gradients, and ef.function."""
import numpy as np
import pytest

import eagerflow as ef

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("equation,shapes", [
    ("bxby->bxy", [(3, 4, 3, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),                 # implicit output: the trace
    ("iij->ji", [(3, 3, 2)]),
    ("...ii->...i", [(2, 4, 4)]),
    ("ij,jj->i", [(2, 3), (3, 3)]),
    ("iii->i", [(3, 3, 3)]),
    ("aba,bc", [(2, 3, 2), (3, 4)]),  # implicit: sorted labels seen once
])
def test_matches_numpy(equation, shapes):
    operands = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    got = ef.einsum(equation, *operands)
    want = np.einsum(equation, *operands)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ef.linalg.einsum(equation, *operands).numpy(), want, rtol=1e-5, atol=1e-5)


def test_distinct_labels_still_use_the_op():
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    b = RNG.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(ef.einsum("ij,jk->ik", a, b).numpy(), a @ b, rtol=1e-5)


def test_gradient_of_a_trace_is_the_identity():
    x = ef.Variable(RNG.standard_normal((3, 3)).astype(np.float32))
    with ef.GradientTape() as tape:
        t = ef.einsum("ii", x)
    np.testing.assert_allclose(tape.gradient(t, x).numpy(), np.eye(3))


def test_traced_equals_eager():
    x = RNG.standard_normal((3, 4, 3, 5)).astype(np.float32)
    f = ef.function(lambda v: ef.einsum("bxby->bxy", v))
    np.testing.assert_allclose(f(ef.constant(x)).numpy(), np.einsum("bxby->bxy", x), rtol=1e-6)


def test_unequal_diagonal_dimensions_are_an_error():
    with pytest.raises((ValueError, ef.errors.InvalidArgumentError)):
        ef.einsum("ii->i", np.ones((2, 3), np.float32))
