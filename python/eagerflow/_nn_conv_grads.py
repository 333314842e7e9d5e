"""tf.nn's convolutions defined as gradients of others: the depthwise backprops (the gradient of
depthwise_conv2d with respect to its input or filter, for a given out_backprop) and
atrous_conv2d_transpose (conv2d_transpose with a dilated filter). Each takes the gradient of
the forward op on a tape, so it is exact, traces and differentiates again. The backprops honour
dilations as TF documents them; TF 2.21's CPU kernels ignore them (the undilated gradient)."""
import numpy as _np

from . import _core
from ._nn_conv import conv2d_transpose, depthwise_conv2d

__all__ = ["atrous_conv2d_transpose", "depthwise_conv2d_backprop_filter", "depthwise_conv2d_backprop_input"]


def _sizes(v, what):
    if isinstance(v, (_core.Tensor, _core.Variable)):
        v = v.numpy()
    v = [int(a) for a in _np.asarray(v).ravel()]
    if len(v) != 4:
        raise ValueError(f"{what} must have 4 entries, got {v}")
    return v


def _vjp(wrt_input, x, w, out_backprop, strides, padding, data_format, dilations, what):
    from ._autodiff import GradientTape
    g = _core.convert_to_tensor(out_backprop)
    with GradientTape() as tape:
        tape.watch(x if wrt_input else w)
        y = depthwise_conv2d(x, w, strides, padding, data_format, dilations)
        if tuple(y._shape_tuple) != tuple(g._shape_tuple):
            raise ValueError(f"{what}: out_backprop has shape {g._shape_tuple}, but the depthwise convolution of these "
                             f"sizes gives {y._shape_tuple}")
        total = _core.reduce_sum(y * g)
    return tape.gradient(total, x if wrt_input else w)


def depthwise_conv2d_backprop_input(input_sizes, filter, out_backprop, strides, padding, data_format="NHWC",  # noqa: A002
                                    dilations=[1, 1, 1, 1], name=None):  # noqa: B006 - TF's default
    """The gradient of depthwise_conv2d with respect to an input of input_sizes."""
    g = _core.convert_to_tensor(out_backprop)
    x = _core.zeros(_sizes(input_sizes, "input_sizes"), dtype=g.dtype)
    return _vjp(True, x, _core.convert_to_tensor(filter, dtype=g.dtype), g, strides, padding, data_format, dilations,
                "depthwise_conv2d_backprop_input")


def depthwise_conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding, data_format="NHWC",  # noqa: A002
                                     dilations=[1, 1, 1, 1], name=None):  # noqa: B006 - TF's default
    """The gradient of depthwise_conv2d with respect to a filter of filter_sizes."""
    g = _core.convert_to_tensor(out_backprop)
    w = _core.zeros(_sizes(filter_sizes, "filter_sizes"), dtype=g.dtype)
    return _vjp(False, _core.convert_to_tensor(input, dtype=g.dtype), w, g, strides, padding, data_format, dilations,
                "depthwise_conv2d_backprop_filter")


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """conv2d_transpose of stride 1 with the filter dilated by rate (the gradient of atrous_conv2d)."""
    rate = int(rate)
    if rate < 1:
        raise ValueError(f"atrous_conv2d_transpose: rate must be >= 1, got {rate}")
    if str(padding).upper() not in ("SAME", "VALID"):
        raise ValueError(f"atrous_conv2d_transpose: padding must be 'SAME' or 'VALID', got {padding!r}")
    return conv2d_transpose(value, filters, output_shape, 1, padding, dilations=rate)
