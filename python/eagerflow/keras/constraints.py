"""ef.keras.constraints: Keras' weight constraints (computed by the C++ ones, ef::nn::Constraint).

Give them to layers as kernel_constraint / bias_constraint, as an object (`MaxNorm(2)`), a name
(`"max_norm"`, `"non_neg"`, `"unit_norm"`, `"min_max_norm"`) or any callable w -> projected w.
`layer.apply_constraints()` assigns every constrained trainable weight its projection (Keras does
it right after each optimizer update).
"""
from .. import _core

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg", "unit_norm",
           "min_max_norm", "get", "serialize", "deserialize"]


def _axes(axis):
    return [axis] if isinstance(axis, int) else list(axis)


class Constraint:
    """Base class: subclass it and define __call__(w) returning the projected weight."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _Builtin(Constraint):
    def __call__(self, w):
        return self._ef(w)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.get_config().items())})"


class MaxNorm(_Builtin):
    """w * clip(norm, 0, max_value) / (1e-7 + norm), norms along `axis` (0: each unit's incoming weights)."""

    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis
        self._ef = _core._max_norm(float(max_value), _axes(axis))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(_Builtin):
    """max(w, 0)"""

    def __init__(self):
        self._ef = _core._non_neg()


class UnitNorm(_Builtin):
    """w / (1e-7 + norm along axis)"""

    def __init__(self, axis=0):
        self.axis = axis
        self._ef = _core._unit_norm(_axes(axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(_Builtin):
    """w * (rate * clip(norm, min_value, max_value) + (1 - rate) * norm) / (1e-7 + norm)"""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis
        self._ef = _core._min_max_norm(float(min_value), float(max_value), float(rate), _axes(axis))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm

_BY_NAME = {"max_norm": MaxNorm, "MaxNorm": MaxNorm, "non_neg": NonNeg, "NonNeg": NonNeg, "unit_norm": UnitNorm,
            "UnitNorm": UnitNorm, "min_max_norm": MinMaxNorm, "MinMaxNorm": MinMaxNorm}


def get(identifier):
    """None, a name, a Constraint or a callable -> a constraint (Keras' get)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Could not interpret constraint identifier: {identifier}")
        return _BY_NAME[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier}")


def serialize(constraint):
    """Keras 3's serialized form: {"module", "class_name", "config", "registered_name"}."""
    return {"module": "keras.constraints", "class_name": type(constraint).__name__,
            "config": constraint.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A constraint from serialize's dict (Keras 2's {"class_name", "config"} too) or a name."""
    if isinstance(config, str):
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret constraint identifier: {config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Could not interpret constraint identifier: {name}")
    return cls.from_config(config.get("config") or {})
