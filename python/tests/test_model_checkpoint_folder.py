"""keras.callbacks.ModelCheckpoint makes its file's folder, as Keras does."""
import os

import numpy as np
import pytest

import eagerflow as ef


def _model():
    model = ef.keras.Sequential([ef.keras.Input(shape=(3,)), ef.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_weights_saved_into_a_new_folder(tmp_path):
    path = tmp_path / "run_1" / "cp.weights.h5"
    cb = ef.keras.callbacks.ModelCheckpoint(filepath=str(path), save_weights_only=True, verbose=0)
    model = _model()
    x, y = np.ones([8, 3], np.float32), np.ones([8, 1], np.float32)
    model.fit(x, y, epochs=1, verbose=0, callbacks=[cb])
    assert path.exists()
    fresh = _model()
    fresh.load_weights(str(path))
    np.testing.assert_allclose(fresh.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)


def test_pathlike_filepath(tmp_path):
    ef.keras.callbacks.ModelCheckpoint(filepath=tmp_path / "a" / "m.keras")
    assert (tmp_path / "a").is_dir()


def test_a_bad_filepath_makes_no_folder(tmp_path):
    with pytest.raises(ValueError):
        ef.keras.callbacks.ModelCheckpoint(filepath=str(tmp_path / "b" / "m.weights.h5"))
    assert not os.path.exists(tmp_path / "b")


def test_batch_count_save_freq_is_refused_clearly(tmp_path):
    with pytest.raises(NotImplementedError, match="save_freq"):
        ef.keras.callbacks.ModelCheckpoint(filepath=str(tmp_path / "c" / "w.weights.h5"), save_weights_only=True,
                                           save_freq=5)
