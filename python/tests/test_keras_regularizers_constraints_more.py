"""keras.regularizers.OrthogonalRegularizer and keras.constraints.serialize / deserialize."""
import numpy as np
import pytest

import eagerflow as ef

R = ef.keras.regularizers
C = ef.keras.constraints
W = np.array([[1., 2., 0.5], [-1., 0.3, 2.], [0., 1., 1.], [2., -2., 0.1]], np.float32)


def _orthogonal_penalty(w, factor, mode):
    m = w if mode == "rows" else w.T
    m = m / np.linalg.norm(m, axis=1, keepdims=True)
    p = np.abs(m @ m.T)
    n = p.shape[0]
    return factor * 0.5 * (p.sum() - np.trace(p)) / (n * (n - 1) / 2)


@pytest.mark.parametrize("factor,mode,keras_value", [(0.01, "rows", 0.004599541891366243),
                                                     (0.5, "columns", 0.14832144975662231)])
def test_orthogonal_regularizer_matches_keras(factor, mode, keras_value):
    got = float(R.OrthogonalRegularizer(factor, mode)(W))
    np.testing.assert_allclose(got, _orthogonal_penalty(W, factor, mode), rtol=1e-5)
    np.testing.assert_allclose(got, keras_value, rtol=1e-5)  # recorded from keras 3.15.1


def test_orthogonal_regularizer_zero_on_orthogonal_rows_and_errors():
    assert abs(float(R.OrthogonalRegularizer(1.0)(np.eye(3, dtype=np.float32)))) < 1e-7
    with pytest.raises(ValueError, match="rank 2"):
        R.OrthogonalRegularizer()(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="mode"):
        R.OrthogonalRegularizer(mode="diagonal")
    with pytest.raises(ValueError):
        R.OrthogonalRegularizer(factor=-1.0)


def test_orthogonal_regularizer_names_and_round_trip():
    assert R.orthogonal_regularizer is R.OrthogonalRegularizer
    assert type(R.get("orthogonal_regularizer")) is R.OrthogonalRegularizer
    r = R.OrthogonalRegularizer(0.2, "columns")
    s = R.serialize(r)
    assert s == {"module": "keras.regularizers", "class_name": "OrthogonalRegularizer",
                 "config": {"factor": 0.2, "mode": "columns"}, "registered_name": None}
    back = R.deserialize(s)
    assert back.get_config() == r.get_config()
    assert type(R.get(s)) is R.OrthogonalRegularizer
    assert R.deserialize({"class_name": "L2", "config": {"l2": 0.1}}).l2 == 0.1  # Keras 2's form too


def test_orthogonal_regularizer_in_a_layer_fit_and_function():
    dense = ef.keras.layers.Dense(3, kernel_regularizer=R.OrthogonalRegularizer(0.1, "columns"))
    model = ef.keras.Sequential([ef.keras.Input((3,)), dense])
    model(W)
    np.testing.assert_allclose(float(model.losses[0]), _orthogonal_penalty(dense.kernel.numpy(), 0.1, "columns"),
                               rtol=1e-5)
    model.compile("sgd", "mse")
    h = model.fit(W, np.zeros((4, 3), np.float32), epochs=2, verbose=0)
    assert np.isfinite(h.history["loss"]).all()
    reg = R.OrthogonalRegularizer(0.3)
    traced = ef.function(lambda w: reg(w))
    np.testing.assert_allclose(float(traced(ef.constant(W))), float(reg(W)), rtol=1e-6)
    v = ef.Variable(W)
    with ef.GradientTape() as tape:
        loss = reg(v)
    assert np.isfinite(tape.gradient(loss, v).numpy()).all()


@pytest.mark.parametrize("constraint", [C.MaxNorm(3, axis=1), C.NonNeg(), C.UnitNorm(axis=[0, 1]),
                                        C.MinMaxNorm(0.5, 2.0, 0.5, 1)])
def test_constraint_serialize_round_trip(constraint):
    s = C.serialize(constraint)
    assert s["module"] == "keras.constraints" and s["class_name"] == type(constraint).__name__
    assert s["registered_name"] is None
    back = C.deserialize(s)
    assert type(back) is type(constraint) and back.get_config() == constraint.get_config()
    np.testing.assert_allclose(back(W).numpy(), constraint(W).numpy())
    assert type(C.get(s)) is type(constraint)


def test_constraint_serialize_as_keras_and_deserialize_names():
    # recorded from keras 3.15.1
    assert C.serialize(C.MinMaxNorm()) == {"module": "keras.constraints", "class_name": "MinMaxNorm",
                                           "config": {"min_value": 0.0, "max_value": 1.0, "rate": 1.0, "axis": 0},
                                           "registered_name": None}
    assert type(C.deserialize("max_norm")) is C.MaxNorm
    assert C.deserialize({"class_name": "UnitNorm", "config": {"axis": 1}}).axis == 1
    with pytest.raises(ValueError):
        C.deserialize({"class_name": "NoSuchConstraint", "config": {}})
