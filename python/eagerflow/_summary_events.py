"""Summary events made in Python (tf.summary.write, image, audio, trace_export) and appended to
a SummaryWriter's event file.

The C++ writer buffers records and appends whole ones with write(2) on a file opened O_APPEND;
after flushing it, a record appended here lands after everything written before it, so a file
holds the events in the order the program wrote them. Protocol buffers are encoded by hand
(TensorBoard's Event, Summary, SummaryMetadata, GraphDef, RunMetadata fields): eagerflow has no
protobuf dependency."""
import os as _os
import struct as _struct
import time as _time

from . import _core
from ._example_proto import _key, _ld, _varint

_s = _core._summary

# TF's DataType numbers, by eagerflow's short dtype names (the traced graph's text).
DATA_TYPE = {"f32": 1, "f64": 2, "i32": 3, "u8": 4, "i16": 5, "i8": 6, "str": 7, "c64": 8, "i64": 9, "bool": 10,
             "bf16": 14, "u16": 17, "c128": 18, "f16": 19, "u32": 22, "u64": 23}

def varint_field(field, n):
    return _key(field, 0) + _varint(int(n))


def double_field(field, x):
    return _key(field, 1) + _struct.pack("<d", float(x))


def string_field(field, s):
    return _ld(field, s.encode() if isinstance(s, str) else bytes(s))


def metadata(plugin_name, content=b"", description=None):
    """A SummaryMetadata's bytes. No data class, as TF's summaries: TensorBoard gives each
    plugin's its own when it reads them."""
    out = _ld(1, string_field(1, plugin_name) + (string_field(2, content) if content else b""))
    if description:
        out += string_field(3, description)
    return out


def value(tag, tensor_proto, metadata_bytes=b""):
    """A Summary.Value's bytes: tag, TensorProto and SummaryMetadata."""
    return string_field(1, tag) + _ld(8, tensor_proto) + (_ld(9, metadata_bytes) if metadata_bytes else b"")


def tensor_proto(tensor):
    """TF's TensorProto bytes of an eager tensor (as tf.io.serialize_tensor)."""
    t = _core.convert_to_tensor(tensor)
    return _core.convert_to_tensor(_core._io._serialize_tensor(t)).numpy()


def string_tensor_proto(strings, shape):
    """A DT_STRING TensorProto of byte strings, in row-major order of `shape`."""
    dims = b"".join(_ld(2, varint_field(1, d)) for d in shape)
    return varint_field(1, DATA_TYPE["str"]) + _ld(2, dims) + b"".join(_ld(8, bytes(s)) for s in strings)


def append_event(writer, step, values):
    """One Event (the Summary of `values`, each a Value's bytes) appended to writer's file."""
    if writer.closed:
        from . import errors
        raise errors.FailedPreconditionError(None, None, f"summary writer of {writer.path} is closed")
    event = double_field(1, _time.time()) + varint_field(2, step) + _ld(5, b"".join(_ld(1, v) for v in values))
    writer.flush()  # what the C++ writer holds goes first
    fd = _os.open(writer.path, _os.O_WRONLY | _os.O_APPEND)
    try:
        _os.write(fd, _core._io._frame_record(event))
    finally:
        _os.close(fd)
