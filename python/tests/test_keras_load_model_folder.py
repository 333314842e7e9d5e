"""keras.models.load_model on a saved-model folder (what model.save("folder") writes): Keras 3's
ValueError pointing at TFSMLayer, which does load it."""
import os

import numpy as np
import pytest

import eagerflow as ef


def test_load_model_of_a_saved_model_folder_is_keras3s_value_error(tmp_path):
    model = ef.keras.Sequential([ef.keras.Input((2,)), ef.keras.layers.Dense(1)])
    folder = os.path.join(tmp_path, "my_model")
    model.save(folder)
    with pytest.raises(ValueError, match="TFSMLayer"):
        ef.keras.models.load_model(folder)
    layer = ef.keras.layers.TFSMLayer(folder, call_endpoint="serving_default")
    x = np.array([[1.0, -2.0]], np.float32)
    np.testing.assert_allclose(np.asarray(layer(x)), model.predict(x, verbose=0), rtol=1e-6)


def test_load_model_of_a_keras_file_still_loads(tmp_path):
    model = ef.keras.Sequential([ef.keras.Input((2,)), ef.keras.layers.Dense(1)])
    path = os.path.join(tmp_path, "m.keras")
    model.save(path)
    x = np.array([[0.5, 1.0]], np.float32)
    np.testing.assert_allclose(ef.keras.models.load_model(path).predict(x, verbose=0), model.predict(x, verbose=0))
