"""Keras' Lambda layer: a Python callable of ef ops as a layer. Its config holds the function as
Keras 3 writes it (a lambda's bytecode, base64 of marshal, with its defaults and closure; a named
function by name), so models holding one save to .keras files Keras reads and load back
(a lambda only outside safe mode, as in Keras)."""
import base64
import inspect
import marshal
import types

from .. import _core, _layers
from . import _safe_mode
from ._catalogue_base import CatalogueLayer, register


# Keras' base Layer arguments (CatalogueLayer drops the Keras 2 ones it has no use for).
_BASE_ARGUMENTS = {"name", "trainable", "dtype", "input_shape", "input_dim", "batch_size", "autocast"}


def _parameters(fn):
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def _is_lambda(fn):
    return isinstance(fn, types.LambdaType) and fn.__name__ == "<lambda>"


def dump_lambda(fn):
    """Keras' func_dump: (base64 of the marshalled code, defaults, closure values)."""
    code = base64.encodebytes(marshal.dumps(fn.__code__)).decode("ascii")
    closure = tuple(c.cell_contents for c in fn.__closure__) if fn.__closure__ else None
    return code, fn.__defaults__, closure


def _cell(value):
    return (lambda: value).__closure__[0]


def _load_globals():
    # What a saved lambda most often names: TensorFlow's, Keras' and NumPy's usual aliases.
    import numpy as np
    import eagerflow as ef
    from eagerflow import keras
    return {"__builtins__": __builtins__, "tf": ef, "ef": ef, "keras": keras, "ops": keras.ops, "np": np}


def load_lambda(code, defaults=None, closure=None):
    """Keras' func_load: the function dump_lambda described (runs nothing until it is called)."""
    if isinstance(code, (tuple, list)):
        code, defaults, closure = code
    try:
        raw = base64.decodebytes(code.encode("ascii"))
        loaded = marshal.loads(raw)
    except (ValueError, TypeError, EOFError) as e:
        raise ValueError(f"Lambda: the saved function's code cannot be read ({e}); it was saved by another "
                         "Python version or the file is damaged") from None
    if not isinstance(loaded, types.CodeType):
        raise ValueError("Lambda: the saved function's code is not Python bytecode")
    cells = tuple(_cell(v) for v in closure) if closure else None
    if len(cells or ()) != len(loaded.co_freevars):
        raise ValueError(f"Lambda: the saved function needs {len(loaded.co_freevars)} closure values, "
                         f"the config has {len(cells or ())}")
    return types.FunctionType(loaded, _load_globals(), loaded.co_name,
                              tuple(defaults) if defaults is not None else None, cells)


def serialize_function(fn, what):
    if _is_lambda(fn):
        code, defaults, closure = dump_lambda(fn)
        return {"class_name": "__lambda__", "config": {"code": code, "defaults": defaults, "closure": closure}}
    if callable(fn):
        from .utils._objects import serialize_keras_object
        return serialize_keras_object(fn)
    raise ValueError(f"Lambda: cannot serialize {what}={fn!r}: it is not callable")


def deserialize_function(config, what, custom_objects=None, safe_mode=None):
    if isinstance(config, dict) and config.get("class_name") == "__lambda__":
        if (_safe_mode.in_safe_mode() if safe_mode is None else safe_mode):
            _safe_mode.refuse_lambda(f"the `{what}` of a Lambda layer")
        inner = config["config"]
        if "value" in inner:  # serialize_keras_object's form of a lambda
            return load_lambda(inner["value"])
        return load_lambda(inner["code"], inner.get("defaults"), inner.get("closure"))
    from .utils._objects import deserialize_keras_object
    return deserialize_keras_object(config, custom_objects)


class Lambda(CatalogueLayer):
    """Keras' Lambda(function, output_shape=None, mask=None, arguments=None): calls
    function(inputs, **arguments), passing mask= and training= when the function takes them.
    mask: the output's mask, a callable mask(inputs, input_mask) or a fixed value."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        if not callable(function):
            raise TypeError(f"Lambda: function must be callable, got {type(function).__name__}")
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError(f"Lambda: arguments must be a dict of keyword arguments, got {type(arguments).__name__}")
        unknown = sorted(set(kwargs) - _BASE_ARGUMENTS)
        if unknown:
            raise TypeError(f"Unrecognized keyword arguments passed to Lambda: {unknown}")
        super().__init__(**kwargs)
        self.function = function
        self.arguments = dict(arguments or {})
        self.mask = mask
        self._lambda_output_shape = output_shape
        params = _parameters(function)
        self._fn_takes_mask = "mask" in params
        self._fn_takes_training = "training" in params

    def call(self, inputs, training=None):
        kwargs = dict(self.arguments)
        input_mask = _core._mask_of(inputs) if not isinstance(inputs, (list, tuple, dict)) else None
        if self._fn_takes_mask:
            kwargs["mask"] = input_mask
        if self._fn_takes_training:
            kwargs["training"] = training
        outputs = self.function(inputs, **kwargs)
        if self.mask is not None and isinstance(outputs, _core.Tensor):
            mask = self.mask(inputs, input_mask) if callable(self.mask) else self.mask
            _core._set_mask(outputs, mask)
        return outputs

    def compute_output_shape(self, input_shape):
        if self._lambda_output_shape is None:  # Keras infers it from a symbolic call
            import eagerflow as ef
            shapes, single = _layers._build_shapes(input_shape, f"Lambda '{self.name}' compute_output_shape")
            inputs = [ef.keras.Input(batch_shape=tuple(None if d < 0 else d for d in s)) for s in shapes]
            return tuple(self(inputs[0] if single else inputs).shape)
        if callable(self._lambda_output_shape):
            return self._lambda_output_shape(input_shape)
        batch = input_shape[0] if input_shape and not isinstance(input_shape[0], (list, tuple)) else None
        return (batch,) + tuple(self._lambda_output_shape)

    def get_config(self):
        config = super().get_config()
        config["function"] = serialize_function(self.function, "function")
        if self._lambda_output_shape is not None:
            config["output_shape"] = (serialize_function(self._lambda_output_shape, "output_shape")
                                      if callable(self._lambda_output_shape) else self._lambda_output_shape)
        if self.mask is not None:
            config["mask"] = serialize_function(self.mask, "mask") if callable(self.mask) else self.mask
        from .utils._objects import serialize_keras_object
        config["arguments"] = serialize_keras_object(self.arguments)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=None):
        config = dict(config)
        config["function"] = deserialize_function(config["function"], "function", custom_objects, safe_mode)
        for key in ("output_shape", "mask"):
            value = config.get(key)
            if isinstance(value, dict):
                config[key] = deserialize_function(value, key, custom_objects, safe_mode)
        if "arguments" in config:
            from .utils._objects import deserialize_keras_object
            config["arguments"] = deserialize_keras_object(config["arguments"], custom_objects)
        return cls(**config)


register(Lambda)
