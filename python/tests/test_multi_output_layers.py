"""Layers and subclassed models written in Python whose call() returns several tensors (a tuple
or a list), as Keras allows: each output stays a tensor of its own, eagerly, on Keras tensors
(functional API), in ef.function and in fit/predict. A tuple used to be stacked into one tensor."""
import numpy as np
import pytest

import eagerflow as ef


class SplitHalves(ef.keras.layers.Layer):
    def call(self, x):
        n = x.shape[-1] // 2
        return x[:, :n] * 2.0, x[:, n:] + 1.0


class ListOut(ef.keras.layers.Layer):
    def call(self, x):
        return [x, x * 3.0]


def test_tuple_outputs_stay_separate_eagerly():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    a, b = SplitHalves()(ef.Tensor(x))
    np.testing.assert_allclose(a.numpy(), x[:, :2] * 2.0)
    np.testing.assert_allclose(b.numpy(), x[:, 2:] + 1.0)
    out = SplitHalves()(ef.Tensor(x))
    assert isinstance(out, tuple) and len(out) == 2


def test_list_outputs_come_back_as_a_list():
    x = np.ones((2, 3), np.float32)
    out = ListOut()(ef.Tensor(x))
    assert isinstance(out, list) and len(out) == 2
    np.testing.assert_allclose(out[1].numpy(), 3 * x)


def test_outputs_of_different_shapes_inside_a_function():
    layer = SplitHalves()

    @ef.function
    def f(x):
        a, b = layer(x)
        return ef.reduce_sum(a) + ef.reduce_sum(b)

    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    expected = (x[:, :3] * 2).sum() + (x[:, 3:] + 1).sum()
    assert float(f(ef.Tensor(x)).numpy()) == pytest.approx(expected)


def test_functional_model_over_a_multi_output_layer():
    inp = ef.keras.Input(shape=(4,))
    a, b = SplitHalves()(inp)
    out_a = ef.keras.layers.Dense(1, name="da")(a)
    out_b = ef.keras.layers.Dense(1, name="db")(b)
    model = ef.keras.Model(inp, [out_a, out_b])
    x = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    pa, pb = model.predict(x, verbose=0)
    assert pa.shape == (16, 1) and pb.shape == (16, 1)
    wa, ba = [w.numpy() for w in model.get_layer("da").weights]
    np.testing.assert_allclose(pa, (x[:, :2] * 2) @ wa + ba, rtol=1e-5, atol=1e-5)


class TwoHeads(ef.keras.Model):
    def __init__(self):
        super().__init__()
        self.body = ef.keras.layers.Dense(8, activation="relu")
        self.reg = ef.keras.layers.Dense(1)
        self.cls = ef.keras.layers.Dense(3)

    def call(self, x):
        h = self.body(x)
        return self.reg(h), self.cls(h)


def test_subclassed_model_with_two_outputs_fits_and_predicts():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 5)).astype(np.float32)
    y_reg = x.sum(axis=1, keepdims=True).astype(np.float32)
    y_cls = (x[:, 0] > 0).astype(np.int64)
    model = TwoHeads()
    model.compile(optimizer=ef.keras.optimizers.Adam(0.01),
                  loss=["mse", ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True)])
    h = model.fit(x, [y_reg, y_cls], batch_size=16, epochs=5, verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]
    reg, cls = model.predict(x, verbose=0)
    assert reg.shape == (64, 1) and cls.shape == (64, 3)
    out = model(ef.Tensor(x))
    assert isinstance(out, tuple)
    np.testing.assert_allclose(out[0].numpy(), reg, rtol=1e-5, atol=1e-5)


def test_several_outputs_inside_sequential_is_an_error_naming_the_layer():
    model = ef.keras.Sequential([SplitHalves(name="halves"), ef.keras.layers.Dense(1)])
    with pytest.raises(Exception, match="halves.*2 outputs"):
        model(ef.Tensor(np.ones((2, 4), np.float32)))


class ReturnsDict(ef.keras.layers.Layer):
    def call(self, x):
        return {"a": x}


class ReturnsTupleWithNumber(ef.keras.layers.Layer):
    def call(self, x):
        return x, 3


def test_unsupported_outputs_are_clear_errors():
    x = ef.Tensor(np.ones((2, 2), np.float32))
    with pytest.raises(Exception, match="returned a dict"):
        ReturnsDict(name="d")(x)
    with pytest.raises(Exception, match="item 1 is a int"):
        ReturnsTupleWithNumber(name="t")(x)


def test_a_list_of_one_input_reaches_build_and_call_as_a_list():
    seen = {}

    class Sees(ef.keras.layers.Layer):
        def build(self, shape):
            seen["build"] = shape

        def call(self, inputs):
            seen["call"] = type(inputs)
            return inputs[0] * 2.0

    y = Sees()([ef.Tensor(np.ones((2, 3), np.float32))])
    assert isinstance(seen["build"], list) and tuple(seen["build"][0]) == (2, 3)
    assert seen["call"] is list
    np.testing.assert_allclose(y.numpy(), 2 * np.ones((2, 3)))
