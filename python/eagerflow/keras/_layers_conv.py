"""Keras 3's convolutions that have no C++ layer, written from ef ops: Conv3D, Conv1DTranspose,
Conv3DTranspose, DepthwiseConv1D/2D, SeparableConv1D/2D. Kernels have Keras' layouts, so
get_weights/set_weights exchange weights with Keras."""
import eagerflow as _ef

from . import activations as _activations
from . import regularizers as _regularizers
from ._catalogue_base import CatalogueLayer, initializer, register, regularizer, tuple_of
from ._layers_reshaping import _data_format


def _conv_padding(value):
    value = str(value).lower()
    if value not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same' (case-insensitive). "
                         f"Received: padding={value}")
    return value


def _to_last(x, data_format):
    if data_format == "channels_first":
        rank = len(x.shape)
        return _ef.transpose(x, [0] + list(range(2, rank)) + [1])
    return x


def _from_last(x, data_format):
    if data_format == "channels_first":
        rank = len(x.shape)
        return _ef.transpose(x, [0, rank - 1] + list(range(1, rank - 1)))
    return x


class _BaseConv(CatalogueLayer):
    """What the convolutions share: Keras' argument normalisation, the bias and activation."""
    _rank = 2
    _kernel_args = ("kernel",)

    def _setup(self, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
               bias_initializer, kwargs):
        activity = kwargs.pop("activity_regularizer", None)  # the base Layer applies it
        if isinstance(activity, dict):
            activity = _regularizers.deserialize(activity)
        weight_regularizers = {k + "_regularizer": regularizer(kwargs.pop(k + "_regularizer", None))
                               for k in self._kernel_args + ("bias",)}
        for key in [k for k in kwargs if k.endswith("_constraint")]:
            if kwargs.pop(key) is not None:
                raise NotImplementedError(f"{type(self).__name__}: {key} is not supported in eagerflow")
        super().__init__(**kwargs)
        if activity is not None:
            self.activity_regularizer = _regularizers.get(activity)
        for key, value in weight_regularizers.items():
            setattr(self, key, value)
        for key in [k + "_constraint" for k in self._kernel_args + ("bias",)]:
            setattr(self, key, None)
        self.kernel_size = tuple_of(kernel_size, self._rank, "kernel_size")
        self.strides = tuple_of(strides, self._rank, "strides")
        self.dilation_rate = tuple_of(dilation_rate, self._rank, "dilation_rate")
        self.padding = _conv_padding(padding)
        self.data_format = _data_format(data_format)
        self.activation = _activations.get(activation)
        self.use_bias = bool(use_bias)
        self.bias_initializer = bias_initializer

    def _channels(self, input_shape):
        axis = 1 if self.data_format == "channels_first" else -1
        channels = input_shape[axis]
        if channels is None:
            raise ValueError(f"{type(self).__name__}: the channel dimension of the inputs should be defined. "
                             f"Received input_shape={tuple(input_shape)}")
        return int(channels)

    def _add_bias(self, n):
        if self.use_bias:
            self.bias = self._regularize(self.bias_regularizer, self.add_weight(
                "bias", shape=(n,), initializer=initializer(self.bias_initializer)))

    def _finish(self, y):
        """y in channels_last: bias, activation, then back to data_format."""
        if self.use_bias:
            y = y + self.bias
        return _from_last(self.activation(y), self.data_format)


def _conv_config(*extra):
    return ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate") + extra + (
        "activation", "use_bias")


class _Conv(_BaseConv):
    _config = _conv_config("groups", "kernel_initializer", "bias_initializer", "kernel_regularizer",
                           "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint")

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1, groups=1,
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 **kwargs):
        self._setup(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                    bias_initializer, kwargs)
        if groups != 1:
            raise NotImplementedError(f"{type(self).__name__}: groups={groups} is not supported in eagerflow")
        self.filters, self.groups, self.kernel_initializer = int(filters), 1, kernel_initializer

    def build(self, input_shape):
        shape = self.kernel_size + (self._channels(input_shape), self.filters)
        self.kernel = self._regularize(self.kernel_regularizer, self.add_weight(
            "kernel", shape=shape, initializer=initializer(self.kernel_initializer)))
        self._add_bias(self.filters)

    def call(self, inputs):
        x = _to_last(inputs, self.data_format)
        y = _ef.nn.conv3d(x, self.kernel, strides=(1,) + self.strides + (1,), padding=self.padding.upper(),
                          dilations=(1,) + self.dilation_rate + (1,))
        return self._finish(y)


