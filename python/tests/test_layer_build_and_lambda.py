"""Keras' layer.build(input_shape) from Python (C++ layers and layers written in Python: built
once, a later call builds nothing again, `self.built = True` as Keras 2 writes it) and Keras 3's
Lambda layer (arguments, training and mask passed when the function takes them, the output mask,
get_config with the function as Keras writes it, save and load behind safe mode)."""
import json
import zipfile

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras
from eagerflow.keras import _safe_mode

L = keras.layers


# ---------------------------------------------------------------- build(input_shape)

def test_cpp_layers_build_for_a_shape_with_any_batch_once():
    dense = L.Dense(4)
    dense.build((None, 6))
    assert dense.built and [tuple(w.shape) for w in dense.weights] == [(6, 4), (4,)]
    kernel = dense.kernel
    assert dense(np.ones((3, 6), np.float32)).shape == (3, 4)
    dense.build((None, 9))  # built: nothing happens
    assert len(dense.weights) == 2 and dense.kernel is kernel or np.array_equal(dense.kernel.numpy(), kernel.numpy())
    conv = L.Conv2D(8, 3)
    conv.build(ef.TensorShape([None, 8, 8, 3]))
    assert tuple(conv.weights[0].shape) == (3, 3, 3, 8)
    lstm = L.LSTM(5)
    lstm.build([None, 7, 2])  # a list of ints and None is one shape
    assert [tuple(w.shape) for w in lstm.weights] == [(2, 20), (5, 20), (20,)]
    add = L.Add()
    add.build([(None, 3), (None, 3)])  # a list of shapes: one per input
    assert add.built


def test_build_errors_name_the_layer_and_leave_it_unbuilt():
    dense = L.Dense(2, name="head")
    with pytest.raises(ef.errors.InvalidArgumentError, match="head.*last dim"):
        dense.build((None, None))
    assert not dense.built and dense.weights == []
    with pytest.raises(TypeError, match="head.*input_shape"):
        dense.build("784")
    with pytest.raises(TypeError, match="head.*'a'"):
        dense.build((None, "a"))
    with pytest.raises(ValueError, match="head.*-5"):
        dense.build((None, -5))
    dense.build((None, 3))
    assert dense(np.ones((1, 3), np.float32)).shape == (1, 2)


def test_a_single_input_layer_called_with_two_inputs_is_not_left_broken():
    dense = L.Dense(3)
    x = np.ones((1, 3), np.float32)
    with pytest.raises(ef.errors.InvalidArgumentError, match="takes one input, got 2"):
        dense([x, x])
    assert dense(x).shape == (1, 3) and len(dense.weights) == 2


class _Scale(L.Layer):
    builds = 0

    def build(self, input_shape):
        type(self).builds += 1
        self.w = self.add_weight(shape=(input_shape[-1], 2), initializer="ones")
        super().build(input_shape)  # Keras 2's ending

    def call(self, x):
        return ef.matmul(x, self.w)


