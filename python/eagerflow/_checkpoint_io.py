"""The files of an object-graph checkpoint (tf.train.Checkpoint), written crash-safely.

Checkpoints are written in TensorFlow's format (_tf_checkpoint.py). Reader reads those, TF's own,
and eagerflow's older format, which this file describes:

A checkpoint at `prefix` is two files, as TF's are named:
  prefix.data-00000-of-00001  the values, in the safetensors layout (8-byte header length, a JSON
                              header of {key: dtype, shape, data_offsets}, then the raw bytes);
  prefix.index                JSON: the object graph, each value's eagerflow dtype, and the data
                              file's size and CRC32 (so that an index never pairs with another
                              save's data: a crash between the two renames is found, not misread).
Each file is written to a temporary name in the same directory, fsynced, then renamed; the index
last, so an index that exists names a complete data file. String values (no safetensors dtype)
are kept in the index, base64-encoded.
The `checkpoint` state file is TF's text format (model_checkpoint_path: "ckpt-2" ...).
"""
import base64
import json
import os
import struct
import tempfile
import zlib

import numpy as np

from . import _core
from . import _tf_checkpoint as _tf
from . import errors

_DATA_SUFFIX = ".data-00000-of-00001"
_INDEX_SUFFIX = ".index"
_FORMAT = "eagerflow-object-checkpoint"
_ST_DTYPE = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16", "int8": "I8", "int16": "I16",
             "int32": "I32", "int64": "I64", "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64",
             "bool": "BOOL"}
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def numpy_dtype(name):
    """NumPy's dtype of an eagerflow dtype name (bfloat16: the one eagerflow's .numpy() returns)."""
    return _core.zeros([0], dtype=_core.DType.__members__[name]).numpy().dtype


def _atomic_write(path, chunks):
    """Writes the byte chunks to `path` via a temporary file, fsync and rename."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself survives a power loss once the directory is synced
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def write(prefix, graph, values):
    """Writes a checkpoint in TF's format: `graph` (the object graph) and `values` {key: (dtype name, ndarray)}."""
    return _tf.write(prefix, graph, values)


def write_legacy(prefix, graph, values):
    """Writes eagerflow's older format (kept for the tests that its files still restore)."""
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    header, chunks, strings, dtypes, offset = {}, [], {}, {}, 0
    for key in sorted(values):
        dtype, array = values[key]
        dtypes[key] = dtype
        if dtype == "string":
            flat = [bytes(b) for b in np.asarray(array, dtype=object).reshape(-1)]
            strings[key] = {"shape": list(array.shape), "values": [base64.b64encode(b).decode() for b in flat]}
            continue
        raw = np.ascontiguousarray(array).tobytes()
        header[key] = {"dtype": _ST_DTYPE[dtype], "shape": list(array.shape),
                       "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    data = [struct.pack("<Q", len(head)), head] + chunks
    crc = 0
    for chunk in data:
        crc = zlib.crc32(chunk, crc)
    _atomic_write(prefix + _DATA_SUFFIX, data)
    index = {"format": _FORMAT, "version": 1, "object_graph": graph, "dtypes": dtypes, "strings": strings,
             "data_size": sum(len(c) for c in data), "data_crc32": crc}
    _atomic_write(prefix + _INDEX_SUFFIX, [json.dumps(index).encode()])
    return prefix


def Reader(prefix):  # noqa: N802 - the class of the format found
    """The reader of a checkpoint in TF's format or eagerflow's older one."""
    return _tf.Reader(prefix) if _tf.is_tf_checkpoint(prefix) else _LegacyReader(prefix)


class _LegacyReader:
    """The values of one checkpoint in eagerflow's older format, read on demand."""

    def __init__(self, prefix):
        index_path = prefix + _INDEX_SUFFIX
        if not os.path.exists(index_path):
            raise errors.NotFoundError(None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any "
                                       f"matching files for {prefix}")
        try:
            with open(index_path, "rb") as f:
                self._index = json.loads(f.read())
        except ValueError:
            raise errors.DataLossError(None, None, f"Unable to read the checkpoint index {index_path}: neither a "
                                       "TensorFlow checkpoint index (no table magic number at its end: truncated or "
                                       "damaged?) nor one of eagerflow's older JSON indexes") from None
        if not isinstance(self._index, dict) or self._index.get("format") != _FORMAT:
            raise errors.DataLossError(None, None, f"{index_path} is neither a TensorFlow checkpoint index nor one of "
                                       "eagerflow's older ones")
        with open(prefix + _DATA_SUFFIX, "rb") as f:
            self._data = f.read()
        if len(self._data) != self._index["data_size"] or zlib.crc32(self._data) != self._index["data_crc32"]:
            raise errors.DataLossError(None, None, f"Checkpoint {prefix}: the data file does not match its index "
                                       "(a save interrupted between its two files, or a damaged file)")
        (n,) = struct.unpack("<Q", self._data[:8])
        self._header = json.loads(self._data[8:8 + n])
        self._base = 8 + n
        self.prefix = prefix

    @property
    def object_graph(self):
        return self._index["object_graph"]

    def keys(self):
        return sorted(self._index["dtypes"])

    def has_object_graph(self):
        return True

    def has_tensor(self, key):
        return key in self._index["dtypes"] or key == OBJECT_GRAPH_KEY

    def dtype_name(self, key):
        return "string" if key == OBJECT_GRAPH_KEY else self._index["dtypes"][key]

    def shape(self, key):
        if key == OBJECT_GRAPH_KEY:
            return []
        if key in self._index["strings"]:
            return list(self._index["strings"][key]["shape"])
        return list(self._header[key]["shape"])

    def get_tensor(self, key):
        if key == OBJECT_GRAPH_KEY:
            return json.dumps(self.object_graph).encode()
        if key not in self._index["dtypes"]:
            raise errors.NotFoundError(None, None, f"Key {key} not found in checkpoint")
        if key in self._index["strings"]:
            s = self._index["strings"][key]
            flat = np.array([base64.b64decode(b) for b in s["values"]] or [], dtype=object)
            return flat.reshape(s["shape"]) if s["shape"] else flat.reshape(())[()]
        h = self._header[key]
        begin, end = h["data_offsets"]
        array = np.frombuffer(self._data[self._base + begin:self._base + end],
                              dtype=numpy_dtype(self._index["dtypes"][key])).reshape(h["shape"]).copy()
        return array


# The `checkpoint` state file, TF's text format.

def _quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unquote(s):
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1]
    return s.replace('\\"', '"').replace("\\\\", "\\")


