"""Keras-style layers: the C++ layers, and a Layer base class for layers written in Python."""
import inspect
import re
import warnings

from . import _add_weight, _core
from .autograph import _api as _autograph

_names = {}


def _unique_name(base):
    n = _names.get(base, 0)
    _names[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def _snake(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


from ._tensor_shape import TensorShape  # noqa: E402,F401 - what Keras' build() receives (TF's API)


def _own_init_arguments(cls):
    """The arguments of cls.__init__ beyond Keras' base ones (name, trainable, dtype, **kwargs)."""
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            and p.name not in ("name", "trainable", "dtype")]


class _PythonLayer:
    """What layers and models written in Python share (mixed into Layer and keras.Model): the
    C++ trampoline calls _ef_build and _ef_call, which call the user's build and call."""

    def __init__(self, name=None, trainable=True, dtype=None, **kwargs):
        if name is None:
            name = _unique_name(_snake(type(self).__name__))
        super().__init__(name)
        if not trainable:
            self.trainable = False
        if dtype is not None:  # Keras' dtype=: a policy name, a DTypePolicy or a dtype
            self.dtype_policy = dtype
        cls = type(self)
        if "_ef_call_takes_training" not in cls.__dict__:
            try:
                params = inspect.signature(cls.call).parameters
                cls._ef_call_takes_training = "training" in params or any(
                    p.kind == p.VAR_KEYWORD for p in params.values())
            except (TypeError, ValueError):
                cls._ef_call_takes_training = False

    add_weight = _add_weight.add_weight  # Keras 3's signature (shape first) and Keras 2's (name first)

    def build(self, input_shape):
        pass

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define call(inputs)")

    def get_config(self):
        """Keras' get_config: what from_config needs to rebuild the layer (no weights). Override it
        (starting from super().get_config()) when __init__ takes arguments of its own."""
        cls = type(self)
        if cls.get_config is _PythonLayer.get_config:
            own = _own_init_arguments(cls)
            if own:
                raise NotImplementedError(
                    f"Layer {cls.__name__} ('{self.name}') has arguments {own} in `__init__()` and therefore must override "
                    "`get_config()` to be saved")
        # "dtype": the layer's policy as Keras 3 serializes it, so that from_config restores it.
        return {"name": self.name, "trainable": self.trainable, "dtype": _core._serialize_dtype_policy(self.dtype_policy)}

    @classmethod
    def from_config(cls, config):
        """Keras' from_config: cls(**config)."""
        return cls(**config)

    def _ef_get_config(self):
        """(registered class name, config) for save_model (python/src/py_layer.h)."""
        cls = type(self)
        return cls.__dict__.get("_ef_registered_name", cls.__name__), self.get_config()

    def _ef_build(self, shape):
        # build sees shapes only, so its ops run eagerly even while a functional model or an
        # ef.function traces the call (as Keras builds before tracing): variables made from
        # tf.random.normal(...) in build get eager initial values.
        if getattr(self, "_ef_skip_build", False):  # `layer.built = True` set outside build()
            return
        outer = getattr(self, "_ef_building", False)
        self._ef_building = True  # the user's build (wrapped by _marking_built) runs as written
        try:
            with _core._InitScope():
                self.build(TensorShape(shape) if isinstance(shape, tuple) else [TensorShape(s) for s in shape])
        finally:
            self._ef_building = outer

    def _ef_call(self, inputs, training):
        spec = getattr(self, "input_spec", None)
        if spec is not None:  # Keras' InputSpec check (python/eagerflow/keras/_input_spec.py)
            from .keras._input_spec import assert_input_compatibility
            assert_input_compatibility(spec, inputs, self.name)
        call = self.call
        if _autograph.enabled():  # inside ef.function(autograph=True): the user's call is converted, as TF's
            call = _autograph.converted_call(call)
        outputs = call(inputs, training=training) if self._ef_call_takes_training else call(inputs)
        _add_weight.add_regularization_losses(self)
        return outputs

    add_weight = _add_weight.add_weight  # Keras 3's arguments, the name optional

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def _cpp_layer_get_config(self):
    """Keras' get_config: the constructor arguments that rebuild this layer, its "dtype" policy
    included (the config save_model writes)."""
    return _core._layer_config(self)


@classmethod
def _cpp_layer_from_config(cls, config):
    """Keras' from_config: the layer rebuilt from get_config()'s dict, its policy included."""
    for c in cls.__mro__:
        if _core._saving.is_registered(c.__name__):
            return _core._layer_from_config(c.__name__, config)
    raise TypeError(f"{cls.__name__} has no from_config (no layer class of that name is registered)")


# The C++ layers (Dense, LSTM, ...); layers written in Python override both (_PythonLayer).
_core.Layer.get_config = _cpp_layer_get_config
_core.Layer.from_config = _cpp_layer_from_config


def _layer_get_weights(self):
    """Keras' get_weights: every weight's value as a NumPy array, in self.weights order."""
    import numpy as np
    return [np.array(v.numpy()) for v in self.weights]


def _layer_set_weights(self, weights):
    """Keras' set_weights: checks the count, every shape and dtype first (ValueError naming each
    mismatch), then assigns them all; on an error nothing changes."""
    _core._train._set_weights(self, list(weights))


_core.Layer.get_weights = _layer_get_weights
_core.Layer.set_weights = _layer_set_weights


def _build_shapes(input_shape, where):
    """Keras' input_shape (a tuple or list of ints and None, a TensorShape, or a list of those
    for several inputs) as ([dims with -1 for None], ...), and whether it was one shape."""
    def dims(shape):
        if isinstance(shape, TensorShape):
            shape = shape.as_list()
        out = []
        for d in shape:
            if d is None:
                out.append(-1)
            elif isinstance(d, bool) or not hasattr(d, "__index__"):
                raise TypeError(f"{where}: input_shape holds {d!r}; expected ints and None, as (None, 784)")
            else:
                out.append(int(d))
        return out
    if isinstance(input_shape, TensorShape):
        return [dims(input_shape)], True
    if not isinstance(input_shape, (list, tuple)):
        raise TypeError(f"{where}: input_shape must be a tuple such as (None, 784) or a list of them, "
                        f"got {type(input_shape).__name__}")
    if input_shape and all(isinstance(s, (list, tuple, TensorShape)) for s in input_shape):
        return [dims(s) for s in input_shape], False
    return [dims(input_shape)], True


def _cpp_layer_build(self, input_shape):
    """Keras' build(input_shape): creates the layer's weights for inputs of that shape (None for
    any size), as its first call would; nothing once the layer is built."""
    shapes, single = _build_shapes(input_shape, f"layer '{self.name}' build")
    self._ef_build_for(shapes, single)


_core.Layer.build = _cpp_layer_build
_cpp_built = _core.Layer.built


def _set_built(self, value):
    """Keras' `self.built = True` (a Keras 2 build() ends with it): inside build() the layer is
    marked built when build() returns anyway; outside, a layer written in Python is marked built
    without running build(), as in Keras."""
    if bool(value) == _cpp_built.__get__(self) or getattr(self, "_ef_building", False):
        return
    if not value:
        raise ValueError(f"layer '{self.name}' is built and keeps its weights: eagerflow cannot set built = False")
    if not isinstance(self, _PythonLayer):
        raise ValueError(f"layer '{self.name}' ({type(self).__name__}) makes its weights in build(): call "
                         "layer.build(input_shape) instead of setting built = True")
    self._ef_skip_build = True
    try:
        self._ef_build_for([[]], True)
    finally:
        self._ef_skip_build = False


_core.Layer.built = property(_cpp_built.__get__, _set_built, doc="Keras' built: whether build() has run.")


def _marking_built(user_build):
    """A build() written in Python, called by the user, goes through the C++ layer so that the
    layer is built once (its first call then builds nothing again), as Keras marks it built."""
    def build(self, input_shape):
        if getattr(self, "_ef_building", False) or not isinstance(self, _core.Layer):
            return user_build(self, input_shape)  # the C++ build (or a super().build) runs it
        return _cpp_layer_build(self, input_shape)  # builds once: the C++ build calls this again
    build.__name__, build.__qualname__, build.__doc__ = user_build.__name__, user_build.__qualname__, user_build.__doc__
    build.__wrapped__ = user_build
    build._ef_marks_built = True
    return build


class Layer(_PythonLayer, _core.Layer):
    """Subclass it in Python: build(input_shape), call(inputs[, training]), add_weight(...).

    Sub-layers assigned as attributes are tracked when first called inside call(). The
    layer is a C++ ef::nn::Layer, so ef.function, fit and the weight lists treat it as one.
    """

    @_marking_built
    def build(self, input_shape):
        """Keras' build(input_shape): override it to create weights with add_weight."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        user_build = cls.__dict__.get("build")
        if callable(user_build) and not getattr(user_build, "_ef_marks_built", False):
            cls.build = _marking_built(user_build)


class InputLayer:
    """Keras' InputLayer for Sequential: the shape of one example (no batch axis).
    ef.keras.Sequential([ef.keras.layers.InputLayer(shape=(28, 28)), ...]) builds the model at
    once, so summary() shows the shapes. ef.keras.Input gives a Keras tensor instead (the
    functional API), which Sequential takes as well."""

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None, input_shape=None):
        shape = shape if shape is not None else input_shape
        if shape is None:
            raise ValueError("Input needs a shape (of one example, without the batch axis)")
        self.shape = (batch_size,) + tuple(shape)
        self.dtype = dtype
        self.name = name

    def __repr__(self):
        return f"<InputLayer shape={self.shape}>"


def Input(shape=None, batch_size=None, dtype=None, name=None, batch_shape=None):  # noqa: N802 - Keras' name
    """Keras' Input: a Keras tensor (a placeholder with a shape and dtype, no value) for one
    example of `shape` (the batch axis is added). Call layers on it and build a model with
    ef.keras.Model(inputs, outputs); ef.keras.Sequential takes it as its first entry too."""
    if batch_shape is not None:
        if shape is not None:
            raise ValueError("Input: give shape or batch_shape, not both")
        batch_shape = tuple(batch_shape)
        if not batch_shape:
            raise ValueError("Input: batch_shape needs the batch axis")
        batch_size, shape = batch_shape[0], batch_shape[1:]
    if shape is None:
        raise ValueError("Input needs a shape (of one example, without the batch axis)")
    if isinstance(shape, int):
        shape = (shape,)
    return _core._train.Input([None if d is None else int(d) for d in shape], dtype, name or "",
                              None if batch_size is None else int(batch_size))


Dense = _core.Dense
Flatten = _core.Flatten
Dropout = _core.Dropout
Activation = _core.Activation
Reshape = _core.Reshape
Conv2D = _core.Conv2D
MaxPool2D = MaxPooling2D = _core.MaxPool2D
AveragePooling2D = AvgPool2D = _core.AveragePooling2D
GlobalAveragePooling2D = _core.GlobalAveragePooling2D
BatchNormalization = _core.BatchNormalization
LayerNormalization = _core.LayerNormalization


class Embedding(_core.Embedding):
    """Keras' Embedding(input_dim, output_dim, mask_zero=False): the C++ ef::nn::Embedding. With mask_zero
    the output carries the mask ids != 0, which LSTM / GRU / SimpleRNN / Bidirectional and
    GlobalAveragePooling1D honour (python/src/recurrent.cpp)."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", mask_zero=False, name=None,
                 input_length=None):
        if input_length is not None:  # Keras 2's argument: Keras 3 warns and ignores it
            warnings.warn("Argument `input_length` is deprecated. Just remove it.", stacklevel=2)
        super().__init__(input_dim, output_dim, name=name or "")
        _core._embedding_mask_zero(self, bool(mask_zero))
        if embeddings_initializer is not None and embeddings_initializer != "uniform":  # "uniform": the default
            _core._embedding_initializer(self, embeddings_initializer)

    def __call__(self, inputs, *args, **kwargs):
        # As Keras' Embedding.call: floating ids (a default float32 keras.Input(shape=(None,)))
        # are cast to int32 rather than refused.
        dtype = getattr(inputs, "dtype", None)
        if dtype is not None:
            from . import as_dtype, cast
            if as_dtype(dtype).is_floating:
                inputs = cast(inputs, "int32")
        return super().__call__(inputs, *args, **kwargs)

    @property
    def mask_zero(self):
        return _core._embedding_mask_zero(self)

    @mask_zero.setter
    def mask_zero(self, value):
        _core._embedding_mask_zero(self, bool(value))


Add = _core.Add
Concatenate = _core.Concatenate
