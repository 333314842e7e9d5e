"""ef.keras.backend: Keras 3's backend utilities (floatx, epsilon, image_data_format, dtype rules).

backend() is "tensorflow": Keras code branches on it to take its TensorFlow path (tf.data, tf ops),
and under eagerflow that path is the one that runs (`import eagerflow as tf`); "jax" or "torch"
would send such code to libraries that are not here, and a new name would match no branch.
"""
import collections as _collections
import gc as _gc

from .. import _core
from . import config as _config
from .ops._dtypes import is_float_dtype, is_int_dtype, result_type, standardize_dtype  # noqa: F401

floatx = _config.floatx
set_floatx = _config.set_floatx
epsilon = _config.epsilon
set_epsilon = _config.set_epsilon
image_data_format = _config.image_data_format

_UIDS = _collections.defaultdict(int)


def backend():
    return "tensorflow"


def set_image_data_format(data_format):
    """Only "channels_last": eagerflow's image layers take NHWC data (Keras' default)."""
    fmt = str(data_format).lower()
    if fmt not in ("channels_first", "channels_last"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: data_format={data_format}")
    if fmt == "channels_first":
        raise ValueError("eagerflow's Keras layers take channels_last (NHWC) data only; "
                         "the keras.ops functions take data_format='channels_first' per call")


def get_uid(prefix=""):
    """Keras' per-prefix counter: 1, 2, 3, ... for each prefix (reset by clear_session)."""
    _UIDS[prefix] += 1
    return _UIDS[prefix]


def clear_session(free_memory=True):
    """Forgets get_uid's counters and the layer-name counters (the next Dense is "dense" again, as
    Keras'), and frees what no model holds any more."""
    _UIDS.clear()
    _core._reset_layer_names()
    from .. import _layers
    _layers._names.clear()
    if free_memory:
        _gc.collect()


def is_keras_tensor(x):
    """True for the tensors of the functional API (ef.keras.Input and layers called on it)."""
    return isinstance(x, _core.Tensor) and bool(x.is_keras_tensor)


__all__ = ["backend", "clear_session", "epsilon", "floatx", "get_uid", "image_data_format", "is_float_dtype",
           "is_int_dtype", "is_keras_tensor", "result_type", "set_epsilon", "set_floatx", "set_image_data_format",
           "standardize_dtype"]
