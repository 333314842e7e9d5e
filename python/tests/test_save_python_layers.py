"""Whole-model files with layers written in Python (Keras' get_config / from_config and
register_keras_serializable): the loaded model predicts and keeps training as the original."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import eagerflow as ef

saving = ef.keras.saving


@saving.register_keras_serializable(package="efTest")
class ScaledDense(ef.keras.layers.Layer):
    def __init__(self, units, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.scale = scale

    def build(self, input_shape):
        self.w = self.add_weight("w", (input_shape[-1], self.units), initializer="glorot_uniform")

    def call(self, x):
        return ef.matmul(x, self.w) * self.scale

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, scale=self.scale)
        return config


class Unregistered(ef.keras.layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class NoConfig(ef.keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def call(self, x):
        return x


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6)).astype(np.float32)
    return x, (x[:, :1] - x[:, 1:2]).astype(np.float32)


def test_registered_name():
    assert saving.get_registered_name(ScaledDense) == "efTest>ScaledDense"
    assert saving.get_registered_object("efTest>ScaledDense") is ScaledDense


def test_sequential_with_a_python_layer_round_trips_and_keeps_training(tmp_path):
    x, y = data()
    model = ef.keras.Sequential([ef.keras.Input((6,)), ScaledDense(4, scale=0.5, name="sd"), ef.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = tmp_path / "m.efmodel"
    model.save(path)
    loaded = ef.keras.models.load_model(path)
    layer = loaded.get_layer("sd")
    assert isinstance(layer, ScaledDense) and layer.units == 4 and layer.scale == 0.5
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    h1 = model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    h2 = loaded.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-6)
    for a, b in zip(model.weights, loaded.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


def test_functional_with_a_python_layer(tmp_path):
    x, _ = data()
    inp = ef.keras.Input((6,))
    out = ef.keras.layers.Dense(2)(ScaledDense(3, scale=2.0)(inp))
    model = ef.keras.Model(inp, out)
    path = tmp_path / "f.keras"
    model.save(path)
    loaded = saving.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)


def test_unregistered_class_loads_with_custom_objects_in_a_fresh_process(tmp_path):
    model = ef.keras.Sequential([ef.keras.Input((3,)), Unregistered(3.0, name="u")])
    path = tmp_path / "u.efmodel"
    model.save(path)
    script = textwrap.dedent(f"""
        import numpy as np, eagerflow as ef
        try:
            ef.keras.models.load_model({str(path)!r})
        except Exception as e:
            print("ERROR", e)
        class Unregistered(ef.keras.layers.Layer):
            def __init__(self, factor=2.0, **kwargs):
                super().__init__(**kwargs)
                self.factor = factor
            def call(self, x):
                return x * self.factor
        m = ef.keras.models.load_model({str(path)!r}, custom_objects={{"Unregistered": Unregistered}})
        print("OUT", m.predict(np.ones((1, 3), np.float32), verbose=0).tolist())
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ERROR" in r.stdout and "Unregistered" in r.stdout and "custom_objects" in r.stdout
    assert "OUT [[3.0, 3.0, 3.0]]" in r.stdout


def test_a_layer_with_arguments_and_no_get_config_is_an_error_naming_it(tmp_path):
    model = ef.keras.Sequential([ef.keras.Input((3,)), NoConfig(2, name="nc")])
    with pytest.raises(NotImplementedError, match="NoConfig.*units.*get_config"):
        model.save(tmp_path / "n.efmodel")
    assert not (tmp_path / "n.efmodel").exists()


def test_config_values_must_be_plain(tmp_path):
    class BadConfig(ef.keras.layers.Layer):
        def call(self, x):
            return x

        def get_config(self):
            return {**super().get_config(), "fn": print}

    model = ef.keras.Sequential([ef.keras.Input((3,)), BadConfig(name="bad")])
    with pytest.raises(TypeError, match="bad.*'fn'.*builtin_function_or_method"):
        model.save(tmp_path / "b.efmodel")


def test_registering_a_builtin_name_is_refused():
    with pytest.raises(ValueError, match="built-in"):
        @saving.register_keras_serializable(package="x", name="y")
        class Fine(ef.keras.layers.Layer):
            pass

        class Dense(ef.keras.layers.Layer):
            pass

        saving._register("Dense", Dense)


def test_model_checkpoint_writes_a_model_file_load_model_reads(tmp_path):
    x, y = data()
    model = ef.keras.Sequential([ef.keras.Input((6,)), ScaledDense(4), ef.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    cb = ef.keras.callbacks.ModelCheckpoint(str(tmp_path / "e{epoch}.keras"))
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[cb])
    assert cb.last_saved.endswith("e2.keras")
    loaded = ef.keras.models.load_model(cb.last_saved)
    for a, b in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(loaded.optimizer.iterations) == 8
    with pytest.raises(ValueError, match="must end in `.keras`"):
        ef.keras.callbacks.ModelCheckpoint(str(tmp_path / "ckpt"))
