"""Keras-style layers: the C++ layers, and a Layer base class for layers written in Python."""
import inspect
import re

from . import _core

_names = {}


def _unique_name(base):
    n = _names.get(base, 0)
    _names[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def _snake(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


class TensorShape(tuple):
    """A shape as Keras' build() receives it: a tuple with None for unknown dims."""

    @property
    def rank(self):
        return len(self)

    def as_list(self):
        return list(self)


class Layer(_core.Layer):
    """Subclass it in Python: build(input_shape), call(inputs[, training]), add_weight(...).

    Sub-layers assigned as attributes are tracked when first called inside call(). The
    layer is a C++ ef::nn::Layer, so ef.function, fit and the weight lists treat it as one.
    """

    def __init__(self, name=None, trainable=True, dtype=None, **kwargs):
        if name is None:
            name = _unique_name(_snake(type(self).__name__))
        super().__init__(name)
        if not trainable:
            self.trainable = False
        cls = type(self)
        if "_ef_call_takes_training" not in cls.__dict__:
            try:
                params = inspect.signature(cls.call).parameters
                cls._ef_call_takes_training = "training" in params or any(
                    p.kind == p.VAR_KEYWORD for p in params.values())
            except (TypeError, ValueError):
                cls._ef_call_takes_training = False

    def build(self, input_shape):
        pass

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define call(inputs)")

    def _ef_build(self, shape):
        self.build(TensorShape(shape) if isinstance(shape, tuple) else [TensorShape(s) for s in shape])

    def _ef_call(self, inputs, training):
        if self._ef_call_takes_training:
            return self.call(inputs, training=training)
        return self.call(inputs)

    def __setattr__(self, name, value):
        super().__setattr__(name, value)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


Dense = _core.Dense
Flatten = _core.Flatten
Dropout = _core.Dropout
Activation = _core.Activation
Reshape = _core.Reshape
