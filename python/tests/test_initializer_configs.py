"""A layer's initializers in its config, as Keras 3 writes them: get_config names them, from_config
and clone_model make the same kind of weights (they used to come back as the defaults), a
keras.initializers object keeps its class and seed, and a function of your own is left out."""
import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

L = keras.layers


def _init_config(layer, key):
    return layer.get_config()[key]


def test_default_and_named_initializers_are_in_the_config():
    config = L.Dense(3).get_config()
    assert config["kernel_initializer"] == {"module": "keras.initializers", "class_name": "GlorotUniform",
                                            "config": {"seed": None}, "registered_name": None}
    assert config["bias_initializer"]["class_name"] == "Zeros"
    assert _init_config(L.Conv2D(2, 3, kernel_initializer="he_normal"), "kernel_initializer")["class_name"] == "HeNormal"
    seeded = _init_config(L.Dense(2, kernel_initializer=keras.initializers.HeUniform(seed=5)), "kernel_initializer")
    assert seeded["class_name"] == "HeUniform" and seeded["config"]["seed"] == 5
    constant = _init_config(L.Dense(2, bias_initializer=keras.initializers.Constant(0.5)), "bias_initializer")
    assert constant["class_name"] == "Constant" and constant["config"]["value"] == 0.5
    own = L.Dense(2, kernel_initializer=lambda shape, dtype=None: np.ones(shape, np.float32))
    assert "kernel_initializer" not in own.get_config()  # no Keras name: the default comes back


def test_clone_model_and_from_config_keep_the_initializers():
    model = keras.Sequential([keras.Input((2,)), L.Dense(3, kernel_initializer="zeros", bias_initializer="ones")])
    clone = keras.models.clone_model(model)
    np.testing.assert_array_equal(clone.weights[0].numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(clone.weights[1].numpy(), np.ones(3))
    seeded = L.Dense(4, kernel_initializer=keras.initializers.GlorotNormal(seed=11))
    seeded.build((None, 5))
    again = L.Dense.from_config(seeded.get_config())
    again.build((None, 5))
    np.testing.assert_array_equal(again.kernel.numpy(), seeded.kernel.numpy())  # the same seeded draw


def test_keras_configs_of_initializers_are_read():
    config = {"name": "d", "units": 3,
              "kernel_initializer": {"module": "keras.initializers", "class_name": "Constant", "config": {"value": 2.0},
                                     "registered_name": None},
              "bias_initializer": "ones"}
    dense = L.Dense.from_config(config)
    dense.build((None, 2))
    np.testing.assert_array_equal(dense.kernel.numpy(), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(dense.bias.numpy(), np.ones(3))
    with pytest.raises(Exception, match="unknown initializer"):
        L.Dense.from_config({"name": "e", "units": 2, "kernel_initializer": "no_such_initializer"})


def test_saved_model_file_carries_the_initializers(tmp_path):
    model = keras.Sequential([keras.Input((2,)), L.Dense(3, bias_initializer=keras.initializers.Constant(0.25))])
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.layers[0].get_config()["bias_initializer"]["config"]["value"] == 0.25
    fresh = keras.models.clone_model(loaded)
    np.testing.assert_array_equal(fresh.weights[1].numpy(), np.full(3, 0.25))
