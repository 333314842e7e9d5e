"""model.save_weights / load_weights with Keras' HDF5 files (.weights.h5 in Keras 3's layout,
legacy .h5 read): round trips, Python layers, the optimizer's state, and the errors Keras raises."""
import numpy as np
import pytest

import eagerflow as tf

keras = tf.keras
L = keras.layers


def mlp():
    return keras.Sequential([keras.Input((4,)), L.Dense(5, activation="tanh"), L.BatchNormalization(), L.Dense(2)])


def randomize(model, seed):
    rng = np.random.default_rng(seed)
    model.set_weights([rng.uniform(0.1, 1.0, size=w.shape).astype(np.asarray(w).dtype) for w in model.get_weights()])


def assert_same_weights(a, b):
    for x, y in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_round_trip_writes_hdf5(tmp_path):
    a, b = mlp(), mlp()
    randomize(a, 1)
    path = str(tmp_path / "m.weights.h5")
    a.save_weights(path)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89HDF\r\n\x1a\n"
    b.load_weights(path)
    assert_same_weights(a, b)
    x = np.random.default_rng(0).normal(size=(3, 4)).astype("float32")
    np.testing.assert_array_equal(np.asarray(a(x)), np.asarray(b(x)))


def test_other_h5_names_are_refused_for_saving(tmp_path):
    with pytest.raises(ValueError, match=r"must end in `.weights.h5`"):
        mlp().save_weights(str(tmp_path / "m.h5"))


def test_mismatch_is_a_value_error_naming_the_layer_and_nothing_is_loaded(tmp_path):
    a = mlp()
    path = str(tmp_path / "m.weights.h5")
    a.save_weights(path)
    b = keras.Sequential([keras.Input((4,)), L.Dense(6, activation="tanh"), L.BatchNormalization(), L.Dense(2)])
    before = [np.asarray(w).copy() for w in b.get_weights()]
    with pytest.raises(ValueError, match=r"layers/dense/vars/0' has shape \[4,5\], but variable"):
        b.load_weights(path)
    for x, y in zip(before, b.get_weights()):
        np.testing.assert_array_equal(x, np.asarray(y))
    b.load_weights(path, skip_mismatch=True)  # Keras' option: what fits is loaded
    np.testing.assert_array_equal(np.asarray(b.get_weights()[-1]), np.asarray(a.get_weights()[-1]))


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        mlp().load_weights(str(tmp_path / "none.weights.h5"))


def test_damaged_file_is_an_error_not_a_crash(tmp_path):
    a = mlp()
    path = tmp_path / "m.weights.h5"
    a.save_weights(str(path))
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(0)
    errors = 0
    for i in range(50):
        bad = bytearray(data)
        for _ in range(4):
            bad[int(rng.integers(len(bad)))] ^= 1 << int(rng.integers(8))
        p = tmp_path / f"bad{i}.weights.h5"
        p.write_bytes(bytes(bad[: len(bad) if i % 2 else int(rng.integers(len(bad)))]))
        try:
            mlp().load_weights(str(p))
        except (tf.errors.OpError, ValueError):
            errors += 1
    assert errors > 0


class Scaled(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = [L.Dense(3), L.Dense(3)]
        self.proj = L.Dense(2)

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")

    def call(self, x):
        return self.proj(self.inner[1](self.inner[0](x * self.scale)))


def test_python_layers_save_their_attributes_and_lists(tmp_path):
    a = keras.Sequential([keras.Input((4,)), Scaled()])
    b = keras.Sequential([keras.Input((4,)), Scaled()])
    randomize(a, 3)
    path = str(tmp_path / "c.weights.h5")
    a.save_weights(path)
    b.load_weights(path)
    assert_same_weights(a, b)

    # Keras names a Python layer's sub-layers by attribute (lists by class): the same class with
    # other attribute names does not fit, and the error says where it looked.
    class Renamed(Scaled):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.other = self.proj
            del self.proj

        def call(self, x):
            return self.other(self.inner[1](self.inner[0](x * self.scale)))

    Renamed.__name__ = "Scaled"
    c = keras.Sequential([keras.Input((4,)), Renamed()])
    with pytest.raises(ValueError, match=r"no group 'layers/scaled/other/vars'"):
        c.load_weights(path)


def test_optimizer_state_is_saved_and_training_continues(tmp_path):
    x = np.random.default_rng(1).normal(size=(8, 4)).astype("float32")
    y = np.random.default_rng(2).normal(size=(8, 2)).astype("float32")
    a = mlp()
    a.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    a.train_on_batch(x, y)
    path = str(tmp_path / "t.weights.h5")
    a.save_weights(path)
    b = mlp()
    b.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    b.load_weights(path)
    assert int(np.asarray(b.optimizer.iterations)) == 1
    a.train_on_batch(x, y)
    b.train_on_batch(x, y)
    assert_same_weights(a, b)


def test_a_weight_without_a_place_in_keras_layout_is_an_error_not_a_silent_gap(tmp_path):
    class Hidden(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.pool = {L.Dense(2)}  # a set: Keras' saving walks lists, tuples and dicts only

        def call(self, x):
            return next(iter(self.pool))(x)

    model = keras.Sequential([keras.Input((4,)), Hidden()])
    with pytest.raises(NotImplementedError, match="no place in Keras' weights layout"):
        model.save_weights(str(tmp_path / "h.weights.h5"))
    assert not (tmp_path / "h.weights.h5").exists()
