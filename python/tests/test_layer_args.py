"""One declared argument list per layer (issue 30): keras.layers.Dense is the C++ class, and its
keyword arguments, get_config and from_config all come from Dense::args() in src/nn/dense.cpp."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras
L = keras.layers


def unusual_dense():
    """Every saved argument of Dense away from its default."""
    return L.Dense(3, activation="tanh", use_bias=False, kernel_initializer="he_uniform", bias_initializer="ones",
                   kernel_regularizer=keras.regularizers.L1(0.25),
                   bias_regularizer="l2", activity_regularizer=keras.regularizers.L1L2(0.125, 0.375),
                   kernel_constraint=keras.constraints.MaxNorm(1.5), bias_constraint="non_neg", name="probe",
                   trainable=False, dtype="float64")


def test_dense_is_the_cpp_class():
    assert L.Dense is ef._core.Dense


def test_every_saved_argument_round_trips_through_get_config_and_from_config():
    config = unusual_dense().get_config()
    default = L.Dense(1).get_config()
    assert list(config) == ["name", "trainable", "dtype", "activity_regularizer", "units", "activation", "use_bias",
                            "kernel_initializer", "bias_initializer", "kernel_regularizer", "bias_regularizer",
                            "kernel_constraint", "bias_constraint"]
    for key, value in config.items():
        assert default.get(key) != value, key  # the value given reached the config
    rebuilt = L.Dense.from_config(config)
    assert isinstance(rebuilt, L.Dense)
    assert rebuilt.get_config() == config
    assert rebuilt.units == 3 and rebuilt.trainable is False and rebuilt.dtype_policy.name == "float64"


def test_keywords_reach_the_cpp_layer():
    dense = L.Dense(2, kernel_initializer="ones", bias_initializer=keras.initializers.Constant(0.5))
    y = dense(np.array([[1.0, 2.0, 3.0]], np.float32))
    np.testing.assert_array_equal(dense.kernel.numpy(), np.ones((3, 2), np.float32))
    np.testing.assert_allclose(y.numpy(), [[6.5, 6.5]])
    no_bias = L.Dense(2, use_bias=False)
    no_bias(np.ones((1, 3), np.float32))
    assert [tuple(w.shape) for w in no_bias.weights] == [(3, 2)]
    positional = L.Dense(4, "relu", False)  # Keras' order: units, activation, use_bias, ...
    assert positional.get_config()["activation"] == "relu" and positional.get_config()["use_bias"] is False
    assert L.Dense(units=2, name=None).name  # None: Keras' default, a generated name


def test_unknown_or_repeated_keywords_are_type_errors_naming_them():
    with pytest.raises(TypeError, match="Unrecognized keyword arguments passed to Dense: {'kernel_initalizer': 'ones'}"):
        L.Dense(2, kernel_initalizer="ones")
    with pytest.raises(TypeError, match="multiple values for argument 'units'"):
        L.Dense(2, units=3)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'units'"):
        L.Dense(activation="relu")
    with pytest.raises(TypeError, match="at most 10 positional"):
        L.Dense(*([1] + [None] * 10))


def test_wrong_values_raise_as_keras():
    with pytest.raises(ValueError, match="units must be positive, got 0"):
        L.Dense(0)
    with pytest.raises(TypeError, match="units must be an integer"):
        L.Dense("a")
    with pytest.raises(TypeError, match="use_bias must be a boolean"):
        L.Dense(2, use_bias="yes")
    with pytest.raises(ValueError, match="dtype='float8' is not a policy"):
        L.Dense(2, dtype="float8")


def test_a_built_layers_dtype_policy_cannot_change():
    dense = L.Dense(2)
    dense.dtype_policy = "float64"  # before the first call
    dense(np.ones((1, 2), np.float64))
    dense.dtype_policy = "float64"  # unchanged
    with pytest.raises(ValueError, match="is built") as e:
        dense.dtype_policy = "float32"
    assert isinstance(e.value, ef.errors.FailedPreconditionError)
    assert dense.dtype_policy.name == "float64"


def test_input_shape_and_input_dim_are_cpp_options():
    assert L.Dense(2, input_shape=(4,))._ef_declared_input_shape == (None, 4)
    assert L.Dense(2, input_dim=7, batch_size=8)._ef_declared_input_shape == (8, 7)
    assert L.Dense(2)._ef_declared_input_shape is None
    model = keras.Sequential([L.Dense(5, input_shape=(4,)), L.Dense(2)])
    assert model.built and [tuple(w.shape) for w in model.weights] == [(4, 5), (5,), (5, 2), (2,)]


def test_dropout_is_made_from_its_declared_arguments():
    assert L.Dropout is ef._core.Dropout
    drop = L.Dropout(0.25, seed=9, name="drop", trainable=False)
    config = drop.get_config()
    assert list(config) == ["name", "trainable", "dtype", "rate", "seed"]
    assert config["rate"] == 0.25 and config["seed"] == 9 and config["trainable"] is False
    rebuilt = L.Dropout.from_config(config)
    assert rebuilt.get_config() == config
    x = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(drop(x, training=True).numpy(), rebuilt(x, training=True).numpy())
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
        L.Dropout(1.0)
    with pytest.raises(ValueError, match="seed must be non-negative"):
        L.Dropout(0.5, seed=-1)
    with pytest.raises(TypeError, match="at most 1 positional"):
        L.Dropout(0.5, (1, 8))  # Keras' noise_shape, which eagerflow does not have: never taken as the seed
    with pytest.raises(TypeError, match="Unrecognized keyword arguments passed to Dropout: {'noise_shape'"):
        L.Dropout(0.5, noise_shape=(1, 8))


def test_conv2d_is_made_from_its_declared_arguments():
    assert L.Conv2D is ef._core.Conv2D
    conv = L.Conv2D(3, 2, (2, 2), "same", None, 1, "relu", False, kernel_initializer="ones",
                    kernel_regularizer="l2", bias_constraint="non_neg", name="conv")
    config = conv.get_config()
    assert config["kernel_size"] == [2, 2] and config["strides"] == [2, 2] and config["padding"] == "same"
    assert config["activation"] == "relu" and config["use_bias"] is False
    rebuilt = L.Conv2D.from_config(config)
    assert rebuilt.get_config() == config
    y = conv(np.ones((1, 4, 4, 2), np.float32))
    np.testing.assert_array_equal(conv.kernel.numpy(), np.ones((2, 2, 2, 3), np.float32))
    assert tuple(y.shape) == (1, 2, 2, 3) and [tuple(w.shape) for w in conv.weights] == [(2, 2, 2, 3)]
    with pytest.raises(ValueError, match="channels_last"):
        L.Conv2D(2, 3, data_format="channels_first")
    with pytest.raises(ValueError, match='padding must be "valid" or "same"'):
        L.Conv2D(2, 3, padding="full")
    with pytest.raises(TypeError, match="Unrecognized keyword arguments passed to Conv2D: {'groups': 2}"):
        L.Conv2D(2, 3, groups=2)


def test_the_docstring_lists_the_declared_arguments():
    assert L.Dense.__doc__.startswith("Keras' Dense(units, activation, use_bias, kernel_initializer, bias_initializer, "
                                      "kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint, "
                                      "bias_constraint, *, name, trainable, dtype, input_shape, input_dim, batch_size)")
    assert L.Dropout.__doc__.startswith("Keras' Dropout(rate, *, seed, name,")
