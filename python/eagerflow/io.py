"""ef.io, as tf.io: files, encodings and serialized tensors."""
from . import _core

_s = _core._strings

__all__ = ["decode_base64", "encode_base64", "read_file", "write_file"]


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
