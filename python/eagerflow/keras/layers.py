"""ef.keras.layers: the C++ layers, and Layer to subclass in Python."""
from .. import _core
from .._layers import (Activation, Add, AveragePooling2D, AvgPool2D, BatchNormalization, Concatenate,  # noqa: F401
                       Dropout, Embedding, Flatten, GlobalAveragePooling2D, Input, InputLayer, Layer,
                       LayerNormalization, MaxPool2D, MaxPooling2D, Reshape, TensorShape)
from ..saved_model import SavedModelLayer as TFSMLayer  # noqa: F401
from . import activations, constraints, regularizers  # noqa: F401 - ef.keras.<module> once layers is imported

# Issue 17's layers (python/src/layers_keras.cpp): every Layer also has add_loss(x), .losses,
# apply_constraints() and activity_regularizer.
Lambda = _core.Lambda
Rescaling = _core.Rescaling
Normalization = _core.Normalization
LeakyReLU = _core.LeakyReLU
ELU = _core.ELU
UpSampling2D = _core.UpSampling2D
ZeroPadding2D = _core.ZeroPadding2D
Conv2DTranspose = Convolution2DTranspose = _core.Conv2DTranspose


def _activity_regularizer(self):
    return self._activity_regularizer


def _set_activity_regularizer(self, regularizer):
    self._activity_regularizer = regularizer


# Keras: activity_regularizer is settable on every layer (layer.activity_regularizer = L2(0.01)).
_core.Layer.activity_regularizer = property(_activity_regularizer, _set_activity_regularizer)


class Dense(_core.Dense):
    """Keras' Dense(units, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
    bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint): the C++ ef::nn::Dense."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, name=None, **kwargs):
        super().__init__(units, activation, use_bias, kernel_initializer, bias_initializer, name or "")
        _core._set_weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                                  bias_constraint)


class Conv2D(_core.Conv2D):
    """Keras' Conv2D(filters, kernel_size, strides, padding, dilation_rate, activation, use_bias, kernel_regularizer,
    bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint): the C++ ef::nn::Conv2D."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 activation=None, use_bias=True, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, name=None, **kwargs):
        if data_format not in (None, "channels_last"):
            raise ValueError(f"Conv2D: only data_format='channels_last' is supported, got {data_format!r}")
        super().__init__(filters, kernel_size, strides, padding, dilation_rate, activation, use_bias, name or "")
        _core._set_weight_options(self, kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                                  bias_constraint)


Convolution2D = Conv2D

__all__ = ["Activation", "Add", "AveragePooling2D", "AvgPool2D", "BatchNormalization", "Concatenate", "Conv2D",
           "Conv2DTranspose", "Convolution2D", "Convolution2DTranspose", "Dense", "Dropout", "ELU", "Embedding",
           "Flatten", "GlobalAveragePooling2D", "Input", "InputLayer", "Lambda", "Layer", "LayerNormalization",
           "LeakyReLU", "MaxPool2D", "MaxPooling2D", "Normalization", "Rescaling", "Reshape", "TensorShape",
           "TFSMLayer", "UpSampling2D", "ZeroPadding2D"]
