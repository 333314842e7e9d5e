"""ef.keras.preprocessing: Keras 3's remaining preprocessing names (the dataset functions of
keras.utils, sequence.pad_sequences, and the image helpers)."""
from ..utils import image_dataset_from_directory, text_dataset_from_directory, timeseries_dataset_from_array
from . import image, sequence, text

__all__ = ["image", "sequence", "text", "image_dataset_from_directory", "text_dataset_from_directory",
           "timeseries_dataset_from_array"]