def test_python_layer_built_by_hand_is_not_built_again_by_its_first_call():
    layer = _Scale()
    _Scale.builds = 0
    layer.build((None, 3))
    assert layer.built and len(layer.weights) == 1 and _Scale.builds == 1
    y = layer(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(y.numpy(), np.full((2, 2), 3.0, np.float32))
    assert len(layer.weights) == 1 and _Scale.builds == 1
    layer.build((None, 5))
    assert _Scale.builds == 1


class _SetsBuilt(L.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")
        self.built = True  # Keras 2's other ending

    def call(self, x):
        return x * self.w


class _Failing(L.Layer):
    def build(self, input_shape):
        self.add_weight(shape=(2,), initializer="ones")
        raise RuntimeError("no weights for you")

    def call(self, x):
        return x


def test_built_set_by_hand_and_a_failing_build():
    layer = _SetsBuilt()
    assert layer(np.ones((1, 4), np.float32)).shape == (1, 4) and len(layer.weights) == 1 and layer.built
    with pytest.raises(ValueError, match="built = False"):
        layer.built = False

    class NoWeights(L.Layer):
        def call(self, x):
            return x * 2.0
    plain = NoWeights()
    plain.built = True  # outside build: marked built without running build(), as in Keras
    assert plain.built and plain(np.ones((1, 2), np.float32)).numpy().tolist() == [[2.0, 2.0]]
    with pytest.raises(ValueError, match="layer.build"):
        L.Dense(2).built = True

    failing = _Failing()
    with pytest.raises(RuntimeError, match="no weights"):
        failing.build((None, 2))
    assert not failing.built and failing.weights == []


# ---------------------------------------------------------------- Lambda

def test_lambda_passes_arguments_training_and_mask():
    seen = {}

    def fn(x, scale, training=None, mask=None):
        seen["training"], seen["mask"] = training, mask
        return x * scale

    layer = L.Lambda(fn, arguments={"scale": 3.0})
    x = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(layer(x, training=True).numpy(), 3 * x)
    assert seen["training"] is True and seen["mask"] is None
    with pytest.raises(TypeError, match="callable"):
        L.Lambda("x * 2")
    with pytest.raises(TypeError, match="arguments"):
        L.Lambda(fn, arguments=[3.0])
    assert L.Lambda(lambda t: t).name.startswith("lambda")


def test_lambda_output_mask_is_the_mask_argument():
    emb = L.Embedding(10, 4, mask_zero=True)
    ids = np.array([[1, 2, 0, 0]], np.int64)
    keep = L.Lambda(lambda t: t * 2.0, mask=lambda inputs, mask: mask)
    out = keep(emb(ids))
    np.testing.assert_array_equal(ef._core._mask_of(out).numpy(), [[True, True, False, False]])
    drop = L.Lambda(lambda t: t * 2.0)  # Keras: no mask argument, no mask on the output
    assert ef._core._mask_of(drop(emb(ids))) is None


def test_lambda_traces_once_inside_a_function_and_differentiates():
    calls = []

    def fn(t):
        calls.append(1)
        return ef.square(t)
    layer = L.Lambda(fn)
    f = ef.function(lambda t: layer(t))
    x = ef.constant(np.arange(4, dtype=np.float32).reshape(2, 2))
    f(x)
    f(x)
    assert len(calls) == 1
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(layer(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * x.numpy())


def _named_double(t):
    return t * 2.0


def test_lambda_config_holds_the_function_as_keras_writes_it():
    config = L.Lambda(lambda t, k=2.0: t * k, output_shape=(3,), name="times").get_config()
    fn = config["function"]
    assert fn["class_name"] == "__lambda__" and set(fn["config"]) == {"code", "defaults", "closure"}
    assert fn["config"]["defaults"] == (2.0,) and config["output_shape"] == (3,) and config["arguments"] == {}
    assert config["name"] == "times"
    with pytest.raises(ValueError, match="safe_mode=False"):
        L.Lambda.from_config(config)
    rebuilt = L.Lambda.from_config(config, safe_mode=False)
    np.testing.assert_array_equal(rebuilt(np.ones((1, 3), np.float32)).numpy(), np.full((1, 3), 2.0))
    named = L.Lambda(_named_double).get_config()["function"]
    assert named["class_name"] == "function" and named["config"] == "_named_double"
    again = L.Lambda.from_config(L.Lambda(_named_double).get_config(), custom_objects={"_named_double": _named_double})
    assert again.function is _named_double


def test_lambda_model_saves_to_keras_and_loads_outside_safe_mode(tmp_path):
    def make(offset, scale):  # a closure over plain numbers saves with the code
        return L.Lambda(lambda t: ef.stack([t, t * scale + offset], axis=1), name="features")
    model = keras.Sequential([keras.Input((1,)), L.Flatten(), make(1.0, 3.0), L.Flatten(), L.Dense(1)])
    x = np.linspace(-1, 1, 8).astype(np.float32).reshape(8, 1)
    path = str(tmp_path / "m.keras")
    model.save(path)
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    saved = [layer for layer in config["config"]["layers"] if layer["class_name"] == "Lambda"][0]
    assert saved["config"]["function"]["class_name"] == "__lambda__"
    assert saved["config"]["function"]["config"]["closure"] == [1.0, 3.0]
    with pytest.raises(ValueError, match="safe_mode=False"):
        keras.models.load_model(path)
    loaded = keras.models.load_model(path, safe_mode=False)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_a_lambda_closing_over_a_tensor_cannot_be_saved_and_the_old_file_survives(tmp_path):
    path = str(tmp_path / "m.keras")
    keras.Sequential([keras.Input((3,)), L.Dense(2, name="d")]).save(path)

    def make(k):
        return L.Lambda(lambda t: t + k, name="plus")
    bad = keras.Sequential([keras.Input((3,)), make(ef.constant([1.0, 2.0, 3.0]))])
    with pytest.raises(TypeError, match="plus.*closure.*Tensor"):
        bad.save(path)
    assert keras.models.load_model(path).layers[0].name == "d"


def test_serialize_keras_object_writes_a_lambda_and_safe_mode_guards_it(monkeypatch):
    from eagerflow.keras.utils import deserialize_keras_object, serialize_keras_object
    config = serialize_keras_object(lambda t: t + 1)
    assert config["class_name"] == "__lambda__"
    with pytest.raises(ValueError, match="lambda"):
        deserialize_keras_object(config)
    assert deserialize_keras_object(config, safe_mode=False)(2) == 3
    damaged = {"class_name": "__lambda__", "config": {"value": ["bm90IGNvZGU=\n", None, None]}}
    with pytest.raises(ValueError, match="cannot be read|not Python bytecode"):
        deserialize_keras_object(damaged, safe_mode=False)
    monkeypatch.setattr(_safe_mode, "_unsafe_everywhere", False)
    keras.config.enable_unsafe_deserialization()
    assert deserialize_keras_object(config)(4) == 5


# ---------------------------------------------------------------- integer inputs

def test_integer_pixels_feed_a_float_model_as_in_keras():
    """Keras' ops promote uint8 or int32 inputs with float weights to float32 (MNIST's uint8
    pixels straight into Flatten -> Dense); Embedding keeps its integer ids."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (32, 6, 6)).astype(np.uint8)
    y = rng.integers(0, 3, 32)
    model = keras.Sequential([keras.Input((6, 6)), L.Flatten(), L.Dense(3)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, epochs=1, verbose=0)
    model.fit(ef.data.Dataset.from_tensor_slices((x, y)).batch(8), epochs=1, verbose=0)
    out = model.predict(x[:4], verbose=0)
    np.testing.assert_allclose(out, model.predict(x[:4].astype(np.float32), verbose=0), rtol=1e-6)
    dense = L.Dense(2, kernel_initializer="ones")
    assert dense(np.array([[1, 2]], np.int32)).numpy().tolist() == [[3.0, 3.0]]
    assert dense(np.array([[True, False]])).dtype == ef.float32
    assert L.Conv2D(1, 2)(np.ones((1, 3, 3, 1), np.uint8)).dtype == ef.float32
    assert L.LSTM(2)(np.ones((1, 3, 2), np.int64)).dtype == ef.float32
    assert L.BatchNormalization()(np.ones((2, 3), np.int32)).dtype == ef.float32
    emb = L.Embedding(5, 2)
    assert emb(np.array([[1, 4]])).shape == (1, 2, 2)
