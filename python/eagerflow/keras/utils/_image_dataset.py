"""keras.utils.image_dataset_from_directory: a batched ef.data.Dataset of the images (BMP, GIF,
JPEG, PNG) under a folder, decoded and resized in the pipeline (ef.io.decode_image,
ef.image.resize), labelled from their class folders as Keras does."""
from . import _directory

ALLOWLIST_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic")


def _crop_box(h, w, size):
    """(top, left, height, width) of the largest centred crop of an h x w image with the aspect
    ratio of size (Keras' smart_resize)."""
    th, tw = size
    ch = max(min(h, int(float(w * th) / tw)), 1)
    cw = max(min(w, int(float(h * tw) / th)), 1)
    return int(float(h - ch) / 2), int(float(w - cw) / 2), ch, cw


def _crop_to_aspect(img, size):
    """img cropped as smart_resize crops it. In the traced pipeline the image's size is known
    only when it runs, so the crop is a host call there."""
    import eagerflow as ef
    h, w = img.shape[0], img.shape[1]
    if h is not None and w is not None:
        top, left, ch, cw = _crop_box(int(h), int(w), size)
        return img[top:top + ch, left:left + cw, :]

    def crop(x):
        top, left, ch, cw = _crop_box(int(x.shape[0]), int(x.shape[1]), size)
        return x[top:top + ch, left:left + cw, :]
    return ef.py_function(crop, [img], ef.TensorSpec([None, None, img.shape[2]], img.dtype))


def _pad_to_aspect(img, size, interpolation):
    """ef.image.resize_with_pad, a host call in the traced pipeline (the image's size is known
    only when it runs)."""
    import eagerflow as ef
    if img.shape[0] is not None and img.shape[1] is not None:
        return ef.image.resize_with_pad(img, size[0], size[1], method=interpolation)
    dtype = ef.uint8 if interpolation == "nearest" else ef.float32
    return ef.py_function(lambda x: ef.image.resize_with_pad(x, size[0], size[1], method=interpolation), [img],
                          ef.TensorSpec([size[0], size[1], img.shape[2]], dtype))


def make_loader(image_size, num_channels, interpolation, data_format, crop_to_aspect_ratio, pad_to_aspect_ratio):
    import eagerflow as ef
    if pad_to_aspect_ratio and crop_to_aspect_ratio:
        raise ValueError("Only one of `pad_to_aspect_ratio`, `crop_to_aspect_ratio` can be set to `True`.")

    def load(path):
        img = ef.io.decode_image(ef.io.read_file(path), channels=num_channels, expand_animations=False)
        if crop_to_aspect_ratio:
            img = ef.image.resize(_crop_to_aspect(img, image_size), image_size, method=interpolation)
        elif pad_to_aspect_ratio:
            img = _pad_to_aspect(img, image_size, interpolation)
        else:
            img = ef.image.resize(img, image_size, method=interpolation)
        return ef.transpose(img, [2, 0, 1]) if data_format == "channels_first" else img
    return load


def image_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, color_mode="rgb",
                                 batch_size=32, image_size=(256, 256), shuffle=True, seed=None, validation_split=None,
                                 subset=None, interpolation="bilinear", follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, format="tf", verbose=True):
    """Batches (images [batch, height, width, channels], float32 in 0..255 (uint8 for
    interpolation="nearest", as tf.image.resize), labels) of the images
    in `directory`/<class>/...: labels int32 indices ("int"), one-hot float32 ("categorical"),
    float32 [batch, 1] ("binary"), or none (labels=None / label_mode=None). The dataset has
    class_names and file_paths; subset="both" returns [training, validation]."""
    _directory.check_labels_arg(labels, class_names, "image")
    _directory.check_label_mode(label_mode)
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError('`color_mode` must be one of {"rgb", "rgba", "grayscale"}. '
                         f"Received: color_mode={color_mode}")
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    elif not isinstance(image_size, (list, tuple)) or not len(image_size) == 2:
        raise ValueError("Invalid `image_size` value. Expected a tuple of 2 integers. "
                         f"Received: image_size={image_size}")
    interpolation = interpolation.lower()
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"Argument `interpolation` should be one of {_INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation}")
    if format != "tf":
        raise ValueError(f'`format` should be "tf" here (an ef.data.Dataset). Received: format={format}')
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: data_format={data_format}")
    load = make_loader(tuple(int(s) for s in image_size), channels, interpolation, data_format or "channels_last",
                       crop_to_aspect_ratio, pad_to_aspect_ratio)
    return _directory.from_directory(directory, labels, label_mode, class_names, batch_size, shuffle, seed,
                                     validation_split, subset, follow_links, verbose, ALLOWLIST_FORMATS, load, "images")


def smart_resize(x, size, interpolation="bilinear", data_format="channels_last", **kwargs):
    """An image [h, w, c] or batch [n, h, w, c] resized to size (height, width) without
    distorting it: the largest centred crop with size's aspect ratio, then resized (a Tensor)."""
    import eagerflow as ef
    kwargs.pop("backend_module", None)
    if kwargs:
        raise TypeError(f"smart_resize() got unexpected keyword arguments: {list(kwargs.keys())}")
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: {size}.")
    img = ef.convert_to_tensor(x)
    rank = len(img.shape)
    if rank < 3 or rank > 4:
        raise ValueError("Expected an image array with shape `(height, width, channels)`, or `(batch_size, height, "
                         f"width, channels)`, but got input with incorrect rank, of shape {tuple(img.shape)}.")
    if data_format == "channels_first":
        img = ef.transpose(img, [1, 2, 0] if rank == 3 else [0, 2, 3, 1])
    if rank == 3:
        img = _crop_to_aspect(img, size)
    else:
        img = ef.map_fn(lambda one: _crop_to_aspect(one, size), img) if img.shape[0] is None else \
            _crop_batch(img, size)
    img = ef.image.resize(img, size, method=interpolation)
    if data_format == "channels_first":
        img = ef.transpose(img, [2, 0, 1] if rank == 3 else [0, 3, 1, 2])
    return img


def _crop_batch(img, size):
    top, left, ch, cw = _crop_box(int(img.shape[1]), int(img.shape[2]), size)
    return img[:, top:top + ch, left:left + cw, :]
