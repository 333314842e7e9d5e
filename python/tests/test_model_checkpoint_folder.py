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
        ef.keras.callbacks.ModelCheckpoint(filepath=str(tmp_path / "b" / "m.weights.txt"))
    assert not os.path.exists(tmp_path / "b")


def test_save_freq_counts_batches_across_epochs(tmp_path):
    # Keras' save_freq=N: a save after every N training batches, named with the current epoch.
    import numpy as np
    m = ef.keras.Sequential([ef.keras.Input((3,)), ef.keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    saved = []

    class Spy(ef.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            saved.append(sorted(os.listdir(tmp_path / "c")) if (tmp_path / "c").exists() else [])

    cb = ef.keras.callbacks.ModelCheckpoint(filepath=str(tmp_path / "c" / "w{epoch:02d}.weights.h5"),
                                            save_weights_only=True, save_freq=3)
    x, y = np.ones((20, 3), "float32"), np.ones((20, 1), "float32")
    m.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[cb, Spy()])  # 5 batches per epoch
    assert sorted(os.listdir(tmp_path / "c")) == ["w01.weights.h5", "w02.weights.h5"]
    # Saved after batches 3, 6 (epoch 2's first) and 9: none before the third batch.
    assert saved[1] == [] and saved[2] == ["w01.weights.h5"] and saved[5] == ["w01.weights.h5", "w02.weights.h5"]
    for bad in (0, -2, "batch", True):
        with pytest.raises(ValueError):
            ef.keras.callbacks.ModelCheckpoint(filepath=str(tmp_path / "d.weights.h5"), save_weights_only=True,
                                               save_freq=bad)
