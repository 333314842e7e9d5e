"""ef.keras.layers: the C++ layers, and Layer to subclass in Python."""
import inspect
import warnings

from .. import _core
from .._layers import (Activation, Add, AveragePooling2D, AvgPool2D, BatchNormalization, Concatenate,  # noqa: F401
                       Conv2D, Dense, Dropout, Embedding, Flatten, GlobalAveragePooling2D, Input, InputLayer, Layer,
                       LayerNormalization, MaxPool2D, MaxPooling2D, Reshape, TensorShape)
from ..saved_model import SavedModelLayer as TFSMLayer  # noqa: F401
from . import activations, constraints, regularizers  # noqa: F401 - ef.keras.<module> once layers is imported

# Issue 17's layers (python/src/layers_keras.cpp): every Layer also has add_loss(x), .losses,
# apply_constraints() and activity_regularizer.
def _activity_regularizer(self):
    return self._activity_regularizer


def _set_activity_regularizer(self, regularizer):
    self._activity_regularizer = regularizer


# Keras: activity_regularizer is settable on every layer (layer.activity_regularizer = L2(0.01)).
_core.Layer.activity_regularizer = property(_activity_regularizer, _set_activity_regularizer)


def _with_base_arguments(base):
    """The C++ layer class with the arguments of Keras' base Layer (dtype=, trainable=,
    input_shape= / input_dim= / batch_size= as Keras 2's first layer of a Sequential, autocast=):
    Flatten(input_shape=(28, 28)), BatchNormalization(trainable=False)."""
    own = _own_parameters(base)

    class Layer(base):
        def __init__(self, *args, **kwargs):
            common = {k: kwargs.pop(k) for k in list(kwargs) if k in _BASE_KWARGS and k not in own}
            _check_kwargs(base.__name__, common)
            if "name" in kwargs and kwargs["name"] is None:  # Keras' default name=None
                del kwargs["name"]
            # Keras' standardize_padding: "SAME" / "Valid" are "same" / "valid".
            if isinstance(kwargs.get("padding"), str):
                kwargs["padding"] = kwargs["padding"].lower()
            args = tuple(a.lower() if isinstance(a, str) and a.lower() in _PADDINGS else a for a in args)
            super().__init__(*args, **kwargs)
            _apply_base_kwargs(self, common)

    Layer.__name__ = Layer.__qualname__ = base.__name__
    Layer.__doc__ = base.__doc__
    return Layer


def _own_parameters(base):
    """The names a Python-defined layer's __init__ takes itself: Embedding's input_dim is its
    vocabulary size, not Keras 2's base-layer input_dim (a C++ class's signature is not readable
    here, and none of them take a base argument's name)."""
    try:
        return set(inspect.signature(base.__init__).parameters)
    except (TypeError, ValueError):
        return set()


_PADDINGS = ("same", "valid", "causal")

# What Keras' base Layer accepts besides a layer's own arguments. Anything else is a TypeError, as
# in Keras (a misspelt kernel_initializer must not be dropped silently).
_BASE_KWARGS = {"trainable", "dtype", "input_shape", "input_dim", "batch_size", "autocast"}


def _check_kwargs(cls, kwargs):
    unknown = {k: v for k, v in kwargs.items() if k not in _BASE_KWARGS}
    if unknown:
        raise TypeError(f"Unrecognized keyword arguments passed to {cls}: {unknown}")
    dtype = kwargs.get("dtype")
    if dtype is not None:
        try:
            _core._dtype_policy(dtype)  # a name, a DTypePolicy, a dtype or Keras 3's serialized form
        except (_core.Error, TypeError) as e:
            raise ValueError(f"{cls}: dtype={dtype!r} is not a policy eagerflow has (float32, float64, bfloat16, "
                             f"mixed_bfloat16): {e}") from None


