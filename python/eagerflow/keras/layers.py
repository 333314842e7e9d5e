"""ef.keras.layers: the C++ layers, and Layer to subclass in Python."""
from .._layers import (Activation, Add, AveragePooling2D, AvgPool2D, BatchNormalization, Concatenate,  # noqa: F401
                       Conv2D, Dense, Dropout, Embedding, Flatten, GlobalAveragePooling2D, Input, InputLayer, Layer,
                       LayerNormalization, MaxPool2D, MaxPooling2D, Reshape, TensorShape)
from ..saved_model import SavedModelLayer as TFSMLayer  # noqa: F401

__all__ = ["Activation", "Add", "AveragePooling2D", "AvgPool2D", "BatchNormalization", "Concatenate", "Conv2D", "Dense",
           "Dropout", "Embedding", "Flatten", "GlobalAveragePooling2D", "Input", "InputLayer", "Layer",
           "LayerNormalization", "MaxPool2D", "MaxPooling2D", "Reshape", "TensorShape", "TFSMLayer"]
