"""Small keras.utils helpers: set_random_seed, (un)pack_x_y_sample_weight, standardize_dtype,
the interactive-logging switch, and Config."""
import json
import random

import numpy as np

_interactive = [True]


def set_random_seed(seed):
    """Seeds Python's random, NumPy's global generator and ef's global seed (ef.random.set_seed),
    so a program's shuffles and initializers repeat."""
    if not isinstance(seed, int):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed} (of type {type(seed)})")
    import eagerflow as ef
    random.seed(seed)
    np.random.seed(seed)
    ef.random.set_seed(seed)


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The tuple fit unpacks: x alone (in a 1-tuple if x is a tuple or list), (x, y) or (x, y, sample_weight)."""
    if y is None:
        return (x,) if isinstance(x, (tuple, list)) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def unpack_x_y_sample_weight(data):
    """(x, y, sample_weight) of a batch: a tuple or list of 1 to 3 items, or x alone."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return (data, None, None)
    if len(data) == 1:
        return (data[0], None, None)
    if len(data) == 2:
        return (data[0], data[1], None)
    if len(data) == 3:
        return (data[0], data[1], data[2])
    raise ValueError("Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, "
                     f"found: {data}")


_ALLOWED = {"float16", "float32", "float64", "bfloat16", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
            "int32", "int64", "bool", "string", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2"}


def standardize_dtype(dtype):
    """A dtype's name as Keras writes it ("float32", "int64", ...): Python's int is "int64", float
    "float32"; None is floatx(); a name Keras does not know is a ValueError."""
    if dtype is None:
        from ..config import floatx
        return floatx()
    simple = {int: "int64", "int": "int64", float: "float32", bool: "bool", str: "string"}
    if isinstance(dtype, (type, str)) and dtype in simple:
        return simple[dtype]
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if not isinstance(name, str):
        name = getattr(dtype, "__name__", str(dtype))
    if name not in _ALLOWED:
        raise ValueError(f"Invalid dtype: {dtype}")
    return name


def enable_interactive_logging():
    """Progress bars and messages go to stdout (the default)."""
    _interactive[0] = True


def disable_interactive_logging():
    """Progress bars and messages go to Python's logging (INFO) instead of stdout."""
    _interactive[0] = False


def is_interactive_logging_enabled():
    return _interactive[0]


def print_msg(message, line_break=True):
    import sys
    if _interactive[0]:
        sys.stdout.write(message + ("\n" if line_break else ""))
        sys.stdout.flush()
    else:
        import logging
        logging.getLogger("keras").info(message)


class Config:
    """A dict whose keys are also attributes, which freeze() makes read-only (keras.utils.Config)."""

    __attr_names__ = ("_config", "_frozen")

    def __init__(self, **kwargs):
        object.__setattr__(self, "_config", dict(kwargs))
        object.__setattr__(self, "_frozen", False)

    @property
    def frozen(self):
        return self._frozen

    def freeze(self):
        object.__setattr__(self, "_frozen", True)

    def unfreeze(self):
        object.__setattr__(self, "_frozen", False)

    def _check(self):
        if self._frozen:
            raise ValueError("Cannot mutate attribute(s) because the config is frozen.")

    def as_dict(self):
        return dict(self._config)

    def to_json(self):
        return json.dumps(self._config)

    def keys(self):
        return self._config.keys()

    def values(self):
        return self._config.values()

    def items(self):
        return self._config.items()

    def pop(self, *args):
        self._check()
        return self._config.pop(*args)

    def update(self, *args, **kwargs):
        self._check()
        return self._config.update(*args, **kwargs)

    def get(self, keyname, value=None):
        return self._config.get(keyname, value)

    def __setattr__(self, name, value):
        self._check()
        self._config[name] = value

    def __getattr__(self, name):
        config = object.__getattribute__(self, "_config")
        if name in config:
            return config[name]
        raise AttributeError(f"Unknown attribute: '{name}'")

    def __setitem__(self, key, item):
        self._check()
        self._config[key] = item

    def __getitem__(self, key):
        return self._config[key]

    def __delitem__(self, key):
        self._check()
        del self._config[key]

    def __repr__(self):
        return f"<Config {self._config}>"

    def __iter__(self):
        return iter(self._config.keys())

    def __len__(self):
        return len(self._config)

    def __contains__(self, item):
        return item in self._config


def is_keras_tensor(x):
    """Whether x is a symbolic tensor of the functional API (from ef.keras.Input or a layer
    called on one), not a value."""
    return getattr(x, "is_keras_tensor", False) is True
