"""A variable assigned in one branch of a tensor `if` and read by nothing after it is not an
output of the cond (TF's AutoGraph liveness): its shape need not be static."""
import numpy as np
import pytest

import eagerflow as ef


def test_loop_local_value_after_a_break_guard():
    # `part` has a dynamic shape and lives only in the rest of the body after `if ...: break`.
    ds = ef.data.Dataset.range(9).batch(4)

    @ef.function
    def total(iterator):
        s = ef.constant(0, ef.int64)
        for _ in ef.range(5):
            optional = iterator.get_next_as_optional()
            if not optional.has_value():
                break
            part = optional.get_value()
            s += ef.reduce_sum(part)
        return s

    assert int(total(iter(ds))) == sum(range(9))


def test_branch_local_with_dynamic_shape():
    @ef.function(input_signature=[ef.TensorSpec([None], ef.float32)])
    def f(x):
        y = ef.constant(0.0)
        if ef.reduce_sum(x) > 0:
            tmp = x * 2.0  # dynamic shape, defined in this branch only, not read after the if
            y = ef.reduce_sum(tmp)
        return y

    np.testing.assert_allclose(f(ef.constant([1.0, 2.0])).numpy(), 6.0)
    np.testing.assert_allclose(f(ef.constant([-1.0, -2.0, -3.0])).numpy(), 0.0)


def test_a_variable_read_after_the_if_is_still_required_in_both_branches():
    @ef.function(input_signature=[ef.TensorSpec([None], ef.float32)])
    def f(x):
        if ef.reduce_sum(x) > 0:
            tmp = x * 2.0
        return tmp

    with pytest.raises(ValueError, match="tmp"):
        f(ef.constant([1.0]))


def test_loop_carried_value_read_before_its_assignment_stays_an_output():
    @ef.function
    def f(n):
        prev = ef.constant(0)
        acc = ef.constant(0)
        for i in ef.range(n):
            if i > 0:
                acc += prev  # reads last iteration's prev
            prev = i
        return acc

    assert int(f(ef.constant(5))) == sum(range(4))


def test_a_dropped_name_read_by_a_closure_stays_an_output():
    @ef.function
    def f(x):
        v = ef.constant(0.0)
        get = lambda: v  # noqa: E731 - reads v after the if
        if x > 0:
            v = x + 1.0
        return get()

    np.testing.assert_allclose(f(ef.constant(2.0)).numpy(), 3.0)
    np.testing.assert_allclose(f(ef.constant(-2.0)).numpy(), 0.0)


def test_eager_result_equals_traced():
    def g(x):
        out = ef.constant(0.0)
        if ef.reduce_max(x) > 1.0:
            scaled = x / ef.reduce_max(x)
            out = ef.reduce_sum(scaled)
        return out

    for v in ([0.5, 3.0, 1.5], [0.1, 0.2]):
        x = ef.constant(v)
        np.testing.assert_allclose(ef.function(g)(x).numpy(), g(x).numpy(), rtol=1e-6)
