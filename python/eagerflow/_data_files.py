"""tf.data.FixedLengthRecordDataset: records of a fixed size from binary files, after a header
and before a footer, optionally GZIP/ZLIB compressed.

Read in a stream, one file at a time (Python, like from_generator): a file's body that is not
a whole number of records is an InvalidArgumentError (DataLossError when compressed), as TF's."""
import zlib as _zlib

import numpy as _np

from . import _core

_CHUNK = 1 << 20


def _names(filenames):
    if isinstance(filenames, (str, bytes)):
        filenames = [filenames]
    elif isinstance(filenames, _core.Tensor):
        filenames = list(_np.atleast_1d(filenames.numpy()))
    elif isinstance(filenames, _core._data.Dataset):
        filenames = list(filenames.as_numpy_iterator())
    return [f.decode() if isinstance(f, bytes) else str(f) for f in filenames]


def _chunks(path, kind):
    from . import errors
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
    with f:
        z = None if not kind else _zlib.decompressobj(_zlib.MAX_WBITS + 16 if kind == "GZIP" else _zlib.MAX_WBITS)
        while True:
            data = f.read(_CHUNK)
            if not data:
                break
            yield z.decompress(data) if z else data
        if z:
            yield z.flush()


def _records(path, record_bytes, header_bytes, footer_bytes, kind):
    """The records of one file: the body between header and footer is cut into records; the
    last footer_bytes are held back until the file's end shows they are the footer."""
    from . import errors
    buf, skipped, body = b"", 0, 0
    for data in _chunks(path, kind):
        if skipped < header_bytes:
            take = min(header_bytes - skipped, len(data))
            skipped, data = skipped + take, data[take:]
        buf += data
        while len(buf) >= record_bytes + footer_bytes:
            body += record_bytes
            yield buf[:record_bytes]
            buf = buf[record_bytes:]
    rest = len(buf) - footer_bytes
    if rest != 0:
        cls = errors.DataLossError if kind else errors.InvalidArgumentError
        raise cls(None, None, f"Excluding the header ({header_bytes} bytes) and footer ({footer_bytes} bytes), input file "
                              f"\"{path}\" has body length {body + max(rest, 0)} bytes, which is not an exact multiple of "
                              f"the record length ({record_bytes} bytes).")


def FixedLengthRecordDataset(filenames, record_bytes, header_bytes=None, footer_bytes=None, buffer_size=None,  # noqa: N802
                             compression_type=None, num_parallel_reads=None, name=None):
    """tf.data.FixedLengthRecordDataset: string scalars of record_bytes bytes each, from the
    files in order (compression_type '' / None, 'GZIP' or 'ZLIB')."""
    from ._tfrecord import TFRecordOptions
    kind = TFRecordOptions.get_compression_type_string(
        compression_type.numpy().decode() if isinstance(compression_type, _core.Tensor) else compression_type)
    record_bytes = int(record_bytes)
    header_bytes, footer_bytes = int(header_bytes or 0), int(footer_bytes or 0)
    if record_bytes <= 0:
        raise ValueError(f"FixedLengthRecordDataset: record_bytes must be positive, got {record_bytes}")
    if header_bytes < 0 or footer_bytes < 0:
        raise ValueError("FixedLengthRecordDataset: header_bytes and footer_bytes must be >= 0")
    files = _names(filenames)

    def generate():
        for path in files:
            yield from _records(path, record_bytes, header_bytes, footer_bytes, kind)

    return _core._data.Dataset.from_generator(generate, output_signature=_core.TensorSpec([], _core.DType.string))