class Conv3D(_Conv):
    """3-D convolution: kernel (kd, kh, kw, in, filters)."""
    _rank = 3


def _insert_zeros(x, axis, stride):
    """stride - 1 zeros between neighbours along axis (the input of a strided transposed conv)."""
    if stride == 1:
        return x
    shape = list(x.shape)
    y = _ef.stack([x] + [_ef.zeros_like(x)] * (stride - 1), axis=axis + 1)
    merged = shape[:axis] + [None if shape[axis] is None else shape[axis] * stride] + shape[axis + 1:]
    y = _ef.reshape(y, [-1] + [d for d in merged[1:]])
    length = (shape[axis] - 1) * stride + 1
    index = [slice(None)] * len(shape)
    index[axis] = slice(0, length)
    return y[tuple(index)]


def _transpose_length(length, k, padding, output_padding, stride, dilation):
    """Keras' compute_conv_transpose_output_length."""
    k = k + (k - 1) * (dilation - 1)
    if output_padding is None:
        return length * stride + max(k - stride, 0) if padding == "valid" else length * stride
    pad = k // 2 if padding == "same" else 0
    return (length - 1) * stride + k - 2 * pad + output_padding


class _ConvTranspose(_BaseConv):
    """A transposed convolution as the plain convolution it is the gradient of: zeros between the
    inputs (the stride), TF's padding split, a flipped kernel. One graph of ordinary ops, so it
    works on symbolic inputs with an unknown batch and differentiates like any conv."""
    _config = _conv_config("output_padding", "kernel_initializer", "bias_initializer", "kernel_regularizer",
                           "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint")

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        self._setup(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                    bias_initializer, kwargs)
        self.filters, self.kernel_initializer = int(filters), kernel_initializer
        self.output_padding = None if output_padding is None else tuple_of(output_padding, self._rank,
                                                                           "output_padding")
        if self.output_padding is not None:
            for p, s in zip(self.output_padding, self.strides):
                if p >= s:
                    raise ValueError(f"Strides {self.strides} must be greater than output padding "
                                     f"{self.output_padding}.")

    def build(self, input_shape):
        # Keras' layout: (*kernel_size, filters, in_channels).
        shape = self.kernel_size + (self.filters, self._channels(input_shape))
        self.kernel = self._regularize(self.kernel_regularizer, self.add_weight(
            "kernel", shape=shape, initializer=initializer(self.kernel_initializer)))
        self._add_bias(self.filters)

    def call(self, inputs):
        x = _to_last(inputs, self.data_format)
        pads = [[0, 0]]
        for i in range(self._rank):
            axis, k, s, d = i + 1, self.kernel_size[i], self.strides[i], self.dilation_rate[i]
            length = x.shape[axis]
            if length is None:
                raise ValueError(f"{type(self).__name__}: the spatial dimensions of the input must be known, "
                                 f"got shape {tuple(inputs.shape)}")
            op = None if self.output_padding is None else self.output_padding[i]
            out = _transpose_length(length, k, self.padding, op, s, d)
            k_eff = (k - 1) * d + 1
            before = max((length - 1) * s + k_eff - out, 0) // 2  # TF's split of the conv's padding
            x = _insert_zeros(x, axis, s)
            left = k_eff - 1 - before
            right = out + k_eff - 1 - ((length - 1) * s + 1) - left
            pads.append([left, right])
        x = _ef.pad(x, pads + [[0, 0]])
        # The conv whose input gradient this is: spatial axes flipped, in/out swapped.
        kernel = _ef.reverse(self.kernel, list(range(self._rank)))
        kernel = _ef.transpose(kernel, list(range(self._rank)) + [self._rank + 1, self._rank])
        ones = (1,) * self._rank
        if self._rank == 1:
            y = _ef.nn.conv1d(x, kernel, stride=1, padding="VALID", dilations=self.dilation_rate)
        elif self._rank == 2:
            y = _ef.nn.conv2d(x, kernel, strides=1, padding="VALID", dilations=self.dilation_rate)
        else:
            y = _ef.nn.conv3d(x, kernel, strides=(1,) + ones + (1,), padding="VALID",
                              dilations=(1,) + self.dilation_rate + (1,))
        return self._finish(y)