def write_state(directory, latest, all_paths, timestamps=None, last_preserved=None, filename="checkpoint"):
    """Writes the state file; paths inside `directory` are stored relative, as TF does."""
    def rel(p):
        same = os.path.abspath(os.path.dirname(p)) == os.path.abspath(directory or ".")
        return os.path.basename(p) if same else p
    lines = [f"model_checkpoint_path: {_quote(rel(latest))}"]
    lines += [f"all_model_checkpoint_paths: {_quote(rel(p))}" for p in all_paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in (timestamps or [])]
    if last_preserved is not None:
        lines.append(f"last_preserved_timestamp: {last_preserved!r}")
    os.makedirs(directory or ".", exist_ok=True)
    _atomic_write(os.path.join(directory, filename), [("\n".join(lines) + "\n").encode()])


def read_state(directory, filename="checkpoint"):
    """The state file's fields, or None: {'model_checkpoint_path', 'all_model_checkpoint_paths',
    'all_model_checkpoint_timestamps', 'last_preserved_timestamp'}; paths joined to `directory`."""
    path = os.path.join(directory, filename or "checkpoint")
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    state = {"model_checkpoint_path": None, "all_model_checkpoint_paths": [], "all_model_checkpoint_timestamps": [],
             "last_preserved_timestamp": None}
    for line in text.splitlines():
        if ":" not in line:
            continue
        field, value = line.split(":", 1)
        field = field.strip()
        if field == "model_checkpoint_path":
            state[field] = _unquote(value)
        elif field == "all_model_checkpoint_paths":
            state[field].append(_unquote(value))
        elif field == "all_model_checkpoint_timestamps":
            state[field].append(float(value))
        elif field == "last_preserved_timestamp":
            state[field] = float(value)
    if state["model_checkpoint_path"] is None:
        return None

    def full(p):
        return p if os.path.isabs(p) else os.path.join(directory, p)
    state["model_checkpoint_path"] = full(state["model_checkpoint_path"])
    state["all_model_checkpoint_paths"] = [full(p) for p in state["all_model_checkpoint_paths"]]
    return state


def exists(prefix):
    return os.path.exists(prefix + _INDEX_SUFFIX)


def remove(prefix):
    for suffix in (_INDEX_SUFFIX, _DATA_SUFFIX):  # the index first: a half-removed checkpoint is never "found"
        try:
            os.unlink(prefix + suffix)
        except FileNotFoundError:
            pass
