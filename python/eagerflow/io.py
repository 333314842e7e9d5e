"""ef.io, as tf.io: files, encodings and serialized tensors."""
from . import _core

_s = _core._strings

__all__ = ["decode_and_crop_jpeg", "decode_base64", "decode_bmp", "decode_image", "decode_jpeg", "decode_png",
           "encode_base64", "encode_jpeg", "encode_png", "extract_jpeg_shape", "is_jpeg", "read_file", "write_file"]

_c = _core._image_codecs


def encode_base64(input, pad=False, name=None):  # noqa: A002
    """Web-safe base64 (- and _ for + and /), as TF's; '=' padding only when pad=True."""
    return _s.encode_base64(_core.convert_to_tensor(input), bool(pad))


def decode_base64(input, name=None):  # noqa: A002
    """The bytes of web-safe base64 text (with or without padding); other characters raise
    InvalidArgumentError."""
    return _s.decode_base64(_core.convert_to_tensor(input))


def read_file(filename, name=None):
    """The file's bytes as a string scalar (NotFoundError when it is missing); inside ef.function
    the file is read at every call."""
    return _s.read_file(_core.convert_to_tensor(filename))


def write_file(filename, contents, name=None):
    """Writes the string scalar `contents` to `filename`, atomically (a reader sees the old file or
    the new one)."""
    _s.write_file(_core.convert_to_tensor(filename), _core.convert_to_tensor(contents))


# ---- image codecs: PNG, JPEG and BMP are recognized by their first bytes whichever decode_*
# is called (as TF's are); images are uint8 [height, width, channels].
def _contents(x):
    return _core.convert_to_tensor(x)


def decode_png(contents, channels=0, dtype=None, name=None):
    """A PNG (or JPEG, BMP) as uint8 (or uint16: 8-bit values times 257) [height, width, channels];
    channels 0 keeps the file's."""
    return _c.decode_png(_contents(contents), int(channels), _core.DType.uint8 if dtype is None else dtype)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False, acceptable_fraction=1,
                dct_method="", name=None):
    """A JPEG as uint8 [height, width, channels] (libjpeg-turbo; dct_method '' is TF's fast default)."""
    if ratio != 1 or not fancy_upscaling or try_recover_truncated or acceptable_fraction != 1:
        raise NotImplementedError("decode_jpeg: ratio, fancy_upscaling=False and truncated-file recovery are not supported")
    return _c.decode_jpeg(_contents(contents), int(channels), str(dct_method))


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                         acceptable_fraction=1, dct_method="", name=None):
    """The window [y, x, height, width] of a decoded JPEG."""
    if ratio != 1 or not fancy_upscaling or try_recover_truncated or acceptable_fraction != 1:
        raise NotImplementedError("decode_and_crop_jpeg: ratio, fancy_upscaling=False and truncated-file recovery are not supported")
    return _c.decode_and_crop_jpeg(_contents(contents), crop_window, int(channels), str(dct_method))


def decode_bmp(contents, channels=0, name=None):
    """An uncompressed 24- or 32-bit BMP as uint8 [height, width, channels]."""
    return _c.decode_bmp(_contents(contents), int(channels))


def decode_image(contents, channels=None, dtype=None, name=None, expand_animations=True):
    """A PNG, JPEG or BMP as [height, width, channels]: uint8, or another dtype through
    tf.image.convert_image_dtype (floats in [0, 1]) as TF's."""
    if dtype is None:
        dtype = _core.DType.uint8
    raw = _c.decode_image(_contents(contents), 0 if channels is None else int(channels),
                          dtype if dtype in (_core.DType.uint8, _core.DType.uint16) else _core.DType.uint8)
    if dtype in (_core.DType.uint8, _core.DType.uint16):
        return raw
    from .image import convert_image_dtype
    return convert_image_dtype(raw, dtype)


def encode_png(image, compression=-1, name=None):
    """A uint8 or uint16 image [height, width, 1..4] as PNG bytes."""
    return _c.encode_png(_core.convert_to_tensor(image), int(compression))


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False, chroma_downsampling=True,  # noqa: A002
                density_unit="in", x_density=300, y_density=300, xmp_metadata="", name=None):
    """A uint8 image [height, width, 1 or 3] as JPEG bytes."""
    if format not in ("", "grayscale", "rgb") or xmp_metadata:
        raise NotImplementedError("encode_jpeg: format conversion and xmp_metadata are not supported")
    return _c.encode_jpeg(_core.convert_to_tensor(image), int(quality), bool(progressive), bool(optimize_size),
                          bool(chroma_downsampling), str(density_unit), int(x_density), int(y_density))


def is_jpeg(contents, name=None):
    """Whether the bytes start as a JPEG's (a bool scalar)."""
    return _c.is_jpeg(_contents(contents))


def extract_jpeg_shape(contents, output_type=None, name=None):
    """[height, width, channels] of a JPEG, from its header."""
    return _c.extract_jpeg_shape(_contents(contents), _core.DType.int32 if output_type is None else output_type)

# ---------------------------------------------------------------- records, Examples, tensors
from ._tfrecord import TFRecordOptions, TFRecordWriter  # noqa: E402
from ._parse_example import (FixedLenFeature, FixedLenSequenceFeature, RaggedFeature, SparseFeature, VarLenFeature,  # noqa: E402
                             parse_example, parse_sequence_example, parse_single_example,
                             parse_single_sequence_example)
from ._io_records import (decode_compressed, decode_csv, decode_raw, deserialize_many_sparse, matching_files,  # noqa: E402
                          parse_tensor, serialize_many_sparse, serialize_sparse, serialize_tensor)

__all__ += ["TFRecordOptions", "TFRecordWriter", "FixedLenFeature", "FixedLenSequenceFeature", "RaggedFeature",
            "VarLenFeature", "SparseFeature", "serialize_sparse", "serialize_many_sparse", "deserialize_many_sparse", "parse_example", "parse_sequence_example", "parse_single_example",
            "parse_single_sequence_example", "decode_compressed", "decode_csv", "decode_raw", "matching_files",
            "parse_tensor", "serialize_tensor"]
