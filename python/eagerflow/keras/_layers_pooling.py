"""Keras 3's 3-D pooling layers written from ef ops (MaxPooling3D, AveragePooling3D and the
global 3-D poolings); the 1-D and 2-D ones are C++ layers."""
import eagerflow as _ef

from ._catalogue_base import CatalogueLayer, register, tuple_of
from ._layers_conv import _conv_padding, _from_last, _to_last
from ._layers_reshaping import _data_format


class _Pooling3D(CatalogueLayer):
    _config = ("pool_size", "padding", "strides", "data_format")

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = tuple_of(pool_size, 3, "pool_size")
        self.strides = self.pool_size if strides is None else tuple_of(strides, 3, "strides")
        self.padding = _conv_padding(padding)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        x = _to_last(inputs, self.data_format)
        y = getattr(_ef.nn, self._op)(x, ksize=(1,) + self.pool_size + (1,), strides=(1,) + self.strides + (1,),
                       padding=self.padding.upper())
        return _from_last(y, self.data_format)


class MaxPooling3D(_Pooling3D):
    """Max over pool_size windows of the three spatial axes."""
    _op = "max_pool3d"


class AveragePooling3D(_Pooling3D):
    """Mean over pool_size windows of the three spatial axes ("same" averages the valid cells only)."""
    _op = "avg_pool3d"


class _GlobalPooling3D(CatalogueLayer):
    _config = ("data_format", "keepdims")

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format, self.keepdims = _data_format(data_format), bool(keepdims)

    def call(self, inputs):
        axes = [2, 3, 4] if self.data_format == "channels_first" else [1, 2, 3]
        return getattr(_ef, self._op)(inputs, axis=axes, keepdims=self.keepdims)


class GlobalMaxPooling3D(_GlobalPooling3D):
    """Max over the three spatial axes."""
    _op = "reduce_max"


class GlobalAveragePooling3D(_GlobalPooling3D):
    """Mean over the three spatial axes."""
    _op = "reduce_mean"


MaxPool3D, AvgPool3D = MaxPooling3D, AveragePooling3D
GlobalMaxPool3D, GlobalAvgPool3D = GlobalMaxPooling3D, GlobalAveragePooling3D

register(MaxPooling3D, AveragePooling3D, GlobalMaxPooling3D, GlobalAveragePooling3D)
