"""Keras 3's TimeDistributed written from ef ops, and serialize/deserialize for layers (the
{"class_name", "config"} dicts a wrapper's config nests)."""
import eagerflow as _ef

from .. import _core
from ._catalogue_base import CatalogueLayer, register


def serialize(layer):
    """Keras' layers.serialize: {"module", "class_name", "config", "registered_name"}."""
    cls = type(layer)
    name = cls.__dict__.get("_ef_registered_name", cls.__name__)
    return {"module": "keras.layers", "class_name": name, "config": layer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """Keras' layers.deserialize: a layer from serialize()'s dict (built-in, registered or in
    custom_objects)."""
    from . import saving
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not parse config: {config}")
    name, inner = config["class_name"], config.get("config", {})
    cls = (custom_objects or {}).get(name) or saving._registered.get(name)
    if cls is not None:
        return cls.from_config(inner)
    if _core._saving.is_registered(name):
        return _core._layer_from_config(name, inner)
    raise ValueError(f"Unknown layer: '{name}'. Please ensure you are using a `keras.utils.custom_object_scope` "
                     "and that this object is included in the scope.")


class Wrapper(CatalogueLayer):
    """Keras' base class of layers that wrap another (self.layer); its config nests the layer's."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if isinstance(layer, dict):
            layer = deserialize(layer)
        if not isinstance(layer, _core.Layer):
            raise ValueError(f"Layer {layer} supplied to Wrapper isn't a supported layer type. Please ensure "
                             "wrapped layer is a valid Keras layer.")
        self.layer = layer

    def get_config(self):
        config = super().get_config()
        config["layer"] = serialize(self.layer)
        return config

    def call(self, inputs, training=None):
        return self.layer(inputs, training=training) if training is not None else self.layer(inputs)


class TimeDistributed(Wrapper):
    """Applies `layer` to every step of axis 1: (batch, time, ...) runs as (batch * time, ...)."""

    def call(self, inputs, training=None):
        shape = list(inputs.shape)
        if len(shape) < 3:
            raise ValueError(f"`TimeDistributed` Layer should be passed an `input_shape` with at least 3 dimensions, "
                             f"received: {tuple(shape)}")
        if any(d is None for d in shape[2:]):
            raise ValueError(f"TimeDistributed: the dimensions after the time axis must be known, got {tuple(shape)}")
        steps = shape[1] if shape[1] is not None else _ef.shape(inputs)[1]
        flat = _ef.reshape(inputs, [-1] + shape[2:])
        y = self.layer(flat, training=training) if training is not None else self.layer(flat)
        return _ef.reshape(y, [-1, steps] + list(y.shape[1:]))


register(Wrapper, TimeDistributed)
