"""A Python layer is named by its Python class where the C++ core prints layer types (summary,
errors), as Keras prints "my_block (MyBlock)"."""
import io
import contextlib

import eagerflow as tf
from eagerflow import keras


class FlexibleScale(keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w


def test_summary_names_python_layers_by_their_class():
    model = keras.Sequential([keras.Input((3,)), FlexibleScale(name="scale"), keras.layers.Dense(2)])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        model.summary()
    text = out.getvalue()
    assert "scale (FlexibleScale)" in text, text
    assert "(Dense)" in text and "Layer>" not in text
