"""Symbolic tensors misused raise TF's Python classes (and keep eagerflow's)."""
import numpy as np
import pytest

import eagerflow as ef


def test_numpy_of_a_leaked_tensor_is_an_attribute_error():
    leaked = []

    @ef.function
    def f(a):
        leaked.append(a + 1)
        return a + 2

    np.testing.assert_equal(f(ef.constant(1)).numpy(), 3)
    with pytest.raises(AttributeError, match="symbolic"):
        leaked[0].numpy()
    with pytest.raises(ef.errors.FailedPreconditionError):
        leaked[0].numpy()


def test_numpy_inside_a_trace_is_an_attribute_error():
    seen = []

    @ef.function
    def f(a):
        try:
            a.numpy()
        except AttributeError as e:
            seen.append(type(e))
        return a * 2

    np.testing.assert_equal(f(ef.constant(4)).numpy(), 8)
    assert len(seen) == 1 and issubclass(seen[0], ef.errors.FailedPreconditionError)


def test_numpy_of_an_eager_tensor_is_unchanged():
    np.testing.assert_array_equal(ef.constant([1.5, 2.0]).numpy(), np.array([1.5, 2.0], np.float32))


def test_a_tensor_leaked_into_another_trace_is_a_type_error():
    leaked = []

    @ef.function
    def make(a):
        leaked.append(a + 1)
        return a

    make(ef.constant(1))

    @ef.function
    def use(b):
        return b + leaked[0]

    with pytest.raises(TypeError, match="another trace"):
        use(ef.constant(2))
    with pytest.raises(ef.errors.InvalidArgumentError):
        use(ef.constant(3))


def test_a_variable_on_a_later_trace_is_a_value_error():
    @ef.function
    def f(x):
        v = ef.Variable(1.0)
        return v + x

    np.testing.assert_allclose(f(1.0).numpy(), 2.0)
    with pytest.raises(ValueError, match="later trace"):
        f(ef.constant([1.0, 2.0]))


def test_other_trace_errors_keep_their_class():
    @ef.function
    def f(x):
        return ef.reshape(x, [7])

    with pytest.raises(ef.errors.InvalidArgumentError) as info:
        f(ef.constant([1.0, 2.0]))
    assert not isinstance(info.value, TypeError)
