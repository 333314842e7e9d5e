"""The Keras 3 layers written in Python from ef ops (issue 33), gathered for ef.keras.layers."""
from ._layers_activation import PReLU, ReLU, Softmax
from ._layers_attention import AdditiveAttention, Attention
from ._layers_conv import (Conv1DTranspose, Conv3D, Conv3DTranspose, Convolution1DTranspose, Convolution3D,
                           Convolution3DTranspose, DepthwiseConv1D, DepthwiseConv2D, SeparableConv1D, SeparableConv2D,
                           SeparableConvolution1D, SeparableConvolution2D)
from ._layers_merge import (Average, Dot, Maximum, Minimum, Multiply, Subtract, average, dot, maximum, minimum,
                            multiply, subtract)
from ._layers_noise import (ActivityRegularization, AlphaDropout, GaussianDropout, GaussianNoise, SpatialDropout1D,
                            SpatialDropout2D, SpatialDropout3D)
from ._layers_normalization import GroupNormalization, UnitNormalization
from ._layers_pooling import (AveragePooling3D, AvgPool3D, GlobalAveragePooling3D, GlobalAvgPool3D,
                              GlobalMaxPool3D, GlobalMaxPooling3D, MaxPool3D, MaxPooling3D)
from ._layers_reshaping import (Cropping1D, Cropping2D, Cropping3D, Identity, Permute, RepeatVector, UpSampling1D,
                                UpSampling3D, ZeroPadding1D, ZeroPadding3D)
from ._layers_wrappers import TimeDistributed, Wrapper, deserialize, serialize
from ._layers_adaptive import (AdaptiveAveragePooling1D, AdaptiveAveragePooling2D, AdaptiveAveragePooling3D,
                               AdaptiveMaxPooling1D, AdaptiveMaxPooling2D, AdaptiveMaxPooling3D)
from ._layers_normalization import RMSNormalization
from ._layers_einsum import EinsumDense
from ._layers_masking import Masking
from ._layers_gqa import GroupQueryAttention
from ._layers_spectral import SpectralNormalization
from ._layers_reversible import ReversibleEmbedding
from ._input_spec import InputSpec
from ._layers_convlstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from ._layers_rnn import RNN, GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from ._layers_audio import MelSpectrogram, STFTSpectrogram
from ._layers_lambda import Lambda

__all__ = ["Lambda", "PReLU", "ReLU", "Softmax", "AdditiveAttention", "Attention", "Conv1DTranspose", "Conv3D",
           "Conv3DTranspose", "Convolution1DTranspose", "Convolution3D", "Convolution3DTranspose", "DepthwiseConv1D",
           "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D", "SeparableConvolution1D",
           "SeparableConvolution2D", "Average", "Dot", "Maximum", "Minimum", "Multiply", "Subtract", "average", "dot",
           "maximum", "minimum", "multiply", "subtract", "ActivityRegularization", "AlphaDropout", "GaussianDropout",
           "GaussianNoise", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GroupNormalization",
           "UnitNormalization", "AveragePooling3D", "AvgPool3D", "GlobalAveragePooling3D", "GlobalAvgPool3D",
           "GlobalMaxPool3D", "GlobalMaxPooling3D", "MaxPool3D", "MaxPooling3D", "Cropping1D", "Cropping2D",
           "Cropping3D", "Identity", "Permute", "RepeatVector", "UpSampling1D", "UpSampling3D", "ZeroPadding1D",
           "ZeroPadding3D", "TimeDistributed", "deserialize", "serialize", "Wrapper",
           "AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D", "AdaptiveMaxPooling1D",
           "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D", "RMSNormalization", "EinsumDense", "RNN", "GRUCell",
           "LSTMCell", "SimpleRNNCell", "StackedRNNCells", "Masking", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D",
           "GroupQueryAttention", "SpectralNormalization", "ReversibleEmbedding", "InputSpec", "MelSpectrogram",
           "STFTSpectrogram"]
