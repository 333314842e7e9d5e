"""ef.keras.initializers: Keras' weight initializers (C++: eagerflow/nn/initializers.h).

Layers take them as objects (Dense(4, kernel_initializer=HeNormal(seed=1))), by name
("he_normal") or as a callable (shape, dtype) -> array. Called directly they give a tensor:
HeNormal()((3, 4)). With a seed an initializer gives the same values on every call, as
Keras 3's seeded initializers do; without one it draws from the global generator
(ef.random.set_seed)."""
from .. import _core

_i = _core._initializers


class Initializer:
    """Base class: subclass it and define __call__(shape, dtype=None) to write your own."""

    def __call__(self, shape, dtype=None):
        return self._ef_initializer()(list(shape), _core.DType.float32 if dtype is None else _dtype(dtype))

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _dtype(dtype):
    if isinstance(dtype, _core.DType):
        return dtype
    return getattr(_core.DType, str(getattr(dtype, "name", dtype)))


class _Configured(Initializer):
    _args = ()

    def get_config(self):
        return {k: getattr(self, k) for k in self._args}


class Zeros(_Configured):
    def _ef_initializer(self):
        return _i.zeros()


class Ones(_Configured):
    def _ef_initializer(self):
        return _i.ones()


class Constant(_Configured):
    _args = ("value",)

    def __init__(self, value=0.0):
        self.value = float(value)

    def _ef_initializer(self):
        return _i.constant(self.value)


class RandomUniform(_Configured):
    _args = ("minval", "maxval", "seed")

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = float(minval), float(maxval), seed

    def _ef_initializer(self):
        return _i.random_uniform(self.minval, self.maxval, self.seed)


class RandomNormal(_Configured):
    _args = ("mean", "stddev", "seed")

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = float(mean), float(stddev), seed

    def _ef_initializer(self):
        return _i.random_normal(self.mean, self.stddev, self.seed)


class TruncatedNormal(RandomNormal):
    def _ef_initializer(self):
        return _i.truncated_normal(self.mean, self.stddev, self.seed)


class VarianceScaling(_Configured):
    _args = ("scale", "mode", "distribution", "seed")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        self.scale, self.mode, self.distribution, self.seed = float(scale), mode, distribution, seed

    def _ef_initializer(self):
        return _i.variance_scaling(self.scale, self.mode, self.distribution, self.seed)


def _scaling(name, scale, mode, distribution):
    class Scaling(VarianceScaling):
        _args = ("seed",)

        def __init__(self, seed=None):
            super().__init__(scale, mode, distribution, seed)

    Scaling.__name__ = Scaling.__qualname__ = name
    Scaling.__doc__ = f"Keras' {name}: VarianceScaling(scale={scale}, mode='{mode}', distribution='{distribution}')."
    return Scaling


GlorotUniform = _scaling("GlorotUniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _scaling("GlorotNormal", 1.0, "fan_avg", "truncated_normal")
HeNormal = _scaling("HeNormal", 2.0, "fan_in", "truncated_normal")
HeUniform = _scaling("HeUniform", 2.0, "fan_in", "uniform")
LecunNormal = _scaling("LecunNormal", 1.0, "fan_in", "truncated_normal")
LecunUniform = _scaling("LecunUniform", 1.0, "fan_in", "uniform")


class Identity(_Configured):
    _args = ("gain",)

    def __init__(self, gain=1.0):
        self.gain = float(gain)

    def _ef_initializer(self):
        return _i.identity(self.gain)


# Keras' lower-case aliases.
zeros, ones, constant = Zeros, Ones, Constant
glorot_uniform, glorot_normal, he_normal, he_uniform = GlorotUniform, GlorotNormal, HeNormal, HeUniform
lecun_normal, lecun_uniform, identity = LecunNormal, LecunUniform, Identity
random_uniform, random_normal, truncated_normal = RandomUniform, RandomNormal, TruncatedNormal


def get(identifier):
    """An initializer from a name, an Initializer, or None (None)."""
    if identifier is None or isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, str):
        table = {"zeros": Zeros, "ones": Ones, "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
                 "he_normal": HeNormal, "he_uniform": HeUniform, "lecun_normal": LecunNormal,
                 "lecun_uniform": LecunUniform, "random_uniform": RandomUniform, "random_normal": RandomNormal,
                 "truncated_normal": TruncatedNormal, "identity": Identity}
        if identifier not in table:
            raise ValueError(f"Could not interpret initializer identifier: {identifier}")
        return table[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")


__all__ = ["Constant", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform", "Identity", "Initializer",
           "LecunNormal", "LecunUniform", "Ones", "RandomNormal", "RandomUniform", "TruncatedNormal",
           "VarianceScaling", "Zeros", "get"]
