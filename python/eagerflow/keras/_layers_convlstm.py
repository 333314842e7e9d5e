"""Keras 3's ConvLSTM1D/2D/3D written from ef ops: an LSTM whose gates are convolutions, over the
time axis (batch, time, *spatial, channels), unrolled at trace time."""
import eagerflow as _ef

from . import activations as _activations
from ._catalogue_base import CatalogueLayer, initializer, register, regularizer, tuple_of
from ._layers_conv import _conv_padding
from ._layers_reshaping import _data_format
from ._layers_rnn import _no_dropout, _recurrent_initializer
from . import initializers as _initializers


def _conv(x, kernel, rank, strides, padding, dilation):
    if rank == 1:
        return _ef.nn.conv1d(x, kernel, stride=strides[0], padding=padding, dilations=dilation)
    if rank == 2:
        return _ef.nn.conv2d(x, kernel, strides=strides, padding=padding, dilations=dilation)
    return _ef.nn.conv3d(x, kernel, strides=(1,) + tuple(strides) + (1,), padding=padding,
                         dilations=(1,) + tuple(dilation) + (1,))


class _ConvLSTM(CatalogueLayer):
    _rank = 2
    _config = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll", "zero_output_for_mask",
               "filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "activation",
               "recurrent_activation", "use_bias", "kernel_initializer", "recurrent_initializer", "bias_initializer",
               "unit_forget_bias", "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
               "activity_regularizer", "kernel_constraint", "recurrent_constraint", "bias_constraint", "dropout",
               "recurrent_dropout", "seed")

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 activation="tanh", recurrent_activation="sigmoid", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", unit_forget_bias=True,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        weight_regularizers = {k + "_regularizer": regularizer(kwargs.pop(k + "_regularizer", None))
                               for k in ("kernel", "recurrent", "bias")}
        activity = kwargs.pop("activity_regularizer", None)
        for key in [k for k in kwargs if k.endswith("_constraint")]:
            if kwargs.pop(key) is not None:
                raise NotImplementedError(f"{type(self).__name__}: {key} is not supported in eagerflow")
        super().__init__(**kwargs)
        _no_dropout(type(self).__name__, dropout, recurrent_dropout)
        if activity is not None:
            self.activity_regularizer = regularizer(activity)
        if stateful:
            raise NotImplementedError(f"{type(self).__name__}(stateful=True) is not supported in eagerflow")
        if data_format is not None and str(data_format).lower() == "channels_first":
            raise NotImplementedError(f"{type(self).__name__}: data_format='channels_first' is not supported in "
                                      "eagerflow")
        self.filters = int(filters)
        self.kernel_size = tuple_of(kernel_size, self._rank, "kernel_size")
        self.strides = tuple_of(strides, self._rank, "strides")
        self.dilation_rate = tuple_of(dilation_rate, self._rank, "dilation_rate")
        self.padding, self.data_format = _conv_padding(padding), _data_format(data_format)
        self.activation = _activations.get(activation)
        self.recurrent_activation = _activations.get(recurrent_activation)
        self.use_bias, self.unit_forget_bias = bool(use_bias), bool(unit_forget_bias)
        self.kernel_initializer, self.recurrent_initializer = kernel_initializer, recurrent_initializer
        self.bias_initializer = bias_initializer
        self.dropout, self.recurrent_dropout, self.seed = dropout, recurrent_dropout, seed
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), False, bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        for key in ("kernel", "recurrent", "bias"):
            setattr(self, key + "_regularizer", weight_regularizers[key + "_regularizer"])
            setattr(self, key + "_constraint", None)

    def build(self, input_shape):
        if len(input_shape) != self._rank + 3:
            raise ValueError(f"{type(self).__name__} expects inputs of rank {self._rank + 3} (batch, time, "
                             f"*spatial, channels). Received input_shape={tuple(input_shape)}")
        channels, f = int(input_shape[-1]), self.filters
        # Keras' weight paths: conv_lstm2d/conv_lstm_cell/kernel.
        self.kernel = self._regularize(self.kernel_regularizer, self.add_weight(
            "conv_lstm_cell/kernel", shape=self.kernel_size + (channels, 4 * f),
            initializer=initializer(self.kernel_initializer)))
        self.recurrent_kernel = self._regularize(self.recurrent_regularizer, self.add_weight(
            "conv_lstm_cell/recurrent_kernel", shape=self.kernel_size + (f, 4 * f),
            initializer=_recurrent_initializer(self.recurrent_initializer)))
        if self.use_bias:
            init = initializer(self.bias_initializer)
            if self.unit_forget_bias:
                base = init

                class _ForgetOnes(_initializers.Initializer):
                    def __call__(self, shape, dtype=None):
                        return _ef.concat([base([f], dtype), _ef.ones([f], dtype or _ef.float32),
                                           base([2 * f], dtype)], 0)
                init = _ForgetOnes()
            self.bias = self._regularize(self.bias_regularizer,
                                         self.add_weight("conv_lstm_cell/bias", shape=(4 * f,), initializer=init))

    def call(self, inputs, training=False):
        steps = inputs.shape[1]
        if steps is None:
            raise ValueError(f"{type(self).__name__} unrolls the time axis, so its length must be known "
                             f"(got shape {tuple(inputs.shape)})")
        padding = self.padding.upper()
        x0 = inputs[:, 0]
        # The zero state has the input convolution's output shape (whatever the batch).
        zero_kernel = _ef.zeros(self.kernel_size + (int(inputs.shape[-1]), self.filters), inputs.dtype)
        h = _conv(_ef.zeros_like(x0), zero_kernel, self._rank, self.strides, padding, self.dilation_rate)
        c = h
        outputs = []
        for t in (range(steps - 1, -1, -1) if self.go_backwards else range(steps)):
            z = _conv(inputs[:, t], self.kernel, self._rank, self.strides, padding, self.dilation_rate)
            if self.use_bias:
                z = z + self.bias
            z = z + _conv(h, self.recurrent_kernel, self._rank, (1,) * self._rank, "SAME", (1,) * self._rank)
            i, f, g, o = _ef.split(z, 4, axis=-1)
            c = self.recurrent_activation(f) * c + self.recurrent_activation(i) * self.activation(g)
            h = self.recurrent_activation(o) * self.activation(c)
            outputs.append(h)
        result = _ef.stack(outputs, axis=1) if self.return_sequences else h
        return [result, h, c] if self.return_state else result


class ConvLSTM1D(_ConvLSTM):
    """ConvLSTM over (batch, time, length, channels)."""
    _rank = 1


class ConvLSTM2D(_ConvLSTM):
    """ConvLSTM over (batch, time, rows, cols, channels)."""
    _rank = 2


class ConvLSTM3D(_ConvLSTM):
    """ConvLSTM over (batch, time, depth, rows, cols, channels)."""
    _rank = 3


register(ConvLSTM1D, ConvLSTM2D, ConvLSTM3D)