def _apply_base_kwargs(layer, kwargs):
    if kwargs.get("dtype") is not None:  # Keras' dtype=: a policy name, a DTypePolicy or a dtype
        layer.dtype_policy = kwargs["dtype"]
    if kwargs.get("trainable") is False:
        layer.trainable = False
    # Keras 2's Dense(..., input_shape=(4,)) as the first layer of a Sequential builds it at once.
    shape = kwargs.get("input_shape")
    if shape is None and kwargs.get("input_dim") is not None:
        shape = (int(kwargs["input_dim"]),)
    if shape is not None:
        layer._ef_declared_input_shape = (kwargs.get("batch_size"),) + tuple(shape)


Activation = _with_base_arguments(_core.Activation)
Flatten = _with_base_arguments(_core.Flatten)
Reshape = _with_base_arguments(_core.Reshape)
MaxPool2D = MaxPooling2D = _with_base_arguments(_core.MaxPool2D)
AveragePooling2D = AvgPool2D = _with_base_arguments(_core.AveragePooling2D)
GlobalAveragePooling2D = _with_base_arguments(_core.GlobalAveragePooling2D)
BatchNormalization = _with_base_arguments(_core.BatchNormalization)
LayerNormalization = _with_base_arguments(_core.LayerNormalization)
Rescaling = _with_base_arguments(_core.Rescaling)
Normalization = _with_base_arguments(_core.Normalization)
from ._normalization import normalization_class  # noqa: E402
Normalization = normalization_class(Normalization)
LeakyReLU = _with_base_arguments(_core.LeakyReLU)


class LeakyReLU(LeakyReLU):
    __doc__ = LeakyReLU.__doc__

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:  # Keras 2's name: Keras 3 takes it with a warning
            negative_slope = kwargs.pop("alpha")
            warnings.warn("Argument `alpha` is deprecated. Use `negative_slope` instead.", stacklevel=2)
        if negative_slope is None or negative_slope < 0:
            raise ValueError("The negative_slope value of a Leaky ReLU layer cannot be None or negative value. "
                             f"Expected a float. Received: negative_slope={negative_slope}")
        super().__init__(negative_slope, **kwargs)


ELU = _with_base_arguments(_core.ELU)
UpSampling2D = _with_base_arguments(_core.UpSampling2D)
ZeroPadding2D = _with_base_arguments(_core.ZeroPadding2D)
Conv2DTranspose = Convolution2DTranspose = _with_base_arguments(_core.Conv2DTranspose)
Add = _with_base_arguments(_core.Add)
Embedding = _with_base_arguments(Embedding)
Concatenate = _with_base_arguments(_core.Concatenate)
# Dense, Dropout and Conv2D (from .._layers) are the C++ classes themselves: their Keras arguments, the
# base ones included, are declared once beside them (Dense::args() in src/nn/dense.cpp, Dropout::args()
# in src/nn/dropout.cpp, Conv2D::args() in src/nn/conv_layers.cpp), converted by python/src/layer_args.h.


Convolution2D = Conv2D

__all__ = ["Activation", "Add", "AveragePooling2D", "AvgPool2D", "BatchNormalization", "Concatenate", "Conv2D",
           "Conv2DTranspose", "Convolution2D", "Convolution2DTranspose", "Dense", "Dropout", "ELU", "Embedding",
           "Flatten", "GlobalAveragePooling2D", "Input", "InputLayer", "Lambda", "Layer", "LayerNormalization",
           "LeakyReLU", "MaxPool2D", "MaxPooling2D", "Normalization", "Rescaling", "Reshape", "TensorShape",
           "TFSMLayer", "UpSampling2D", "ZeroPadding2D"]

# Issue 18's attention layers (python/src/attention.cpp): Keras 3's MultiHeadAttention on the fused
# attention op, and a learned token + position embedding (keras_hub's TokenAndPositionEmbedding).
MultiHeadAttention = _with_base_arguments(_core.MultiHeadAttention)
PositionalEmbedding = TokenAndPositionEmbedding = _with_base_arguments(_core.PositionalEmbedding)
__all__ += ["MultiHeadAttention", "PositionalEmbedding", "TokenAndPositionEmbedding"]

