"""keras.Variable (Keras 3): a variable made from a value or from an initializer and a shape.

Its name is Keras' ("variable", "variable_1", ... unless given; no "/" allowed) and .path is the
same name, as Keras' outside any layer. Layer weights are the C++ variables themselves, so
isinstance(layer.kernel, keras.Variable) is False here (it is True in Keras)."""
import numpy as _np

from .. import _core
from .. import _layers


def _is_value(x):
    return isinstance(x, (_core.Tensor, _core.Variable, _np.ndarray, list, tuple, int, float, bool, _np.generic))


class Variable(_core.Variable):
    def __init__(self, initializer, shape=None, dtype=None, trainable=True, autocast=True, aggregation="none",
                 synchronization="auto", name=None):
        # Keras names the variable before it looks at the initializer, so a failed one uses a number too
        if name is None:
            name = _layers._unique_name("variable")
        if not isinstance(name, str) or "/" in name:
            raise ValueError("Argument `name` must be a string and cannot contain character `/`. "
                             f"Received: name={name}")
        from . import config, initializers
        if _is_value(initializer):
            value = initializer
            if not isinstance(value, (_core.Tensor, _core.Variable, _np.ndarray)):
                # Python floats are floatx() and ints int32, as Keras converts them
                arr = _np.asarray(value)
                value = arr.astype(config.floatx() if arr.dtype.kind == "f" else
                                   "int32" if arr.dtype.kind in "iu" else arr.dtype)
            if shape is not None and tuple(_np.shape(value)) != tuple(shape):
                raise ValueError(f"Initial value has shape {tuple(_np.shape(value))}, but shape={tuple(shape)}")
        else:
            init = initializers.get(initializer)
            if shape is None:
                raise ValueError("When creating a Variable from an initializer, the `shape` argument should be "
                                 f"specified. Received: initializer={init} and shape={shape}")
            value = init(tuple(shape), dtype=dtype or config.floatx())
        super().__init__(value, name=name, trainable=trainable, dtype=dtype)

    def __repr__(self):
        return f"<Variable path={self.path}, shape={tuple(self.shape)}, dtype={self.dtype.name}, value={self.numpy()}>"
