"""keras.utils.to_categorical and normalize: NumPy in, NumPy out (as Keras); a Tensor in, a
Tensor out."""
import numpy as np

from ... import _core


def _is_tensor(x):
    return isinstance(x, (_core.Tensor, _core.Variable))


def to_categorical(x, num_classes=None):
    """One-hot rows of the class indices in x (float64 for NumPy input, as Keras; float32 for a
    Tensor). A trailing axis of size 1 is dropped first; num_classes defaults to max(x) + 1."""
    import eagerflow as ef
    if _is_tensor(x):
        shape = list(x.shape)
        if len(shape) > 1 and shape[-1] == 1:
            x = ef.reshape(x, [-1 if d is None else d for d in shape[:-1]])
        if num_classes is None:
            num_classes = int(ef.reduce_max(x).numpy()) + 1
        return ef.one_hot(ef.cast(x, "int64"), int(num_classes))
    x = np.array(x, dtype="int64")
    shape = x.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    x = x.reshape(-1)
    if not num_classes:
        num_classes = np.max(x) + 1
    out = np.zeros((x.shape[0], num_classes))
    out[np.arange(x.shape[0]), x] = 1
    return out.reshape(shape + (num_classes,))


def normalize(x, axis=-1, order=2):
    """x divided by its `order`-norm along axis (a zero norm counts as 1 for NumPy input; a
    Tensor's L2 norm is floored at sqrt(1e-7), as keras.ops.normalize)."""
    import eagerflow as ef
    if isinstance(x, np.ndarray):
        norm = np.atleast_1d(np.linalg.norm(x, order, axis))
        norm[norm == 0] = 1
        axis = axis or -1
        return x / np.expand_dims(norm, axis)
    if not isinstance(order, int) or not order >= 1:
        raise ValueError(f"Argument `order` must be an int >= 1. Received: order={order}")
    x = ef.convert_to_tensor(x)
    if len(x.shape) == 0:
        x = ef.expand_dims(x, 0)
    if order == 2:
        inv = ef.math.rsqrt(ef.reduce_sum(ef.square(x), axis=axis, keepdims=True))
        return x * ef.minimum(inv, ef.cast(1.0 / 1e-7, x.dtype))
    norm = ef.norm(x, ord=order, axis=axis, keepdims=True)
    return x / ef.maximum(norm, ef.cast(1e-7, x.dtype))
