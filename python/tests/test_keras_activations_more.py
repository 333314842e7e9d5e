"""keras.activations' Keras 3 additions (celu, glu, the shrinks, sparsemax, ...): Keras' values,
names, get/serialize, and use in layers, fit and ef.function."""
import inspect

import numpy as np
import pytest

import eagerflow as ef

A = ef.keras.activations
X = np.array([[-2.5, -0.7, 0.0, 0.3, 1.2, 3.0]], np.float32)

# Recorded from keras 3.15.1 (TensorFlow backend) on X.
KERAS = {
    "celu": [-0.917915, -0.503415, 0.0, 0.3, 1.2, 3.0],
    "glu": [-1.436106, -0.537967, 0.0],
    "hard_shrink": [-2.5, -0.7, 0.0, 0.0, 1.2, 3.0],
    "hard_silu": [-0.208333, -0.268333, 0.0, 0.165, 0.84, 3.0],
    "hard_tanh": [-1.0, -0.7, 0.0, 0.3, 1.0, 1.0],
    "log_sigmoid": [-2.57889, -1.103186, -0.693147, -0.554355, -0.263282, -0.048587],
    "log_softmax": [-5.770868, -3.970868, -3.270868, -2.970868, -2.070868, -0.270868],
    "soft_shrink": [-2.0, -0.2, 0.0, 0.0, 0.7, 2.5],
    "sparse_plus": [0.0, 0.0225, 0.25, 0.4225, 1.2, 3.0],
    "sparse_sigmoid": [0.0, 0.15, 0.5, 0.65, 1.0, 1.0],
    "sparsemax": [0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
    "squareplus": [0.350781, 0.709481, 1.0, 1.161187, 1.76619, 3.302776],
    "tanh_shrink": [-1.513386, -0.095632, 0.0, 0.008687, 0.366345, 2.004945],
}


@pytest.mark.parametrize("name", sorted(KERAS))
def test_values_match_keras(name):
    got = getattr(A, name)(X)
    np.testing.assert_allclose(got.numpy()[0], KERAS[name], rtol=1e-5, atol=1e-6)


def test_arguments_as_keras():
    np.testing.assert_allclose(A.celu(X, alpha=2.0).numpy()[0][:2], [-1.42699, -0.590624], rtol=1e-5)
    np.testing.assert_allclose(A.threshold(X, 0.5, -1.0).numpy()[0], [-1, -1, -1, -1, 1.2, 3.0], rtol=1e-6)
    np.testing.assert_allclose(A.hard_shrink(X, threshold=1.0).numpy()[0], [-2.5, 0, 0, 0, 1.2, 3.0], rtol=1e-6)
    np.testing.assert_allclose(A.squareplus(X, b=0).numpy()[0], np.maximum(X[0], 0), atol=1e-6)
    assert str(inspect.signature(A.threshold)) == "(x, threshold, default_value)"
    assert str(inspect.signature(A.squareplus)) == "(x, b=4)"
    assert str(inspect.signature(A.glu)) == "(x, axis=-1)"


def test_sparsemax_and_log_softmax_axis_numpy():
    x = np.array([[0.1, 0.5, 0.3], [2.0, -1.0, 1.5]], np.float32)
    # sparsemax by its definition: tau from the sorted support
    want = []
    for row in x:
        z = np.sort(row)[::-1]
        k = np.arange(1, len(z) + 1)
        support = 1 + k * z > np.cumsum(z)
        tau = (np.cumsum(z)[support][-1] - 1) / k[support][-1]
        want.append(np.maximum(row - tau, 0))
    np.testing.assert_allclose(A.sparsemax(x).numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(A.sparsemax(x).numpy().sum(-1), [1, 1], rtol=1e-6)
    ls = x - np.log(np.exp(x).sum(0, keepdims=True))
    np.testing.assert_allclose(A.log_softmax(x, axis=0).numpy(), ls, rtol=1e-5)


def test_glu_odd_axis_is_a_value_error():
    with pytest.raises(ValueError):
        A.glu(np.ones((2, 3), np.float32))


def test_get_and_serialize_by_name():
    for name in KERAS:
        assert A.get(name) is getattr(A, name)
        assert A.serialize(getattr(A, name)) == name
        assert A.deserialize(name) is getattr(A, name)
    # Keras: hard_swish is hard_silu, and serializes as "hard_silu"
    assert A.get("hard_swish") is A.hard_silu and A.serialize(A.hard_swish) == "hard_silu"
    assert A.get("threshold") is A.threshold


def test_eager_equals_traced_and_gradient():
    x = ef.constant(X)

    @ef.function
    def f(t):
        return A.celu(t) + A.soft_shrink(t) + A.log_sigmoid(t)

    eager = A.celu(x) + A.soft_shrink(x) + A.log_sigmoid(x)
    np.testing.assert_allclose(f(x).numpy(), eager.numpy(), rtol=1e-6)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(A.tanh_shrink(x))
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, np.tanh(X) ** 2, rtol=1e-5, atol=1e-6)  # d/dx (x - tanh x) = tanh^2


def test_in_layers_models_and_fit():
    ef.random.set_seed(0)
    inp = ef.keras.Input((4,))
    h = ef.keras.layers.Dense(8, activation=A.hard_silu)(inp)
    # a catalogue layer resolves the name itself
    h = ef.keras.layers.EinsumDense("ab,bc->ac", output_shape=(3,), activation="celu")(h)
    out = ef.keras.layers.Dense(1, activation=A.sparse_sigmoid)(h)
    model = ef.keras.Model(inp, out)
    model.compile(optimizer="adam", loss="mse")
    x = np.random.RandomState(0).randn(32, 4).astype(np.float32)
    y = (x.sum(1, keepdims=True) > 0).astype(np.float32)
    hist = model.fit(x, y, epochs=3, verbose=0)
    assert np.isfinite(hist.history["loss"]).all()
    einsum = [l for l in model.layers if isinstance(l, ef.keras.layers.EinsumDense)][0]
    assert einsum.get_config()["activation"] == "celu"
