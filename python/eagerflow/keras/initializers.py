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
    _args = ("seed", "scale", "mode", "distribution", "input_axes", "output_axes")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, input_axes=None,
                 output_axes=None):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be positive float. Received: scale={scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: expected one of {{'fan_in', 'fan_out', 'fan_avg'}}. "
                             f"Received: mode={mode}")
        if distribution not in ("uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"Invalid `distribution` argument: expected one of {{'uniform', 'truncated_normal', "
                             f"'untruncated_normal'}}. Received: distribution={distribution}")
        self.scale, self.mode, self.distribution, self.seed = float(scale), mode, distribution, seed
        self.input_axes = None if input_axes is None else list(input_axes)
        self.output_axes = None if output_axes is None else list(output_axes)

    def __call__(self, shape, dtype=None):
        scale = self.scale
        if self.input_axes is not None and self.output_axes is not None:
            # Keras' fans from the given axes: the C++ draw (fans from the shape's layout) gets the
            # scale that gives the same variance.
            from ._initializers_more import fan_scale
            scale = scale / fan_scale(self.mode, shape, self.input_axes, self.output_axes) * \
                fan_scale(self.mode, shape, None, None)
        init = _i.variance_scaling(scale, self.mode, self.distribution, self.seed)
        return init(list(shape), _core.DType.float32 if dtype is None else _dtype(dtype))

    def _ef_initializer(self):
        return _i.variance_scaling(self.scale, self.mode, self.distribution, self.seed)


def _scaling(name, scale, mode, distribution):
    class Scaling(VarianceScaling):
        _args = ("seed", "input_axes", "output_axes")

        def __init__(self, seed=None, input_axes=None, output_axes=None):
            super().__init__(scale, mode, distribution, seed, input_axes, output_axes)

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


from ._initializers_more_classes import Orthogonal, STFT  # noqa: E402

IdentityInitializer = Identity
OrthogonalInitializer = orthogonal = Orthogonal
STFTInitializer = stft = STFT
variance_scaling = VarianceScaling

_BY_NAME = {"zeros": Zeros, "ones": Ones, "constant": Constant, "glorot_uniform": GlorotUniform,
            "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform, "lecun_normal": LecunNormal,
            "lecun_uniform": LecunUniform, "random_uniform": RandomUniform, "random_normal": RandomNormal,
            "truncated_normal": TruncatedNormal, "identity": Identity, "orthogonal": Orthogonal, "stft": STFT,
            "variance_scaling": VarianceScaling}
_BY_NAME.update({c.__name__: c for c in set(_BY_NAME.values())})
_BY_NAME.update({"IdentityInitializer": Identity, "OrthogonalInitializer": Orthogonal, "STFTInitializer": STFT})


def serialize(initializer):
    """Keras 3's serialized form: {"module", "class_name", "config", "registered_name"}."""
    return {"module": "keras.initializers", "class_name": type(initializer).__name__,
            "config": initializer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """An initializer from serialize's dict (or Keras 2's {"class_name", "config"}) or a name."""
    if isinstance(config, str):
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret initializer identifier: {config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Could not interpret initializer identifier: {name}")
    return cls.from_config(config.get("config") or {})


def get(identifier):
    """An initializer from a name, a serialized dict, an Initializer, or None (None)."""
    if identifier is None or isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Could not interpret initializer identifier: {identifier}")
        return _BY_NAME[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")


__all__ = ["Constant", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform", "Identity", "IdentityInitializer",
           "Initializer", "LecunNormal", "LecunUniform", "Ones", "Orthogonal", "OrthogonalInitializer", "RandomNormal",
           "RandomUniform", "STFT", "STFTInitializer", "TruncatedNormal", "VarianceScaling", "Zeros", "deserialize",
           "get", "orthogonal", "serialize", "stft", "variance_scaling"]
