"""Keras 3 behaviours (issue 33): the Metric API of keras.metrics.Mean (0 before any update,
variables, the stateless API), keras.config.set_epsilon in the Python losses, keras.Variable's
names and the default name of a functional Model. Reference values were recorded from
keras 3.15 (TensorFlow backend) or are computed with NumPy here."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


def test_mean_is_zero_before_any_update_and_after_reset():
    m = keras.metrics.Mean()
    assert float(m.result()) == 0.0  # Keras: divide_no_nan, not NaN
    m.update_state([1.0, 2.0, 3.0])
    assert float(m.result()) == 2.0
    m.reset_state()
    assert float(m.result()) == 0.0
    m.update_state([1.0, 3.0], sample_weight=[3.0, 1.0])
    assert float(m.result()) == pytest.approx((1.0 * 3 + 3.0 * 1) / 4)


def test_mean_nan_values_stay_nan():
    m = keras.metrics.Mean()
    m.update_state([np.nan, 1.0])
    assert np.isnan(float(m.result()))


def test_mean_variables_as_keras():
    m = keras.metrics.Mean(name="loss")
    assert [(v.name, v.path) for v in m.variables] == [("total", "loss/total"), ("count", "loss/count")]
    assert m.dtype == "float32"
    assert keras.metrics.get("Mean").name == "mean"


def test_stateless_update_result_and_reset_leave_the_metric_alone():
    m = keras.metrics.Mean()
    m.update_state([100.0])
    state = m.stateless_update_state([np.float32(0.0), np.float32(0.0)], [4.0, 6.0])
    assert [float(v) for v in state] == [10.0, 2.0]  # keras 3.15: total 10, count 2
    assert float(m.stateless_result(state)) == 5.0
    assert [float(v) for v in m.stateless_reset_state()] == [0.0, 0.0]
    assert float(m.result()) == 100.0  # its own state did not move
    again = m.stateless_update_state(state, [2.0])
    assert float(m.stateless_result(again)) == pytest.approx(12.0 / 3)
    with pytest.raises(ValueError, match="1:1"):
        m.stateless_result([np.float32(1.0)])


def test_stateless_api_of_a_catalogue_metric():
    m = keras.metrics.MeanSquaredLogarithmicError()
    y_true, y_pred = np.array([[1.0, 2.0]], np.float32), np.array([[2.0, 2.0]], np.float32)
    state = m.stateless_update_state(m.stateless_reset_state(), y_true, y_pred)
    expected = np.mean(np.square(np.log1p(y_pred) - np.log1p(y_true)))
    assert float(m.stateless_result(state)) == pytest.approx(expected, rel=1e-5)
    assert float(m.result()) == 0.0


@pytest.fixture
def epsilon_restored():
    yield
    keras.config.set_epsilon(1e-7)


def test_set_epsilon_changes_the_python_losses(epsilon_restored):
    y_true = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
    y_pred = np.array([[0.1, 0.9], [0.6, 0.4]], np.float32)
    assert keras.config.epsilon() == pytest.approx(1e-7)
    keras.config.set_epsilon(0.1)
    assert keras.config.epsilon() == pytest.approx(0.1) and keras.backend.epsilon() == pytest.approx(0.1)
    # keras 3.15 with epsilon 0.1: MAPE [55, 220], KLD [0.10536056, 0.37219614]
    np.testing.assert_allclose(keras.losses.mean_absolute_percentage_error(y_true, y_pred), [55.0, 220.0], rtol=1e-5)
    np.testing.assert_allclose(keras.losses.kl_divergence(y_true, y_pred), [0.10536056, 0.37219614], rtol=1e-5)
    # the same from NumPy: y_true clipped to [eps, 1]
    yt = np.clip(y_true, 0.1, 1.0)
    np.testing.assert_allclose(keras.losses.kl_divergence(y_true, y_pred), np.sum(yt * np.log(yt / y_pred), -1),
                               rtol=1e-5)
    keras.config.set_epsilon(1e-7)
    np.testing.assert_allclose(keras.losses.mean_absolute_percentage_error(y_true, y_pred), [5.0e7, 2.0e8], rtol=1e-5)


def test_keras_variable_names_dtypes_and_errors():
    keras.backend.clear_session()
    v = keras.Variable(np.ones(2))
    assert (v.name, v.path, v.trainable) == ("variable", "variable", True)
    assert v.dtype == ef.float64  # a NumPy value keeps its dtype (keras 3.15)
    assert keras.Variable([1, 2]).dtype == ef.int32
    assert keras.Variable(1.0).dtype == ef.float32
    w = keras.Variable("ones", shape=(2, 3))
    assert w.name == "variable_3" and w.shape == (2, 3) and np.all(w.numpy() == 1.0)
    z = keras.Variable(keras.initializers.Zeros(), shape=(2,), name="z", trainable=False)
    assert (z.name, z.path, z.trainable) == ("z", "z", False)
    with pytest.raises(ValueError, match="`shape` argument should be specified"):
        keras.Variable("ones")
    with pytest.raises(ValueError, match="cannot contain character `/`"):
        keras.Variable(1.0, name="a/b")
    assert isinstance(v, keras.Variable)
    assert float(ef.reduce_sum(v * 2.0)) == 4.0


def test_default_model_names_as_keras_3():
    keras.backend.clear_session()
    inp = keras.Input((3,))
    out = keras.layers.Dense(2)(inp)
    assert keras.Model(inp, out).name == "functional"
    assert keras.Model(inp, out).name == "functional_1"
    assert keras.Model(inp, out, name="mine").name == "mine"
    assert keras.Sequential().name == "sequential"

    class MyNet(keras.Model):
        def call(self, x):
            return x

    assert MyNet().name == "my_net"


def test_weight_names_paths_and_get_set_weights():
    keras.backend.clear_session()
    inp = keras.Input((3,))
    dense = keras.layers.Dense(2)
    model = keras.Model(inp, keras.layers.BatchNormalization()(dense(inp)))
    assert (dense.kernel.name, dense.kernel.path) == ("kernel", "dense/kernel")
    assert [w.name for w in model.weights] == ["kernel", "bias", "gamma", "beta", "moving_mean", "moving_variance"]
    assert [w.name for w in model.trainable_weights] == ["kernel", "bias", "gamma", "beta"]
    weights = model.get_weights()
    assert [w.shape for w in weights] == [(3, 2), (2,), (2,), (2,), (2,), (2,)]
    model.set_weights([w + 1.0 for w in weights])
    np.testing.assert_allclose(dense.bias.numpy(), weights[1] + 1.0)


@pytest.mark.parametrize("make", [keras.metrics.Accuracy, keras.metrics.SparseCategoricalAccuracy,
                                  keras.metrics.CategoricalAccuracy, keras.metrics.BinaryAccuracy,
                                  keras.metrics.TopKCategoricalAccuracy, keras.metrics.SparseTopKCategoricalAccuracy])
def test_accuracies_are_zero_before_any_update_and_after_reset(make):
    m = make()
    assert float(m.result()) == 0.0  # keras 3.15: 0.0
    assert float(ef.function(m.result)()) == 0.0  # traced the same


def test_accuracy_after_updates_and_reset():
    m = keras.metrics.SparseCategoricalAccuracy()
    assert float(m([1, 0], [[0.1, 0.9], [0.2, 0.8]])) == 0.5
    m.reset_state()
    assert float(m.result()) == 0.0


def test_set_epsilon_reaches_the_loss_classes_and_compile(epsilon_restored):
    y_true = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
    y_pred = np.array([[0.0, 1.0], [0.5, 0.5]], np.float32)
    keras.config.set_epsilon(0.1)
    # keras 3.15 with epsilon 0.1
    expected = {"BinaryCrossentropy": 0.39925387, "CategoricalCrossentropy": 0.39925387, "KLDivergence": 0.26610169,
                "Poisson": 0.60387886}
    for name, value in expected.items():
        assert float(getattr(keras.losses, name)()(y_true, y_pred)) == pytest.approx(value, rel=1e-5), name
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, kernel_initializer="zeros",
                                                                    bias_initializer="zeros", activation="sigmoid")])
    zeros = np.zeros((2, 2), np.float32)
    for loss, value in (("kl_divergence", 0.53220338), ("poisson", 0.75541282),
                        ("binary_crossentropy", 0.69314718), (keras.losses.KLDivergence(), 0.53220338)):
        model.compile("sgd", loss)
        assert model.evaluate(zeros, y_true, verbose=0) == pytest.approx(value, rel=1e-5), loss
    keras.config.set_epsilon(1e-7)
    model.compile("sgd", "kl_divergence")  # the C++ loss again: 0.5 log(0.5 / 1e-7)-free terms
    expected_default = np.mean(np.sum(np.clip(y_true, 1e-7, 1) * np.log(np.clip(y_true, 1e-7, 1) / 0.5), -1))
    assert model.evaluate(zeros, y_true, verbose=0) == pytest.approx(expected_default, rel=1e-4)


def test_compile_takes_keras_metric_function_and_class_names():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, kernel_initializer="zeros")])
    model.compile("sgd", "mse", metrics=["Precision", "mean_squared_logarithmic_error", "AUC", "MeanSquaredError",
                                         "BinaryAccuracy", "kl_divergence"])
    y = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
    logs = model.evaluate(np.zeros((2, 2), np.float32), y, verbose=0, return_dict=True)
    # keras 3.15: each logged under the name given
    expected = {"loss": 0.5, "Precision": 0.0, "AUC": 0.5, "MeanSquaredError": 0.5, "BinaryAccuracy": 0.5,
                "mean_squared_logarithmic_error": np.mean(np.square(np.log1p(y)))}
    for name, value in expected.items():
        assert logs[name] == pytest.approx(value, rel=1e-5), name
    assert "kl_divergence" in logs
    with pytest.raises(ef.errors.InvalidArgumentError, match="unknown metric 'nope'"):
        model.compile("sgd", "mse", metrics=["nope"])


def test_top_k_accuracy_after_updates():
    m = keras.metrics.SparseTopKCategoricalAccuracy(k=2)
    m.update_state([2, 0], [[0.1, 0.3, 0.6], [0.1, 0.5, 0.4]])  # label 0 is last of three in the second row
    assert float(m.result()) == 0.5
