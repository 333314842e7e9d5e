"""Layer names Keras refuses (with ValueError): '/' and control characters such as NUL, from
constructors, from_config and model_from_json alike."""
import json

import pytest

import eagerflow as ef

keras = ef.keras
BAD = ["a\x00b", "\x00", "tab\there", "line\nbreak", "del\x7f", "outer/inner", "esc\x1b[31m"]


@pytest.mark.parametrize("name", BAD)
def test_constructors_refuse_bad_names(name):
    with pytest.raises(ValueError, match="invalid layer name"):
        keras.layers.Dense(2, name=name)
    with pytest.raises(ValueError, match="invalid layer name"):
        keras.Sequential([keras.layers.Dense(2)], name=name)


def test_good_names_still_work():
    for name in ["dense_1", "Dense-1.x", "é-ünicode", "with space"]:
        assert keras.layers.Dense(2, name=name).name == name


def _model_json():
    m = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(2, name="d1")], name="seq")
    return m, m.to_json()


@pytest.mark.parametrize("name", BAD)
def test_model_from_json_refuses_bad_layer_names(name):
    _, text = _model_json()
    bad = text.replace('"d1"', json.dumps(name))
    assert bad != text
    with pytest.raises(ValueError, match="invalid layer name"):
        keras.models.model_from_json(bad)
    bad_model = text.replace('"seq"', json.dumps(name))
    with pytest.raises(ValueError, match="invalid layer name"):
        keras.models.model_from_json(bad_model)


def test_from_config_refuses_bad_names():
    layer = keras.layers.Dense(2, name="ok")
    config = layer.get_config()
    config["name"] = "x\x00y"
    with pytest.raises(ValueError, match="invalid layer name"):
        keras.layers.Dense.from_config(config)
    m, _ = _model_json()
    config = m.get_config()
    config["name"] = "bad\x01"
    with pytest.raises(ValueError, match="invalid layer name"):
        keras.Sequential.from_config(config)
