"""Keras 3's adaptive poolings written from ef ops: a fixed output size, each output cell pooling
input cells floor(i * n / out) .. ceil((i + 1) * n / out) (PyTorch's bins, as Keras')."""
import eagerflow as _ef

from ._catalogue_base import CatalogueLayer, register, tuple_of
from ._layers_conv import _from_last, _to_last
from ._layers_reshaping import _data_format


class _AdaptivePooling(CatalogueLayer):
    _rank = 1
    _config = ("output_size", "data_format")

    def __init__(self, output_size, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.output_size = tuple_of(output_size, self._rank, "output_size")
        if any(s <= 0 for s in self.output_size):
            raise ValueError(f"`output_size` must be positive. Received: output_size={output_size}")
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        x = _to_last(inputs, self.data_format)
        reduce = getattr(_ef, self._op)
        for i, out in enumerate(self.output_size):
            axis = i + 1
            n = x.shape[axis]
            if n is None:
                raise ValueError(f"{type(self).__name__}: the spatial dimensions of the input must be known, "
                                 f"got shape {tuple(inputs.shape)}")
            cells = []
            for j in range(out):
                start, end = (j * n) // out, -(-((j + 1) * n) // out)
                index = [slice(None)] * len(x.shape)
                index[axis] = slice(start, end)
                cells.append(reduce(x[tuple(index)], axis=axis, keepdims=True))
            x = _ef.concat(cells, axis=axis)
        return _from_last(x, self.data_format)


class AdaptiveAveragePooling1D(_AdaptivePooling):
    _op = "reduce_mean"


class AdaptiveAveragePooling2D(_AdaptivePooling):
    _op, _rank = "reduce_mean", 2


class AdaptiveAveragePooling3D(_AdaptivePooling):
    _op, _rank = "reduce_mean", 3


class AdaptiveMaxPooling1D(_AdaptivePooling):
    _op = "reduce_max"


class AdaptiveMaxPooling2D(_AdaptivePooling):
    _op, _rank = "reduce_max", 2


class AdaptiveMaxPooling3D(_AdaptivePooling):
    _op, _rank = "reduce_max", 3


register(AdaptiveAveragePooling1D, AdaptiveAveragePooling2D, AdaptiveAveragePooling3D, AdaptiveMaxPooling1D,
         AdaptiveMaxPooling2D, AdaptiveMaxPooling3D)
