"""ef.keras.regularizers: Keras' weight penalties (computed by the C++ ones, ef::nn::Regularizer).

Give them to layers as kernel_regularizer / bias_regularizer / activity_regularizer, as an object
(`L2(0.01)`), a name (`"l1"`, `"l2"`, `"l1_l2"`: factors 0.01) or any callable weight -> scalar
(subclass Regularizer and define __call__). `layer.losses` lists the penalties.
"""
from .. import _core

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "get", "serialize", "deserialize",
           "OrthogonalRegularizer", "orthogonal_regularizer"]


def _factor(value, name):
    if value is None:
        return 0.01 if name != "l1l2" else 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0 or \
            value == float("inf"):
        raise ValueError(f"Invalid value for argument {name}: expected a non-negative float. Received: {name}={value}")
    return float(value)


class Regularizer:
    """Base class: subclass it and define __call__(x) returning a scalar tensor (written with ef ops)."""

    def __call__(self, x):
        return 0.0

    def get_config(self):
        raise NotImplementedError(f"{self} does not implement get_config()")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x**2). Keras 3's class defaults to 0 for both (the name "l1_l2", 0.01)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _factor(0.0 if l1 is None else l1, "l1")
        self.l2 = _factor(0.0 if l2 is None else l2, "l2")
        self._ef = _core.Regularizer(self.l1, self.l2)

    def __call__(self, x):
        return self._ef(x)

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.get_config().items())})"


class L1(L1L2):
    """l1 * sum(|x|)"""

    def __init__(self, l1=0.01):
        super().__init__(l1=_factor(l1, "l1"), l2=0.0)

    def get_config(self):
        return {"l1": self.l1}


class L2(L1L2):
    """l2 * sum(x**2)"""

    def __init__(self, l2=0.01):
        super().__init__(l1=0.0, l2=_factor(l2, "l2"))

    def get_config(self):
        return {"l2": self.l2}


l1 = L1
l2 = L2
l1_l2 = L1L2

from ._regularizer_orthogonal import OrthogonalRegularizer, orthogonal_regularizer  # noqa: E402

_BY_NAME = {"l1": L1, "L1": L1, "l2": L2, "L2": L2, "L1L2": L1L2, "orthogonal_regularizer": OrthogonalRegularizer,
            "OrthogonalRegularizer": OrthogonalRegularizer}


def get(identifier):
    """None, a name, a config dict, a Regularizer or a callable -> a regularizer (Keras' get)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier in ("l1_l2", "l1l2"):
            return L1L2(l1=0.01, l2=0.01)  # Keras' documented defaults for the name
        if identifier not in _BY_NAME:
            raise ValueError(f"Could not interpret regularizer identifier: {identifier}")
        return _BY_NAME[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier}")


def serialize(regularizer):
    """Keras 3's serialized form: {"module", "class_name", "config", "registered_name"}."""
    return {"module": "keras.regularizers", "class_name": type(regularizer).__name__,
            "config": regularizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A regularizer from serialize's dict (Keras 2's {"class_name", "config"} too) or a name."""
    if isinstance(config, str):
        return get(config)
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or {"L1": L1, "L2": L2, "L1L2": L1L2,
                                               "OrthogonalRegularizer": OrthogonalRegularizer}.get(name)
    if cls is None:
        raise ValueError(f"Unknown regularizer: {name}")
    return cls(**config.get("config", {}))
