"""ef.keras.utils: Keras 3's utilities: to_categorical, normalize, pad_sequences, the
*_dataset_from_directory and timeseries datasets (ef.data.Datasets that fit takes),
split_dataset, get_file (the Keras cache, offline), Progbar, PyDataset/Sequence, the custom
object registry and serialization, image helpers and set_random_seed."""
from .._files import get_file
from ._audio_dataset import audio_dataset_from_directory
from ._image_dataset import image_dataset_from_directory
from ._images import array_to_img, img_to_array, load_img, save_img
from ._misc import (Config, disable_interactive_logging, enable_interactive_logging, is_interactive_logging_enabled,
                    is_keras_tensor,
                    pack_x_y_sample_weight, set_random_seed, standardize_dtype, unpack_x_y_sample_weight)
from ._numerical import normalize, to_categorical
from ._plot import model_to_dot, plot_model
from ._objects import (CustomObjectScope, custom_object_scope, deserialize_keras_object, get_custom_objects,
                       get_registered_name, get_registered_object, register_keras_serializable,
                       serialize_keras_object)
from ._progbar import Progbar
from ._py_dataset import PyDataset, Sequence
from ._sequence import pad_sequences
from ._split import split_dataset
from ._text_dataset import text_dataset_from_directory
from ._timeseries import timeseries_dataset_from_array

__all__ = ["Config", "CustomObjectScope", "Progbar", "PyDataset", "Sequence", "array_to_img",
           "audio_dataset_from_directory", "custom_object_scope", "deserialize_keras_object",
           "disable_interactive_logging", "enable_interactive_logging", "get_custom_objects", "get_file",
           "get_registered_name", "get_registered_object", "image_dataset_from_directory", "img_to_array",
           "is_interactive_logging_enabled", "is_keras_tensor", "load_img", "model_to_dot", "normalize",
           "pack_x_y_sample_weight", "pad_sequences", "plot_model", "register_keras_serializable", "save_img",
           "serialize_keras_object", "set_random_seed", "split_dataset", "standardize_dtype",
           "text_dataset_from_directory", "timeseries_dataset_from_array", "to_categorical", "unpack_x_y_sample_weight"]
