"""TF's TFRecord files from Python: TFRecordOptions and TFRecordWriter (framing in C++, the
CRC-32C of src/summary; gzip/zlib through Python's zlib, the library TF uses too)."""
import zlib as _zlib

from . import _core

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter"]


class TFRecordCompressionType:
    """tf.compat.v1.io.TFRecordCompressionType's numbers."""
    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """tf.io.TFRecordOptions: compression_type '' (None), 'ZLIB' or 'GZIP' and zlib's settings."""
    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB", TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None, output_buffer_size=None,
                 window_bits=None, compression_level=None, compression_method=None, mem_level=None,
                 compression_strategy=None):
        if isinstance(compression_type, TFRecordOptions):
            self.__dict__.update(compression_type.__dict__)
            return
        self.compression_type = TFRecordOptions.get_compression_type_string(compression_type)
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options):
        """'' , 'ZLIB' or 'GZIP' for options (a TFRecordOptions, a string, a number or None)."""
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, int) and options in cls.compression_type_map:
            return cls.compression_type_map[options]
        if options in cls.compression_type_map.values():
            return options
        raise ValueError(f'Not a valid compression_type: "{options}"')


class TFRecordWriter:
    """tf.io.TFRecordWriter: writes records (bytes or str) to `path`, framed as TF's, optionally
    compressed; a context manager that closes the file."""

    def __init__(self, path, options=None):
        opts = options if isinstance(options, TFRecordOptions) else TFRecordOptions(options)
        kind = opts.compression_type
        self._z = None
        if kind:
            bits = opts.window_bits if opts.window_bits is not None else _zlib.MAX_WBITS
            level = opts.compression_level if opts.compression_level is not None else _zlib.Z_DEFAULT_COMPRESSION
            mem = opts.mem_level if opts.mem_level is not None else 9
            strategy = opts.compression_strategy if opts.compression_strategy is not None else _zlib.Z_DEFAULT_STRATEGY
            self._z = _zlib.compressobj(level, _zlib.DEFLATED, bits + 16 if kind == "GZIP" else bits, mem, strategy)
        path = path.decode() if isinstance(path, bytes) else str(path.numpy().decode() if hasattr(path, "numpy") else path)
        try:
            self._f = open(path, "wb")  # noqa: SIM115 - closed by close()
        except FileNotFoundError as e:
            from . import errors
            raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from e

    def write(self, record):
        """Appends one record (bytes, str, or a string scalar tensor)."""
        if self._f is None:
            from . import errors
            raise errors.FailedPreconditionError(None, None, "Writer is closed.")
        if hasattr(record, "numpy"):
            record = record.numpy()
        if isinstance(record, str):
            record = record.encode()
        framed = _core._io._frame_record(bytes(record))
        self._f.write(self._z.compress(framed) if self._z else framed)

    def flush(self):
        """Writes out what is buffered (a full zlib flush: the file so far is readable)."""
        if self._f is None:
            from . import errors
            raise errors.FailedPreconditionError(None, None, "Writer is closed.")
        if self._z:
            self._f.write(self._z.flush(_zlib.Z_FULL_FLUSH))
        self._f.flush()

    def close(self):
        if self._f is None:
            return
        if self._z:
            self._f.write(self._z.flush(_zlib.Z_FINISH))
        self._f.close()
        self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown
            pass
