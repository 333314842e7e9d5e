"""What the Python-written Keras layers of the catalogue share: their configs (Keras 3's keys) and
their registration, so save_model/load_model and from_config find them as built-in layers."""
import re

from .. import _layers
from . import activations as _activations
from . import initializers as _initializers
from . import regularizers as _regularizers


class CatalogueLayer(_layers.Layer):
    """A Keras layer written from ef ops. Subclasses list their own constructor arguments in
    _config (stored as attributes of the same name) so get_config is Keras' without boilerplate."""

    _config = ()

    def __init__(self, name=None, **kwargs):
        for key in ("input_shape", "input_dim", "batch_size", "autocast"):  # Keras' base arguments
            kwargs.pop(key, None)
        default = type(self).__dict__.get("_ef_default_name") or _keras_snake(type(self).__name__)
        super().__init__(name=name or _layers._unique_name(default), **kwargs)

    def get_config(self):
        config = super().get_config()
        for key in self._config:
            config[key] = _serializable(getattr(self, key))
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def _regularize(self, regularizer, variable):
        """Keras' weight regularizer: regularizer(variable) joins the losses at every call."""
        if regularizer is not None:
            self._ef_regularized = getattr(self, "_ef_regularized", []) + [(regularizer, variable)]
        return variable

    def _ef_call(self, inputs, training):
        outputs = super()._ef_call(inputs, training)
        for regularizer, variable in getattr(self, "_ef_regularized", ()):
            self.add_loss(regularizer(variable))
        return outputs


def _keras_snake(name):
    # Keras' own rule (UpSampling1D -> up_sampling1d, PReLU -> p_re_lu), not _layers._snake's.
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _serializable(value):
    if isinstance(value, tuple):  # Keras' configs keep tuples (JSON writes them as lists)
        return tuple(_serializable(v) for v in value)
    if isinstance(value, list):
        return [_serializable(v) for v in value]
    if isinstance(value, _initializers.Initializer) or isinstance(value, _regularizers.Regularizer):
        return {"class_name": type(value).__name__, "config": value.get_config()}
    if callable(value) and hasattr(value, "__name__"):  # an activation function
        return value.__name__
    return value


def initializer(value):
    """An initializer argument as Keras takes it: a name, an Initializer or its serialized dict."""
    if isinstance(value, dict):
        cls = getattr(_initializers, value["class_name"])
        return cls.from_config(value.get("config", {}))
    return _initializers.get(value)


def regularizer(value):
    if isinstance(value, dict):
        return _regularizers.deserialize(value)
    return _regularizers.get(value)


def activation(value):
    return _activations.get(value)


def tuple_of(value, n, what):
    """Keras' normalisation of an int-or-tuple argument (kernel_size=3 -> (3, 3))."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"The `{what}` argument must be a tuple of {n} integers. Received {what}={value}")
    return value


def register(*classes):
    """Built-in layers: load_model and from_config find them by class name, as Keras' own."""
    from . import saving
    for cls in classes:
        if saving._registered.get(cls.__name__) is not cls:
            saving._register(cls.__name__, cls, replace=True)
    return classes
