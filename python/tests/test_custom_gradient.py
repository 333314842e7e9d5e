"""ef.custom_gradient (TF) and ef.custom_vjp (JAX): eagerly, inside ef.function, with
GradientTape and ef.grad, nested, with variables, and their errors. The rules differ from the
true derivatives somewhere, so each test tells the rule from ordinary differentiation."""
import math

import numpy as np
import pytest

import eagerflow as ef


@ef.custom_gradient
def log1pexp(x):
    # TF's documentation example: the naive gradient e / (1 + e) is inf / inf at x = 100.
    e = ef.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))
    return ef.log(1 + e), grad


calls = {"rule": 0, "body": 0}


@ef.custom_gradient
def fake_square(x):
    calls["body"] += 1

    def grad(dy):
        calls["rule"] += 1
        return dy * 10.0  # x * x would give 2x
    return x * x, grad


def test_log1pexp_gradient_is_finite_where_the_naive_one_is_nan():
    x = ef.constant([0.0, 2.0, 100.0])
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = log1pexp(x)
        naive = ef.log(1 + ef.exp(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [0.5, 0.880797, 1.0], rtol=1e-5)
    assert math.isnan(tape.gradient(naive, x).numpy()[2])
    assert math.isinf(y.numpy()[2])


def test_the_rule_is_used_eagerly_and_only_when_differentiating():
    calls.update(rule=0, body=0)
    x = ef.constant([1.0, 3.0])
    np.testing.assert_allclose(fake_square(x).numpy(), [1.0, 9.0])
    assert calls == {"rule": 0, "body": 1}
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(fake_square(x) * ef.constant([1.0, 2.0]))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [10.0, 20.0])
    assert calls["rule"] == 1
    g = ef.grad(lambda z: ef.reduce_sum(fake_square(z)))(x)
    np.testing.assert_allclose(g.numpy(), [10.0, 10.0])


def test_inside_function_one_trace_and_the_rule_in_the_train_step():
    traces = []

    @ef.function
    def step(x):
        traces.append(1)
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(log1pexp(x) + fake_square(x))
        return y, tape.gradient(y, x)

    x = ef.constant([0.0, 2.0, 100.0])
    y1, g1 = step(x)
    y2, g2 = step(x)
    assert len(traces) == 1
    np.testing.assert_allclose(g1.numpy(), [10.5, 10.880797, 11.0], rtol=1e-5)
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())
    assert y1.numpy() == y2.numpy()


def test_a_tape_outside_a_traced_function_uses_the_rule():
    f = ef.function(lambda x: fake_square(x))
    x = ef.constant([1.0, 3.0])
    f(x)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(f(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [10.0, 10.0])


@ef.custom_gradient
def sin_with_square_rule(x):
    def grad(dy):
        return dy * 2.0 * x  # the derivative of x^2: its own derivative is 2
    return ef.sin(x), grad


def test_grad_of_grad_differentiates_the_rule():
    x = ef.constant([0.5, 2.0])

    def first(z):
        return ef.reduce_sum(ef.grad(lambda w: ef.reduce_sum(sin_with_square_rule(w)))(z))
    np.testing.assert_allclose(ef.grad(lambda w: ef.reduce_sum(sin_with_square_rule(w)))(x).numpy(), [1.0, 4.0])
    np.testing.assert_allclose(ef.grad(first)(x).numpy(), [2.0, 2.0])  # -sin(x) without the rule
    np.testing.assert_allclose(ef.function(ef.grad(first))(x).numpy(), [2.0, 2.0])


def test_several_inputs_and_outputs():
    @ef.custom_gradient
    def two(a, b):
        def grad(d_prod, d_sum):
            return d_prod * a + d_sum, None  # no gradient for b
        return (a * b, a + b), grad

    a, b = ef.constant([2.0]), ef.constant([5.0])
    with ef.GradientTape() as tape:
        tape.watch([a, b])
        p, s = two(a, b)
        y = ef.reduce_sum(p) + 3.0 * ef.reduce_sum(s)
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), [5.0])
    assert gb is None


def test_variables_read_inside_get_their_gradient_from_the_rule():
    w = ef.Variable([2.0, 3.0], name="scale_w")

    @ef.custom_gradient
    def scaled(x):
        def grad(dy, variables=None):
            assert [v.name for v in variables] == ["scale_w:0"]  # TF's name: the scope path, then ":0"
            return dy * w, [100.0 * dy * x]
        return x * w, grad

    x = ef.constant([1.0, 4.0])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(scaled(x))
    gx, gw = tape.gradient(y, [x, w])
    np.testing.assert_allclose(gx.numpy(), [2.0, 3.0])
    np.testing.assert_allclose(gw.numpy(), [100.0, 400.0])

    @ef.custom_gradient
    def forgets(x):
        return x * w, lambda dy: dy * w

    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(forgets(x))
    with pytest.raises(ef.Error, match="reads trainable variables \\(scale_w:0\\)"):
        tape.gradient(y, x)


