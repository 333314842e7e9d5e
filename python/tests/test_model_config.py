"""Model.get_config / from_config / to_json, keras.models.model_from_json and clone_model for
Sequential and functional models (the config save_model writes, dtype policies included)."""
import json

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


@pytest.fixture(autouse=True)
def float32_policy():
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


def sequential():
    return keras.Sequential([keras.layers.InputLayer(shape=(4,)), keras.layers.Dense(8, activation="relu", name="hidden"),
                             keras.layers.Dense(3, name="out")], name="seq")


def functional():
    x = keras.Input(shape=(4,))
    h = keras.layers.Dense(8, activation="tanh", name="h")(x)
    y = keras.layers.Dense(2, name="y")(h)
    return keras.Model(x, y, name="fn")


def test_sequential_config_round_trips_with_fresh_weights():
    m = sequential()
    c = m.get_config()
    assert c["name"] == "seq"
    layers = [l["config"]["name"] for l in c["layers"]]
    assert layers == ["hidden", "out"]
    assert c["layers"][0]["config"]["dtype"]["config"]["name"] == "float32"
    m2 = keras.Sequential.from_config(c)
    assert isinstance(m2, keras.Sequential)
    assert [l.name for l in m2.layers] == ["hidden", "out"]
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    assert np.asarray(m2(x)).shape == (5, 3)
    # Fresh weights, not shared ones.
    assert not np.array_equal(np.asarray(m2.layers[0].kernel), np.asarray(m.layers[0].kernel))
    # Same architecture: copy the weights and the outputs agree.
    m2.set_weights(m.get_weights())
    np.testing.assert_array_equal(np.asarray(m2(x)), np.asarray(m(x)))
    # Trainable after from_config (compile and fit from Python).
    m2.compile(optimizer="adam", loss="mse")
    m2.fit(x, np.zeros((5, 3), np.float32), epochs=1, verbose=0)


def test_functional_config_round_trips():
    m = functional()
    c = m.get_config()
    m2 = keras.Model.from_config(c)
    assert isinstance(m2, keras.Model)
    x = np.ones((2, 4), np.float32)
    m2.set_weights(m.get_weights())
    np.testing.assert_array_equal(np.asarray(m2(x)), np.asarray(m(x)))


def test_to_json_and_model_from_json():
    for m in (sequential(), functional()):
        text = m.to_json()
        parsed = json.loads(text)
        assert parsed["class_name"] in ("Sequential", "Functional")
        m2 = keras.models.model_from_json(text)
        assert [l.name for l in m2.layers if l.weights] == [l.name for l in m.layers if l.weights]
        m2.set_weights(m.get_weights())
        x = np.full((3, 4), 0.5, np.float32)
        np.testing.assert_array_equal(np.asarray(m2(x)), np.asarray(m(x)))


def test_clone_model_has_the_architecture_and_new_weights():
    m = sequential()
    c = keras.models.clone_model(m)
    assert c is not m and isinstance(c, keras.Sequential)
    assert [w.shape for w in c.get_weights()] == [w.shape for w in m.get_weights()]
    assert not np.array_equal(c.get_weights()[0], m.get_weights()[0])


def test_the_mixed_policy_survives_a_config_round_trip():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    m = keras.Sequential([keras.layers.InputLayer(shape=(4,)), keras.layers.Dense(8),
                          keras.layers.Activation("softmax", dtype="float32")])
    c = m.get_config()
    keras.mixed_precision.set_global_policy("float32")
    assert [l["config"]["dtype"]["config"]["name"] for l in c["layers"]] == ["mixed_bfloat16", "float32"]
    m2 = keras.Sequential.from_config(c)
    assert m2.layers[0].dtype_policy.name == "mixed_bfloat16"
    assert m2.layers[1].dtype_policy.name == "float32"
    y = m2(np.ones((2, 4), np.float32))
    assert y.dtype == ef.float32


def test_subclassed_model_has_no_graph_config():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = keras.layers.Dense(2)

        def call(self, x):
            return self.d(x)

    net = Net()
    net(np.ones((1, 3), np.float32))
    with pytest.raises((NotImplementedError, TypeError)):
        keras.models.clone_model(net)


def test_bad_configs_are_clear_errors():
    with pytest.raises(Exception, match="NoSuchLayer"):
        keras.Sequential.from_config({"name": "x", "layers": [{"class_name": "NoSuchLayer", "config": {}}]})
    with pytest.raises(Exception):
        keras.models.model_from_json("{not json")
    with pytest.raises(Exception):
        keras.models.model_from_json(json.dumps({"class_name": "Sequential", "config": {"layers": 3}}))
