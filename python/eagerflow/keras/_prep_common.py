"""What the Python preprocessing layers share: running a NumPy computation as an op (eagerly, or as a
host call inside ef.function / fit / Dataset.map) and Keras' categorical encodings."""
import numpy as np

from .. import _core
from .._layers import Layer


def host(fn, inputs, shape, dtype):
    """fn(*numpy arrays) as a tensor of `dtype`: computed at once eagerly; inside a trace, a host
    call run on each execution (`shape` is the output's static shape, None for unknown dims)."""
    inputs = [x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x) for x in inputs]
    from .._tf_misc import as_dtype
    dtype = as_dtype(dtype)
    if _core._in_trace():
        from .._functional_ops import numpy_function
        return numpy_function(fn, inputs, _core.TensorSpec(list(shape), dtype))
    out = fn(*[x.numpy() for x in inputs])
    return _core.convert_to_tensor(out if dtype.name == "string" else np.asarray(out), dtype=dtype)


def one_input(inputs):
    """A Python list of strings or numbers (nested or not) as one tensor: a layer's call takes a
    list as several inputs, but Keras' preprocessing layers read ["a b", "c"] as one batch."""
    def plain(v):
        if isinstance(v, (list, tuple)):
            return all(plain(u) for u in v)
        return isinstance(v, (str, bytes, int, float, np.generic))
    if isinstance(inputs, (list, tuple)) and inputs and plain(inputs):
        return _core.convert_to_tensor(list(inputs))
    return inputs


def static_shape(x):
    return tuple(x._shape_tuple)


def encode(ids, output_mode, depth, weights=None, out_dtype="float32"):
    """Keras' encode_categorical_inputs on NumPy ids: one_hot per element ((..., 1) squeezed),
    multi_hot / count over the last axis (a rank-1 input is one sample)."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim == 0:
        ids = ids[None]
    if output_mode == "one_hot":
        if ids.ndim > 1 and ids.shape[-1] == 1:
            ids = ids[..., 0]
        valid = (ids >= 0) & (ids < depth)
        out = np.zeros(ids.shape + (depth,), np.float64)
        idx = np.nonzero(valid)
        out[idx + (ids[idx],)] = 1
        return out.astype(out_dtype)
    flat = ids.reshape(-1, ids.shape[-1]) if ids.ndim > 1 else ids[None]
    out = np.zeros((flat.shape[0], depth), np.float64)
    for r, row in enumerate(flat):
        row = row[(row >= 0) & (row < depth)]
        if output_mode == "multi_hot":
            out[r, row] = 1
        else:
            np.add.at(out[r], row, 1)
    if weights is not None:
        out = out * np.asarray(weights, np.float64)
    out = out.reshape(ids.shape[:-1] + (depth,)) if ids.ndim > 1 else out[0]
    return out.astype(out_dtype)


def encoded_shape(in_shape, output_mode, depth):
    in_shape = tuple(in_shape)
    if not in_shape:
        in_shape = (1,)
    if output_mode == "one_hot":
        if len(in_shape) > 1 and in_shape[-1] == 1:
            return in_shape[:-1] + (depth,)
        return in_shape + (depth,)
    return in_shape[:-1] + (depth,)


def check_mode(layer, mode, allowed):
    if mode == "tf-idf":
        mode = "tf_idf"
    if mode not in allowed:
        raise ValueError(f"Invalid value for argument `output_mode` of {layer}. Expected one of "
                         f"{', '.join(repr(a) for a in allowed)}. Received: output_mode={mode!r}")
    return mode


def as_numpy(data):
    """adapt's data as NumPy: an array, a list, a tensor, or a RaggedTensor's rows (a list)."""
    from ..ragged import RaggedTensor
    if isinstance(data, RaggedTensor):
        return data.to_list()
    if isinstance(data, _core.Tensor):
        return data.numpy()
    if isinstance(data, _core.Variable):
        return data.numpy()
    return np.asarray(data)


def batches(data, steps=None):
    """adapt's data as a list of batches: a Dataset's (or an iterable's), or the one array."""
    from ..data import Dataset
    if isinstance(data, Dataset) or (hasattr(data, "__iter__") and not isinstance(
            data, (list, tuple, np.ndarray, str, bytes, _core.Tensor))):
        out = []
        for i, b in enumerate(data):
            if steps is not None and i >= steps:
                break
            if isinstance(b, tuple):  # (x, y) elements: adapt reads the features
                b = b[0]
            out.append(as_numpy(b))
        return out
    return [as_numpy(data)]


class PreprocessingLayer(Layer):
    """A Keras preprocessing layer: not trainable, no gradient through its lookups."""

    def __init__(self, name=None, **kwargs):
        trainable = kwargs.pop("trainable", True)
        dtype = kwargs.pop("dtype", None)
        kwargs.pop("autocast", None)
        for k in ("input_shape", "batch_size", "input_dim"):
            kwargs.pop(k, None)
        if kwargs:
            raise ValueError(f"Unrecognized keyword argument(s): {kwargs}")
        super().__init__(name=name, trainable=trainable, dtype=self._policy(dtype))

    @staticmethod
    def _policy(dtype):
        # Keras gives lookup layers a vocabulary dtype ("string", "int64"); the float policy stays the model's.
        if dtype is None:
            return None
        name = getattr(dtype, "name", dtype)
        if isinstance(name, str) and name in ("string", "int64", "int32"):
            return None
        return dtype
