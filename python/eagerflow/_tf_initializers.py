"""TF's own initializers at the top level (tf.random_normal_initializer, random_uniform_initializer,
zeros_initializer, ones_initializer, constant_initializer): callables (shape, dtype) -> a tensor,
as TF's init_ops_v2. They differ from keras.initializers in their defaults (dtype float32 unless
given; constant_initializer infers it from the value) and their dtype checks, so they are their
own small classes over ef's ops."""
import numpy as _np

from . import _core

_PARTITION_KWARGS = ("partition_shape", "partition_offset")


def _check_kwargs(kwargs):
    for key in kwargs:
        if key not in _PARTITION_KWARGS:
            raise TypeError(f"Keyword argument should be one of {list(_PARTITION_KWARGS)}. Received: {key}")
    if kwargs.get("partition_shape") is not None or kwargs.get("partition_offset") is not None:
        raise NotImplementedError("eagerflow's initializers do not make partitioned variables")


def _shape(shape):
    from . import TensorShape
    return [int(d) for d in TensorShape(shape).as_list()]


class Initializer:
    """TF's tf.keras.initializers-independent base: __call__(shape, dtype) and get_config/from_config."""

    def __call__(self, shape, dtype=None, **kwargs):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        config.pop("dtype", None)
        return cls(**config)


def _dtype(dtype, kind):
    from . import as_dtype, float32
    dtype = float32 if dtype is None else as_dtype(dtype)
    if kind == "float" and not dtype.is_floating:
        raise ValueError(f"Argument `dtype` is expected to be floating point. Received: <dtype: '{dtype.name}'>.")
    if kind == "numeric" and not (dtype.is_floating or dtype.is_integer):
        raise ValueError(f"Argument `dtype` expected to be numeric or boolean. Received <dtype: '{dtype.name}'>.")
    if kind == "numeric_or_bool" and not (dtype.is_floating or dtype.is_integer or dtype.is_complex or dtype.is_bool):
        raise ValueError(f"Argument `dtype` expected to be numeric or boolean. Received <dtype: '{dtype.name}'>.")
    return dtype


class random_normal_initializer(Initializer):  # noqa: N801 - TF's name
    """Normal draws of mean `mean` and standard deviation `stddev` (floating dtypes)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        _check_kwargs(kwargs)
        from . import random
        dtype = _dtype(dtype, "float")
        if self.seed is None:
            return random.normal(_shape(shape), self.mean, self.stddev, dtype=dtype)
        # As TF: a seeded initializer draws statelessly, so every call gives the same values.
        return random.stateless_normal(_shape(shape), seed=[self.seed, 0], mean=self.mean, stddev=self.stddev,
                                       dtype=dtype)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class random_uniform_initializer(Initializer):  # noqa: N801 - TF's name
    """Uniform draws in [minval, maxval) (floating or integer dtypes)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, **kwargs):
        _check_kwargs(kwargs)
        from . import random
        dtype = _dtype(dtype, "numeric")
        if self.seed is None:
            return random.uniform(_shape(shape), self.minval, self.maxval, dtype=dtype)
        return random.stateless_uniform(_shape(shape), seed=[self.seed, 0], minval=self.minval, maxval=self.maxval,
                                        dtype=dtype)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class zeros_initializer(Initializer):  # noqa: N801 - TF's name
    def __call__(self, shape, dtype=None, **kwargs):
        _check_kwargs(kwargs)
        from . import zeros
        return zeros(_shape(shape), dtype=_dtype(dtype, "numeric_or_bool"))


class ones_initializer(Initializer):  # noqa: N801 - TF's name
    def __call__(self, shape, dtype=None, **kwargs):
        _check_kwargs(kwargs)
        from . import ones
        return ones(_shape(shape), dtype=_dtype(dtype, "numeric_or_bool"))


class constant_initializer(Initializer):  # noqa: N801 - TF's name
    """`value` (a scalar filling the shape, or as many values as the shape holds, in row-major
    order); dtype None takes the value's own (int32 for Python ints, float32 for floats)."""

    def __init__(self, value=0):
        if not (_np.isscalar(value) or isinstance(value, (list, tuple, _np.ndarray, _core.Tensor))):
            raise TypeError(f"Invalid type for initial value={value} of type: {type(value).__name__}. Expected "
                            "Python scalar, list or tuple of values, or numpy.ndarray.")
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        _check_kwargs(kwargs)
        from . import as_dtype, constant
        shape = _shape(shape)
        value = constant(self.value, dtype=None if dtype is None else as_dtype(dtype))
        size, want = int(_np.prod(value.shape.as_list())), int(_np.prod(shape))
        if size not in (1, want):
            raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor {value.numpy()} has "
                            f"{size} elements, but got `shape` {tuple(shape)} with {want} elements).")
        return constant(self.value, dtype=value.dtype, shape=shape)

    def get_config(self):
        return {"value": self.value}


__all__ = ["random_normal_initializer", "random_uniform_initializer", "zeros_initializer", "ones_initializer",
           "constant_initializer"]
