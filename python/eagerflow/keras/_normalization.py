"""Keras' Normalization: the C++ layer, with adapt() taking what Keras' takes (a Dataset or any
iterable of batches as well as arrays) and axis=None fitting the model's input."""
import numpy as np

from .. import _core
from . import _prep_common as pc


def normalization_class(base):
    class Normalization(base):
        def adapt(self, data, batch_size=None, steps=None):
            """Computes the mean and variance of `data` (an array, a tensor, a Dataset or an
            iterable of batches) over the axes not kept by `axis`."""
            parts = pc.batches(data, steps)
            arr = parts[0] if len(parts) == 1 else np.concatenate([np.asarray(p) for p in parts], axis=0)
            if not self.axis:
                # axis=None: one mean and variance for every value, whatever the layout. The C++
                # layer is built for one rank, so the data takes the rank of the input the layer
                # has (in a model) or declares (input_shape=); a vector of values is one feature
                # per example, [n, 1], as a model's Input((1,)) feeds it.
                arr = np.asarray(arr)
                shape = getattr(self, "_output_shape", None) if self.built else None
                shape = shape or getattr(self, "_ef_declared_input_shape", None)
                if shape is not None and len(shape) >= 1 and all(d is not None for d in shape[1:]):
                    arr = arr.reshape((-1,) + tuple(int(d) for d in shape[1:]))
                elif arr.ndim == 1:
                    arr = arr.reshape(-1, 1)
            return super().adapt(arr if isinstance(arr, _core.Tensor) else np.asarray(arr))

    Normalization.__name__ = Normalization.__qualname__ = "Normalization"
    Normalization.__doc__ = base.__doc__
    return Normalization
