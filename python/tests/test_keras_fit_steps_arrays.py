"""fit(arrays, steps_per_epoch=..., validation_steps=...): Keras 3 counts steps on arrays too."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


class _Count(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.train, self.test = 0, 0

    def on_train_batch_end(self, batch, logs=None):
        self.train += 1

    def on_test_batch_end(self, batch, logs=None):
        self.test += 1


def _model():
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    return m


def _data(n=200):
    rng = np.random.RandomState(0)
    x = rng.rand(n, 3).astype("float32")
    return x, (x @ np.array([[1.0], [-2.0], [0.5]], np.float32))


def test_steps_per_epoch_and_validation_steps_count_batches():
    x, y = _data()
    count = _Count()
    h = _model().fit(x, y, batch_size=10, epochs=3, steps_per_epoch=4, validation_data=(x[:50], y[:50]),
                     validation_steps=2, verbose=0, callbacks=[count])
    assert count.train == 12 and count.test == 6
    assert len(h.history["loss"]) == 3 and len(h.history["val_loss"]) == 3


def test_steps_per_epoch_with_validation_split_and_sample_weight():
    x, y = _data(100)
    h = _model().fit(x, y, batch_size=10, epochs=2, steps_per_epoch=3, validation_split=0.2,
                     sample_weight=np.ones(100, np.float32), verbose=0)
    assert set(h.history) == {"loss", "val_loss"}
    assert all(np.isfinite(v) for v in h.history["loss"] + h.history["val_loss"])


def test_training_with_steps_lowers_the_loss():
    x, y = _data()
    m = _model()
    before = m.evaluate(x, y, verbose=0)
    m.fit(x, y, batch_size=20, epochs=5, steps_per_epoch=10, verbose=0)
    assert m.evaluate(x, y, verbose=0) < before


def test_class_weight_with_steps_is_a_clear_error():
    x, y = _data(20)
    with pytest.raises(TypeError, match="class_weight"):
        _model().fit(x, y, steps_per_epoch=2, class_weight={0: 1.0}, verbose=0)
