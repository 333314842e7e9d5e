"""Keras 3's merge layers written from ef ops (Multiply, Subtract, Average, Maximum, Minimum, Dot)
and the functional forms (add, multiply, ...). Add and Concatenate are the C++ layers."""
import functools

import eagerflow as _ef

from ._catalogue_base import CatalogueLayer, register


class _Merge(CatalogueLayer):
    _min_inputs = 2

    def _check(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < self._min_inputs:
            raise ValueError(f"A merge layer should be called on a list of at least {self._min_inputs} inputs. "
                             f"Got {len(inputs) if isinstance(inputs, (list, tuple)) else 1} inputs.")
        return list(inputs)

    def call(self, inputs):
        return functools.reduce(getattr(_ef, self._op), self._check(inputs))


class Multiply(_Merge):
    """Element-wise product of the inputs (broadcasting)."""
    _op = "multiply"


class Subtract(_Merge):
    """inputs[0] - inputs[1] (exactly two inputs)."""

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs. "
                             f"Received: inputs={inputs}")
        return _ef.subtract(inputs[0], inputs[1])


class Average(_Merge):
    """Element-wise mean of the inputs."""

    def call(self, inputs):
        inputs = self._check(inputs)
        return functools.reduce(_ef.add, inputs) / len(inputs)


class Maximum(_Merge):
    """Element-wise maximum of the inputs."""
    _op = "maximum"


class Minimum(_Merge):
    """Element-wise minimum of the inputs."""
    _op = "minimum"


_LETTERS = "bcdefghijklmnopqrstuvwxyz"


class Dot(_Merge):
    """Keras' Dot(axes, normalize): a batched dot product over axes (of each sample); normalize
    l2-normalises both along those axes first (cosine proximity)."""

    _config = ("axes", "normalize")

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)) or len(axes) != 2 or not all(isinstance(a, int) for a in axes):
                raise TypeError("Invalid type for argument `axes`: it should be a list/tuple of two integers, or an "
                                f"integer. Received: axes={axes}")
        self.axes = axes
        self.normalize = normalize

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"A `Dot` layer should be called on exactly 2 inputs. Received: inputs={inputs}")
        x, y = inputs
        rx, ry = len(x.shape), len(y.shape)
        axes = (self.axes, self.axes) if isinstance(self.axes, int) else tuple(self.axes)
        ax = axes[0] % rx if axes[0] < 0 else axes[0]
        ay = axes[1] % ry if axes[1] < 0 else axes[1]
        if ax == 0 or ay == 0:
            raise ValueError("Dot: the batch axis (0) cannot be contracted")
        if x.shape[ax] is not None and y.shape[ay] is not None and x.shape[ax] != y.shape[ay]:
            raise ValueError(f"Incompatible input shapes: axis values {x.shape[ax]} (at axis {ax}) != "
                             f"{y.shape[ay]} (at axis {ay}). Full input shapes: {x.shape}, {y.shape}")
        if self.normalize:
            x = _ef.nn.l2_normalize(x, axis=ax)
            y = _ef.nn.l2_normalize(y, axis=ay)
        # Keras' batch_dot as one einsum: the batch letter "a", the contracted letter "z".
        letters = iter(_LETTERS[:-1])
        xs = ["a"] + [("z" if i == ax else next(letters)) for i in range(1, rx)]
        ys = ["a"] + [("z" if i == ay else next(letters)) for i in range(1, ry)]
        out = ["a"] + [c for c in xs[1:] if c != "z"] + [c for c in ys[1:] if c != "z"]
        result = _ef.einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(out)}", x, y)
        if len(out) == 1:  # two vectors per sample: Keras keeps a (batch, 1) result
            result = _ef.expand_dims(result, 1)
        return result


def _functional(cls, doc):
    def merge(inputs, **kwargs):
        return cls(**kwargs)(inputs)
    merge.__name__ = merge.__qualname__ = cls.__name__.lower()
    merge.__doc__ = doc
    return merge


multiply = _functional(Multiply, "Keras' multiply(inputs): Multiply()(inputs).")
subtract = _functional(Subtract, "Keras' subtract(inputs): Subtract()(inputs).")
average = _functional(Average, "Keras' average(inputs): Average()(inputs).")
maximum = _functional(Maximum, "Keras' maximum(inputs): Maximum()(inputs).")
minimum = _functional(Minimum, "Keras' minimum(inputs): Minimum()(inputs).")


def dot(inputs, axes=-1, **kwargs):
    """Keras' dot(inputs, axes): Dot(axes)(inputs)."""
    return Dot(axes=axes, **kwargs)(inputs)


register(Multiply, Subtract, Average, Maximum, Minimum, Dot)
