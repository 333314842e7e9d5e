"""ef.keras.layers: the C++ layers, and Layer to subclass in Python."""
from .._layers import (Activation, Dense, Dropout, Flatten, Input, InputLayer, Layer, Reshape,  # noqa: F401
                       TensorShape)

__all__ = ["Activation", "Dense", "Dropout", "Flatten", "Input", "InputLayer", "Layer", "Reshape", "TensorShape"]
