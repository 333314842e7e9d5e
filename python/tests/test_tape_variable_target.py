"""tape.gradient with a variable as (one of) the target(s), as TF's: d v / d v is ones (or that
target's output gradient), no other source is reached through it, and tensor targets beside it
keep their gradients."""
import numpy as np

import eagerflow as ef


def _values(grads):
    return [None if g is None else np.asarray(g.numpy()) for g in grads]


def test_variable_target_against_itself_and_others():
    x = ef.constant(1.0)
    v0 = ef.Variable([2.0, 1.0])
    v1 = ef.Variable(2.0)
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        result = v0 if float(x) > 0.0 else v1 ** 2
    np.testing.assert_array_equal(tape.gradient(result, v0).numpy(), [1.0, 1.0])
    assert tape.gradient(result, [v1, x]) == [None, None]
    got = tape.gradient(result, {"a": v0, "b": v1})
    np.testing.assert_array_equal(got["a"].numpy(), [1.0, 1.0])
    assert got["b"] is None


def test_mixed_targets_add_and_unconnected_zero():
    x = ef.constant(1.0)
    v0 = ef.Variable([2.0, 1.0])
    v1 = ef.Variable(2.0)
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = v1 * 3.0
        z = v0 * v0
    g = _values(tape.gradient([v0, y], [v0, v1, x], unconnected_gradients="zero"))
    np.testing.assert_array_equal(g[0], [1.0, 1.0])
    assert g[1] == 3.0 and g[2] == 0.0
    # Output gradients weight each target: v0's own [2, 5] plus d(v0*v0) = 2 v0 = [4, 2].
    g = tape.gradient([v0, z], [v0, v1], output_gradients=[ef.constant([2.0, 5.0]), ef.constant([1.0, 1.0])])
    np.testing.assert_array_equal(g[0].numpy(), [6.0, 7.0])
    assert g[1] is None


def test_variable_target_inside_function():
    v = ef.Variable([1.0, 2.0, 3.0])

    @ef.function
    def f():
        with ef.GradientTape() as tape:
            y = ef.reduce_sum(v * 2.0)
        return tape.gradient([v, y], v)
    np.testing.assert_array_equal(f().numpy(), [3.0, 3.0, 3.0])
