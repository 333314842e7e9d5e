"""ef.keras.preprocessing.image: Keras 3's image helpers (PIL for files) and smart_resize."""
from ..utils import array_to_img, img_to_array, load_img, save_img
from ..utils._image_dataset import smart_resize

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"]
