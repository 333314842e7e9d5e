"""ef.keras.config and the Keras 3 names in ef.keras.mixed_precision."""
import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


@pytest.fixture(autouse=True)
def restore_policy():
    before = keras.mixed_precision.global_policy().name
    yield
    keras.mixed_precision.set_global_policy(before)


def test_set_dtype_policy_is_the_global_policy():
    keras.config.set_dtype_policy("mixed_bfloat16")
    assert keras.config.dtype_policy().name == "mixed_bfloat16"
    assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
    assert keras.mixed_precision.dtype_policy().name == "mixed_bfloat16"
    layer = keras.layers.Dense(3)
    y = layer(np.ones((2, 4), np.float32))
    assert layer.compute_dtype == "bfloat16" and layer.variable_dtype == "float32"
    assert y.dtype == ef.bfloat16
    keras.mixed_precision.set_dtype_policy("float32")
    assert keras.config.dtype_policy().name == "float32"
    assert keras.config.floatx() == "float32"


def test_set_floatx_makes_layers_in_that_dtype():
    keras.config.set_floatx("float64")
    assert keras.config.floatx() == "float64"
    layer = keras.layers.Dense(2)
    layer(np.ones((1, 3), np.float64))
    assert layer.variable_dtype == "float64"
    assert layer.weights and all(w.dtype == ef.float64 for w in layer.weights)


@pytest.mark.parametrize("bad", ["float16", "int32", "", None, 32])
def test_set_floatx_rejects_what_eagerflow_has_not(bad):
    before = keras.config.floatx()
    with pytest.raises(ValueError, match="floatx"):
        keras.config.set_floatx(bad)
    assert keras.config.floatx() == before


def test_readers():
    assert keras.config.epsilon() == pytest.approx(1e-7)
    assert keras.config.image_data_format() == "channels_last"


def test_bad_policy_name_is_a_clear_error():
    with pytest.raises(Exception, match="mixed_float64|policy"):
        keras.config.set_dtype_policy("mixed_float64")
    assert keras.config.dtype_policy().name == "float32"