# Issue 18's recurrent and 1-D layers (python/src/recurrent.cpp): Keras 3's SimpleRNN, LSTM, GRU
# (LSTM / GRU on oneDNN's fused RNN primitives where they apply), Bidirectional, Conv1D and pooling.
SimpleRNN = _with_base_arguments(_core.SimpleRNN)
LSTM = _with_base_arguments(_core.LSTM)
GRU = _with_base_arguments(_core.GRU)
Bidirectional = _with_base_arguments(_core.Bidirectional)
Conv1D = Convolution1D = _with_base_arguments(_core.Conv1D)
MaxPooling1D = MaxPool1D = _with_base_arguments(_core.MaxPooling1D)
AveragePooling1D = AvgPool1D = _with_base_arguments(_core.AveragePooling1D)
GlobalAveragePooling1D = GlobalAvgPool1D = _with_base_arguments(_core.GlobalAveragePooling1D)
GlobalMaxPooling1D = GlobalMaxPool1D = _with_base_arguments(_core.GlobalMaxPooling1D)
GlobalMaxPooling2D = GlobalMaxPool2D = _with_base_arguments(_core.GlobalMaxPooling2D)
__all__ += ["SimpleRNN", "LSTM", "GRU", "Bidirectional", "Conv1D", "Convolution1D", "MaxPooling1D", "MaxPool1D",
            "AveragePooling1D", "AvgPool1D", "GlobalAveragePooling1D", "GlobalAvgPool1D", "GlobalMaxPooling1D",
            "GlobalMaxPool1D", "GlobalMaxPooling2D", "GlobalMaxPool2D"]

# Issue 33's preprocessing layers, written in Python (keras/_preprocessing.py).
from ._preprocessing import (CategoryEncoding, CenterCrop, Discretization, Hashing, IntegerLookup,  # noqa: E402
                             RandomBrightness, RandomContrast, RandomCrop, RandomFlip, RandomRotation,
                             RandomTranslation, RandomZoom, Resizing, StringLookup, TextVectorization)
__all__ += ["CategoryEncoding", "CenterCrop", "Discretization", "Hashing", "IntegerLookup", "RandomBrightness",
            "RandomContrast", "RandomCrop", "RandomFlip", "RandomRotation", "RandomTranslation", "RandomZoom",
            "Resizing", "StringLookup", "TextVectorization"]
# Keras 3's other preprocessing layers (image augmentations, MaxNumBoundingBoxes, HashedCrossing) and
# Pipeline (keras/_prep_color.py, ...).
from ._preprocessing import (  # noqa: E402
                             AugMix, AutoContrast, ContrastLimitedAdaptiveHistogramEqualization, CutMix,
                             Equalization, HashedCrossing, MaxNumBoundingBoxes, MixUp, Pipeline, RandAugment,
                             RandomColorDegeneration, RandomColorJitter, RandomElasticTransform, RandomErasing,
                             RandomGaussianBlur, RandomGrayscale, RandomHue, RandomInvert, RandomPerspective,
                             RandomPosterization, RandomSaturation, RandomSharpness, RandomShear, Solarization)
__all__ += ["AugMix", "AutoContrast", "ContrastLimitedAdaptiveHistogramEqualization", "CutMix", "Equalization",
            "HashedCrossing", "MaxNumBoundingBoxes", "MixUp", "Pipeline", "RandAugment", "RandomColorDegeneration",
            "RandomColorJitter", "RandomElasticTransform", "RandomErasing", "RandomGaussianBlur", "RandomGrayscale",
            "RandomHue", "RandomInvert", "RandomPerspective", "RandomPosterization", "RandomSaturation",
            "RandomSharpness", "RandomShear", "Solarization"]
# Issue 33's catalogue: the Keras 3 layers written in Python from ef ops (keras/_layers_*.py).
from ._layers_catalogue import *  # noqa: E402,F401,F403
from ._layers_catalogue import __all__ as _catalogue_names  # noqa: E402
GlobalAvgPool2D = GlobalAveragePooling2D


def add(inputs, **kwargs):
    """Keras' add(inputs): Add()(inputs)."""
    return Add(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """Keras' concatenate(inputs, axis): Concatenate(axis)(inputs)."""
    return Concatenate(axis=axis, **kwargs)(inputs)


__all__ += _catalogue_names + ["GlobalAvgPool2D", "add", "concatenate"]