class Conv1DTranspose(_ConvTranspose):
    """1-D transposed convolution: kernel (k, filters, in)."""
    _rank = 1


class Conv3DTranspose(_ConvTranspose):
    """3-D transposed convolution: kernel (kd, kh, kw, filters, in)."""
    _rank = 3


class _Depthwise(_BaseConv):
    _kernel_args = ("depthwise",)
    _config = ("depth_multiplier", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
               "activation", "use_bias", "depthwise_initializer", "bias_initializer", "depthwise_regularizer",
               "bias_regularizer", "activity_regularizer", "depthwise_constraint", "bias_constraint")

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        self._setup(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                    bias_initializer, kwargs)
        self.depth_multiplier, self.depthwise_initializer = int(depth_multiplier), depthwise_initializer

    def build(self, input_shape):
        channels = self._channels(input_shape)
        shape = self.kernel_size + (channels, self.depth_multiplier)
        self.kernel = self._regularize(self.depthwise_regularizer, self.add_weight(
            "kernel", shape=shape, initializer=initializer(self.depthwise_initializer)))
        self._add_bias(channels * self.depth_multiplier)

    def _depthwise(self, x):
        """Channels-last depthwise conv of x; 1-D runs as 2-D with a height of one."""
        kernel, strides, dilations = self.kernel, self.strides, self.dilation_rate
        if self._rank == 1:
            x, kernel = _ef.expand_dims(x, 1), _ef.expand_dims(kernel, 0)
            strides, dilations = (1,) + strides, (1,) + dilations
        y = _ef.nn.depthwise_conv2d(x, kernel, strides=(1,) + strides + (1,), padding=self.padding.upper(),
                                    dilations=dilations)
        return _ef.squeeze(y, [1]) if self._rank == 1 else y

    def call(self, inputs):
        return self._finish(self._depthwise(_to_last(inputs, self.data_format)))


class DepthwiseConv1D(_Depthwise):
    """Per-channel 1-D convolution: kernel (k, in, depth_multiplier)."""
    _rank = 1


class DepthwiseConv2D(_Depthwise):
    """Per-channel 2-D convolution: kernel (kh, kw, in, depth_multiplier)."""
    _rank = 2


class _Separable(_Depthwise):
    _kernel_args = ("depthwise", "pointwise")
    _config = ("depth_multiplier", "filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
               "activation", "use_bias", "depthwise_initializer", "pointwise_initializer", "bias_initializer",
               "depthwise_regularizer", "pointwise_regularizer", "bias_regularizer", "activity_regularizer",
               "depthwise_constraint", "pointwise_constraint", "bias_constraint")

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, depthwise_initializer, bias_initializer, **kwargs)
        self.filters, self.pointwise_initializer = int(filters), pointwise_initializer

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.depthwise_kernel = self._regularize(self.depthwise_regularizer, self.add_weight(
            "depthwise_kernel", shape=self.kernel_size + (channels, self.depth_multiplier),
            initializer=initializer(self.depthwise_initializer)))
        self.pointwise_kernel = self._regularize(self.pointwise_regularizer, self.add_weight(
            "pointwise_kernel", shape=(1,) * self._rank + (channels * self.depth_multiplier, self.filters),
            initializer=initializer(self.pointwise_initializer)))
        self._add_bias(self.filters)

    @property
    def kernel(self):
        return self.depthwise_kernel

    @kernel.setter
    def kernel(self, value):  # _Depthwise.build is not used here
        pass

    def call(self, inputs):
        y = self._depthwise(_to_last(inputs, self.data_format))
        if self._rank == 1:
            y = _ef.nn.conv1d(y, self.pointwise_kernel, stride=1, padding="VALID")
        else:
            y = _ef.nn.conv2d(y, self.pointwise_kernel, strides=1, padding="VALID")
        return self._finish(y)


class SeparableConv1D(_Separable):
    """Depthwise then 1x1 convolution (1-D)."""
    _rank = 1


class SeparableConv2D(_Separable):
    """Depthwise then 1x1 convolution (2-D)."""
    _rank = 2


Convolution3D = Conv3D
Convolution1DTranspose, Convolution3DTranspose = Conv1DTranspose, Conv3DTranspose
SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D

register(Conv3D, Conv1DTranspose, Conv3DTranspose, DepthwiseConv1D, DepthwiseConv2D, SeparableConv1D,
         SeparableConv2D)
