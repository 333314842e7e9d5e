"""Keras 3's reshaping layers written from ef ops: RepeatVector, Permute, UpSampling1D/3D,
ZeroPadding1D/3D, Cropping1D/2D/3D, Identity."""
import eagerflow as _ef

from ._catalogue_base import CatalogueLayer, register


def _data_format(value):
    value = "channels_last" if value is None else str(value).lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f'The `data_format` argument must be one of {{"channels_first", "channels_last"}}. '
                         f"Received: data_format={value}")
    return value


def _spatial_axes(rank, data_format, n):
    """The n spatial axes of a rank-`rank` input in data_format."""
    return list(range(2, 2 + n)) if data_format == "channels_first" else list(range(1, 1 + n))


def _pairs(value, n, what):
    """Keras' padding/cropping argument: an int, n ints (symmetric) or n pairs -> n (before, after)."""
    if isinstance(value, int):
        return ((value, value),) * n
    value = tuple(value)
    if n == 1 and len(value) == 2 and all(isinstance(v, int) for v in value):
        return (tuple(value),)
    if len(value) != n:
        raise ValueError(f"`{what}` should have {n} elements. Received: {what}={value}.")
    out = []
    for v in value:
        if isinstance(v, int):
            out.append((v, v))
        else:
            v = tuple(v)
            if len(v) != 2:
                raise ValueError(f"`{what}` entries should be 2-tuples. Received: {what}={value}.")
            out.append((int(v[0]), int(v[1])))
    return tuple(out)


class RepeatVector(CatalogueLayer):
    """(batch, features) -> (batch, n, features)."""

    _config = ("n",)

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(n, int):
            raise TypeError(f"Expected an integer value for `n`, got {type(n)}.")
        self.n = n

    def call(self, inputs):
        if len(inputs.shape) != 2:
            raise ValueError(f"RepeatVector expects a 2-D input (batch, features). Received: shape={inputs.shape}")
        return _ef.tile(_ef.expand_dims(inputs, 1), [1, self.n, 1])


class Permute(CatalogueLayer):
    """Permutes the non-batch axes: dims counts from 1, as Keras'."""

    _config = ("dims",)

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set of indices in `dims` "
                             f"must be consecutive and start from 1. Received dims={self.dims}")

    def call(self, inputs):
        return _ef.transpose(inputs, [0] + list(self.dims))


class UpSampling1D(CatalogueLayer):
    """Repeats each step `size` times along the time axis."""

    _config = ("size",)

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = int(size)

    def call(self, inputs):
        return _ef.repeat(inputs, self.size, axis=1)


class UpSampling3D(CatalogueLayer):
    """Repeats rows, columns and depth slices: size (d, h, w)."""

    _config = ("size", "data_format")

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.size = (int(size),) * 3 if isinstance(size, int) else tuple(int(s) for s in size)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        for axis, n in zip(_spatial_axes(5, self.data_format, 3), self.size):
            inputs = _ef.repeat(inputs, n, axis=axis)
        return inputs


class _ZeroPadding(CatalogueLayer):
    _rank = 1
    _config = ("padding", "data_format")

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.padding = _pairs(padding, self._rank, "padding")
        if self._rank == 1:
            self.padding = self.padding[0]
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        pads = [[0, 0] for _ in range(self._rank + 2)]
        padding = (self.padding,) if self._rank == 1 else self.padding
        for axis, p in zip(_spatial_axes(self._rank + 2, self.data_format, self._rank), padding):
            pads[axis] = list(p)
        return _ef.pad(inputs, pads)


class ZeroPadding1D(_ZeroPadding):
    """Zeros before and after the time axis: padding=int or (left, right)."""


class ZeroPadding3D(_ZeroPadding):
    """Zeros around the three spatial axes."""
    _rank = 3

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class _Cropping(CatalogueLayer):
    _rank = 1
    _config = ("cropping", "data_format")

    def __init__(self, cropping, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.cropping = _pairs(cropping, self._rank, "cropping")
        if self._rank == 1:
            self.cropping = self.cropping[0]
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        cropping = (self.cropping,) if self._rank == 1 else self.cropping
        slices = [slice(None)] * len(inputs.shape)
        axes = _spatial_axes(len(inputs.shape), self.data_format, self._rank)
        for axis, (a, b) in zip(axes, cropping):
            size = inputs.shape[axis]
            if size is not None and a + b >= size:
                raise ValueError(f"Values in `cropping` argument should be smaller than the corresponding spatial "
                                 f"dimension of the input. Received: inputs.shape={inputs.shape}, "
                                 f"cropping={self.cropping}")
            slices[axis] = slice(a, -b if b else None)
        return inputs[tuple(slices)]


class Cropping1D(_Cropping):
    """Crops the time axis: cropping=int or (left, right)."""

    _config = ("cropping",)

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(cropping, None, **kwargs)


class Cropping2D(_Cropping):
    """Crops rows and columns."""
    _rank = 2

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)


class Cropping3D(_Cropping):
    """Crops the three spatial axes."""
    _rank = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)


class Identity(CatalogueLayer):
    """Returns its input unchanged (Keras' placeholder layer)."""

    def call(self, inputs):
        return _ef.identity(inputs) if not isinstance(inputs, (list, tuple)) else inputs


register(RepeatVector, Permute, UpSampling1D, UpSampling3D, ZeroPadding1D, ZeroPadding3D, Cropping1D, Cropping2D,
         Cropping3D, Identity)
