"""keras.config.backend, max_epochs / set_max_epochs (fit's epochs capped, as Keras 3.15's trainer)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import eagerflow as ef

C = ef.keras.config


def _model():
    m = ef.keras.Sequential([ef.keras.Input((2,)), ef.keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    return m


@pytest.fixture
def no_cap():
    yield
    C.set_max_epochs(None)


def test_backend_is_tensorflow():
    assert C.backend() == "tensorflow" == ef.keras.backend.backend()


def test_set_max_epochs_caps_fit(no_cap):
    assert C.max_epochs() is None
    x, y = np.ones((8, 2), np.float32), np.zeros((8, 1), np.float32)
    C.set_max_epochs(2)
    assert C.max_epochs() == 2
    with pytest.warns(UserWarning, match="Limiting epochs to 2"):
        h = _model().fit(x, y, epochs=5, verbose=0)
    assert len(h.history["loss"]) == 2
    ds = ef.data.Dataset.from_tensor_slices((x, y)).batch(4)
    with pytest.warns(UserWarning):
        h = _model().fit(ds, epochs=4, verbose=0)
    assert len(h.history["loss"]) == 2
    h = _model().fit(x, y, epochs=1, verbose=0)  # under the cap: unchanged
    assert len(h.history["loss"]) == 1
    C.set_max_epochs(None)
    h = _model().fit(x, y, epochs=3, verbose=0)
    assert len(h.history["loss"]) == 3


def test_keras_max_epochs_environment_variable():
    code = "import eagerflow as ef; print(ef.keras.config.max_epochs())"
    root = os.path.dirname(os.path.dirname(os.path.abspath(ef.__file__)))
    env = dict(os.environ, KERAS_MAX_EPOCHS="3", PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"