def test_custom_vjp_jax_style():
    counts = {"primal": 0, "fwd": 0}

    @ef.custom_vjp
    def f(x, y):
        counts["primal"] += 1
        return ef.sin(x) * y

    def f_fwd(x, y):
        counts["fwd"] += 1
        return ef.sin(x) * y, (ef.cos(x), ef.sin(x), y, "a static residual")

    def f_bwd(res, g):
        cos_x, sin_x, y, static = res
        assert static == "a static residual"
        return (cos_x * g * y * 10.0, sin_x * g)  # 10x on x: only the rule gives it

    f.defvjp(f_fwd, f_bwd)
    x, y = ef.constant([0.5]), ef.constant([3.0])
    np.testing.assert_allclose(f(x, y).numpy(), [math.sin(0.5) * 3.0], rtol=1e-6)
    assert counts == {"primal": 1, "fwd": 0}
    gx, gy = ef.grad(lambda a, b: ef.reduce_sum(f(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx.numpy(), [math.cos(0.5) * 3.0 * 10.0], rtol=1e-5)
    np.testing.assert_allclose(gy.numpy(), [math.sin(0.5)], rtol=1e-5)
    assert counts["fwd"] == 1
    traced = ef.function(lambda a, b: ef.grad(lambda u: ef.reduce_sum(f(u, b)))(a))
    np.testing.assert_allclose(traced(x, y).numpy(), [math.cos(0.5) * 30.0], rtol=1e-5)
    np.testing.assert_allclose(traced(x, y).numpy(), [math.cos(0.5) * 30.0], rtol=1e-5)


def test_wrong_arity_and_shapes_are_errors_naming_the_function():
    @ef.custom_gradient
    def too_many(x):
        return x * 2.0, lambda dy: (dy, dy)

    @ef.custom_gradient
    def bad_shape(x):
        return x * 2.0, lambda dy: ef.reduce_sum(dy)

    x = ef.constant([1.0, 2.0, 3.0])
    for fn, words in ((too_many, ["'too_many'", "returned 2 gradients", "float32[3]"]),
                      (bad_shape, ["'bad_shape'", "float32[]", "for an input of float32[3]"])):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(fn(x))
        with pytest.raises(ef.Error) as e:
            tape.gradient(y, x)
        for w in words:
            assert w in str(e.value)

    @ef.custom_vjp
    def g(x):
        return x
    g.defvjp(lambda x: (x, ()), lambda res, dy: (dy, dy))
    with pytest.raises(ef.Error, match="returned 2 gradients"):
        ef.grad(lambda z: ef.reduce_sum(g(z)))(x)

    @ef.custom_vjp
    def no_rule(x):
        return x
    with pytest.raises(ef.Error, match="defvjp"):
        no_rule(x)

    @ef.custom_gradient
    def not_a_pair(x):
        return x
    with pytest.raises(TypeError, match="must return \\(outputs, grad_fn\\)"):
        not_a_pair(x)


def test_a_python_exception_in_the_rule_propagates():
    @ef.custom_gradient
    def broken(x):
        def grad(dy):
            raise ValueError("rule broke")
        return x * 1.0, grad

    x = ef.constant([1.0])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(broken(x))
    with pytest.raises(ValueError, match="rule broke"):
        tape.gradient(y, x)


@ef.custom_gradient
def block_gradient(x):
    return x * 1.0, lambda dy: dy * 0.0  # the identity whose rule stops gradients


class Blocker(ef.keras.layers.Layer):
    def call(self, inputs):
        return block_gradient(inputs)


def test_fit_uses_the_rule_in_its_traced_train_step():
    # fit runs with the GIL released; the rule (a Python function) takes it back. Layers before
    # the blocker get zero gradients and keep their weights; the one after trains.
    x = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = ef.keras.Sequential([ef.keras.layers.Dense(4), Blocker(), ef.keras.layers.Dense(1)])
    model.compile(ef.keras.optimizers.SGD(learning_rate=0.1), "mse")
    model(x[:2])
    before = [w.numpy().copy() for w in model.layers[0].trainable_weights]
    after_layer = model.layers[2].trainable_weights[0].numpy().copy()
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    for b, w in zip(before, model.layers[0].trainable_weights):
        np.testing.assert_array_equal(w.numpy(), b)
    assert not np.allclose(model.layers[2].trainable_weights[0].numpy(), after_layer)


def test_custom_vjp_in_a_traced_function_under_an_outer_tape():
    @ef.custom_vjp
    def double_grad(x):
        return x * 1.0
    double_grad.defvjp(lambda x: (x * 1.0, ()), lambda res, g: (2.0 * g,))
    f = ef.function(lambda x: ef.reduce_sum(double_grad(x)))
    x = ef.constant([1.0, 2.0])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 2.0])
