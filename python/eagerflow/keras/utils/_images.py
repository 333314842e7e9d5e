"""keras.utils' image helpers (array_to_img, img_to_array, load_img, save_img) with PIL, as
Keras, and smart_resize (keras.preprocessing.image) with ef's ops."""
import io
import os

import numpy as np


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("Could not import PIL.Image. The use of `load_img`, `save_img` and `array_to_img` "
                          "requires PIL (pip install pillow).") from None
    return Image


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A PIL image of a [height, width, channels] array (1, 3 or 4 channels), scaled to 0..255 by
    its min and max when scale=True."""
    Image = _pil()
    data_format = data_format or "channels_last"
    x = np.asarray(x.numpy() if hasattr(x, "numpy") else x, dtype=dtype or "float32")
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array with shape: {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x /= top
        x *= 255
    channels = x.shape[2]
    if channels == 4:
        return Image.fromarray(x.astype("uint8"), "RGBA")
    if channels == 3:
        return Image.fromarray(x.astype("uint8"), "RGB")
    if channels == 1:
        if np.max(x) > 255:  # 32-bit signed integer grayscale
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {channels}")


def img_to_array(img, data_format=None, dtype=None):
    """A float32 (or dtype) NumPy array [height, width, channels] of a PIL image."""
    data_format = data_format or "channels_last"
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError(f"Unknown data_format: {data_format}")
    x = np.asarray(img, dtype=dtype or "float32")
    if x.ndim == 3:
        return x.transpose(2, 0, 1) if data_format == "channels_first" else x
    if x.ndim == 2:
        return x.reshape((1,) + x.shape) if data_format == "channels_first" else x.reshape(x.shape + (1,))
    raise ValueError(f"Unsupported image shape: {x.shape}")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes an image array to path (the format from file_format or the extension)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and (file_format == "jpg" or file_format == "jpeg"):
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


_METHODS = {"nearest": "NEAREST", "bilinear": "BILINEAR", "bicubic": "BICUBIC", "hamming": "HAMMING",
            "box": "BOX", "lanczos": "LANCZOS"}


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest", keep_aspect_ratio=False):
    """A PIL image read from path (a file name, pathlib.Path or a BytesIO), converted to
    "grayscale", "rgb" or "rgba", resized to target_size (height, width) when given
    (keep_aspect_ratio: centre-cropped to that aspect ratio first)."""
    Image = _pil()
    if isinstance(path, io.BytesIO):
        img = Image.open(path)
    elif isinstance(path, (str, bytes, os.PathLike)):
        with open(os.fspath(path) if not isinstance(path, bytes) else path.decode(), "rb") as f:
            img = Image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    modes = {"grayscale": ("L", "I;16", "I"), "rgba": ("RGBA",), "rgb": ("RGB",)}
    if color_mode not in modes:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    if img.mode not in modes[color_mode]:
        img = img.convert({"grayscale": "L", "rgba": "RGBA", "rgb": "RGB"}[color_mode])
    if target_size is not None:
        width_height = (target_size[1], target_size[0])
        if img.size != width_height:
            if interpolation not in _METHODS:
                raise ValueError(f"Invalid interpolation method {interpolation} specified. Supported methods are "
                                 f"{', '.join(_METHODS)}")
            resample = getattr(Image.Resampling, _METHODS[interpolation])
            if keep_aspect_ratio:
                width, height = img.size
                target_width, target_height = width_height
                crop_height = min(height, (width * target_height) // target_width)
                crop_width = min(width, (height * target_width) // target_height)
                top = (height - crop_height) // 2
                left = (width - crop_width) // 2
                img = img.crop((left, top, left + crop_width, top + crop_height))
            img = img.resize(width_height, resample)
    return img
