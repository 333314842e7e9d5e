"""tf.io's tensor and text decoders: serialize_tensor / parse_tensor (TF's TensorProto bytes,
in C++: src/io/tensor_proto.cpp), decode_raw, decode_csv, decode_compressed, matching_files."""
import glob as _glob
import gzip as _gzip
import zlib as _zlib

import numpy as _np

from . import _core

__all__ = ["serialize_tensor", "parse_tensor", "serialize_sparse", "serialize_many_sparse", "deserialize_many_sparse", "decode_raw", "decode_csv", "decode_compressed", "matching_files"]


def _errors():
    from . import errors
    return errors


def _strings(x):
    """A string tensor's elements as a NumPy object array of bytes."""
    t = x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x)
    if getattr(t.dtype, "name", "") != "string":
        raise TypeError(f"expected a string tensor, got {t.dtype.name}")
    return _np.asarray(t.numpy(), dtype=object)


def _string_tensor(arr):
    arr = _np.asarray(arr, dtype=object)
    return _core.convert_to_tensor(arr) if arr.ndim else _core.convert_to_tensor(arr.item())


def _as_dtype(d):
    from ._tf_misc import as_dtype
    return as_dtype(d)


def serialize_tensor(tensor, name=None):
    """tf.io.serialize_tensor: the tensor as TF's TensorProto bytes (a string scalar)."""
    return _core.convert_to_tensor(_core._io._serialize_tensor(_core.convert_to_tensor(tensor)))


def parse_tensor(serialized, out_type, name=None):
    """tf.io.parse_tensor: a TensorProto's bytes (a string scalar) as a tensor of out_type;
    another dtype in the proto is an InvalidArgumentError."""
    s = _strings(serialized)
    if s.ndim != 0:
        raise _errors().InvalidArgumentError(None, None, f"Expected `serialized` to be a scalar, got shape: {list(s.shape)}")
    return _core._io._parse_tensor(bytes(s.item()), _as_dtype(out_type))


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None, name=None):
    """tf.io.decode_raw: each string's bytes as numbers of out_type (a new last axis); all must
    have one length unless fixed_length (bytes per string, truncated or zero-padded) is given.
    An op (src/io/decode_raw.cpp): it runs inside Dataset.map graphs."""
    dt = _as_dtype(out_type)
    if dt.name == "string":
        raise TypeError("decode_raw: out_type cannot be string")
    t = input_bytes if isinstance(input_bytes, _core.Tensor) else _core.convert_to_tensor(input_bytes)
    n = -1 if fixed_length is None else int(fixed_length.numpy() if hasattr(fixed_length, "numpy") else fixed_length)
    if fixed_length is not None and n < 0:
        raise ValueError(f"fixed_length must be >= 0, got {n}")
    return _core._io._decode_raw(t, dt, bool(little_endian), n)


def decode_compressed(bytes, compression_type="", name=None):  # noqa: A002 - TF's name
    """tf.io.decode_compressed: ZLIB or GZIP data decompressed element by element ('' leaves it)."""
    kind = compression_type if isinstance(compression_type, str) else compression_type.decode()
    if kind not in ("", "ZLIB", "GZIP"):
        raise _errors().InvalidArgumentError(None, None, "Only ZLIB, GZIP or NONE are supported compressions")
    s = _strings(bytes)
    if not kind:
        return _string_tensor(s)
    out = _np.empty(s.shape, dtype=object)
    for idx, b in _np.ndenumerate(s):
        try:
            out[idx] = _zlib.decompress(b) if kind == "ZLIB" else _gzip.decompress(b)
        except (_zlib.error, OSError, EOFError) as e:
            raise _errors().DataLossError(None, None, f"inflate() failed: {e}") from None
    return _string_tensor(out)


def matching_files(pattern, name=None):
    """tf.io.matching_files: the files matching the glob pattern(s), sorted (a 1-D string tensor,
    empty when none match)."""
    pats = _strings(pattern).reshape(-1)
    found = []
    for p in pats:
        found += sorted(f.encode() for f in _glob.glob(p.decode()))
    return _core.convert_to_tensor(_np.array(found, dtype=object)) if found else _core.convert_to_tensor(_np.array([], dtype=object).reshape(0))


def _parse_number(text, dt):
    t = text.strip()
    if dt.name in ("float32", "float64"):
        try:
            return float(t)
        except ValueError:
            return None
    try:
        v = int(t, 10)
    except ValueError:
        return None
    lim = 1 << (31 if dt.name == "int32" else 63)
    return v if -lim <= v < lim else None


def _split_csv(rec, delim, quotes, ri):
    err = _errors().InvalidArgumentError
    fields, i, n = [], 0, len(rec)
    while True:
        if quotes and i < n and rec[i] == '"':
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise err(None, None, f"Quoted field has to end with quote followed by delim or end in record {ri}")
                if rec[j] == '"':
                    if j + 1 < n and rec[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    j += 1
                    break
                buf.append(rec[j])
                j += 1
            if j < n and rec[j] != delim:
                raise err(None, None, "Quote inside a string has to be escaped by another quote")
            fields.append("".join(buf))
            if j >= n:
                return fields
            i = j + 1
        else:
            j = rec.find(delim, i)
            if j < 0:
                fields.append(rec[i:])
                return fields
            field = rec[i:j]
            if quotes and '"' in field:
                raise err(None, None, f"Unquoted fields cannot have quotes inside in record {ri}")
            fields.append(field)
            i = j + 1


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, na_value="", select_cols=None, name=None):
    """tf.io.decode_csv: each record's fields as one tensor per column (of the record's shape),
    typed and defaulted by record_defaults (an empty default makes the column required)."""
    err = _errors().InvalidArgumentError
    if len(field_delim) != 1:
        raise err(None, None, "field_delim should be only 1 char")
    recs = _strings(records)
    defaults = [d if isinstance(d, _core.Tensor) else _core.convert_to_tensor(d if not isinstance(d, list) or d else []) for d in
                record_defaults]
    dts = []
    for k, d in enumerate(defaults):
        if d.dtype.name not in ("float32", "float64", "int32", "int64", "string"):
            raise TypeError(f"record_defaults[{k}]: unsupported dtype {d.dtype.name}")
        if int(_np.prod(d.shape)) > 1:
            raise ValueError(f"record_defaults[{k}] must have at most one element")
        dts.append(d.dtype)
    dvals = [(d.numpy().reshape(-1)[0] if int(_np.prod(d.shape)) == 1 else None) for d in defaults]
    if select_cols is not None:
        select_cols = list(select_cols)
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])) or (select_cols and select_cols[0] < 0):
            raise ValueError("select_cols is not strictly increasing.")
        if len(select_cols) != len(defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    na = na_value.decode() if isinstance(na_value, bytes) else na_value
    cols = [_np.empty(recs.shape, dtype=object) for _ in defaults]
    for ri, (idx, rec) in enumerate(_np.ndenumerate(recs)):
        fields = _split_csv(rec.decode("utf-8", "surrogateescape"), field_delim, use_quote_delim, ri)
        if select_cols is not None:
            if select_cols and select_cols[-1] >= len(fields):
                raise err(None, None, f"Expect {select_cols[-1] + 1} fields but have {len(fields)} in record {ri}")
            fields = [fields[c] for c in select_cols]
        if len(fields) != len(defaults):
            raise err(None, None, f"Expect {len(defaults)} fields but have {len(fields)} in record {ri}")
        for k, text in enumerate(fields):
            dt = dts[k]
            if text == "" or (na and text == na):
                if dvals[k] is None:
                    raise err(None, None, f"Field {k} is required but missing in record {ri}!")
                cols[k][idx] = dvals[k]
            elif dt.name == "string":
                cols[k][idx] = text.encode("utf-8", "surrogateescape")
            else:
                v = _parse_number(text, dt)
                if v is None:
                    raise err(None, None, f"Field {k} in record {ri} is not a valid {dt.name}: {text}")
                cols[k][idx] = v
    out = []
    for k, c in enumerate(cols):
        if dts[k].name == "string":
            out.append(_string_tensor(c))
        else:
            out.append(_core.convert_to_tensor(_np.asarray(c.tolist(), dtype=dts[k].name).reshape(recs.shape), dtype=dts[k]))
    return out


def _sparse_parts(sp_input):
    from .sparse import SparseTensor
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"expected a SparseTensor, got {type(sp_input).__name__}")
    return sp_input.indices, sp_input.values, sp_input.dense_shape


def _check_out_type(out_type):
    if _as_dtype(out_type).name != "string":
        raise NotImplementedError("serialize_sparse: only out_type=tf.string is supported (variant is TF-internal)")


def serialize_sparse(sp_input, out_type=None, name=None):
    """tf.io.serialize_sparse: [indices, values, dense_shape] as three TensorProto strings."""
    if out_type is not None:
        _check_out_type(out_type)
    parts = [_core._io._serialize_tensor(t) for t in _sparse_parts(sp_input)]
    return _core.convert_to_tensor(_np.array(parts, dtype=object))


def serialize_many_sparse(sp_input, out_type=None, name=None):
    """tf.io.serialize_many_sparse: a SparseTensor of rank >= 2 as [N, 3] strings, row n the
    serialized SparseTensor of its n-th entry along the first axis."""
    if out_type is not None:
        _check_out_type(out_type)
    ind, vals, shape = _sparse_parts(sp_input)
    ind, shape = _np.asarray(ind.numpy()), _np.asarray(shape.numpy())
    if len(shape) < 2:
        raise _errors().InvalidArgumentError(None, None, "Rank of input SparseTensor should be > 1, but saw rank: "
                                                         f"{len(shape)}")
    sub_shape = _np.ascontiguousarray(shape[1:], dtype=_np.int64)
    out = _np.empty((int(shape[0]), 3), dtype=object)
    rows = ind[:, 0]
    for n in range(int(shape[0])):
        pick = _np.nonzero(rows == n)[0]
        sub_ind = _np.ascontiguousarray(ind[pick, 1:], dtype=_np.int64).reshape(len(pick), len(shape) - 1)
        sub_vals = _core.gather(vals, _core.convert_to_tensor(pick.astype(_np.int64)))
        out[n] = [_core._io._serialize_tensor(_core.convert_to_tensor(sub_ind)), _core._io._serialize_tensor(sub_vals),
                  _core._io._serialize_tensor(_core.convert_to_tensor(sub_shape))]
    return _core.convert_to_tensor(out)


def deserialize_many_sparse(serialized_sparse, dtype, rank=None, name=None):
    """tf.io.deserialize_many_sparse: [N, 3] serialized SparseTensors -> one SparseTensor of
    dense_shape [N, max of their dense shapes...]."""
    from .sparse import SparseTensor
    s = _strings(serialized_sparse)
    err = _errors().InvalidArgumentError
    if s.ndim != 2 or s.shape[1] != 3:
        raise err(None, None, f"Serialized sparse should be a matrix with 3 columns, got shape {list(s.shape)}")
    dt = _as_dtype(dtype)
    i64 = _core.DType.int64
    inds, vals, shapes = [], [], []
    for n in range(s.shape[0]):
        ind = _np.asarray(_core._io._parse_tensor(bytes(s[n, 0]), i64).numpy())
        try:
            v = _core._io._parse_tensor(bytes(s[n, 1]), dt)
        except err:
            raise err(None, None, f"Requested SparseTensor of type {dt.name} but SparseTensor[{n}].values has another "
                                  "dtype") from None
        shp = _np.asarray(_core._io._parse_tensor(bytes(s[n, 2]), i64).numpy())
        if ind.ndim != 2 or ind.shape[1] != len(shp) or v.shape[0] != ind.shape[0]:
            raise err(None, None, f"SparseTensor[{n}] has inconsistent indices, values and dense_shape")
        if shapes and len(shp) != len(shapes[0]):
            raise err(None, None, f"Inconsistent shape across SparseTensors: rank prior to SparseTensor[{n}] was "
                                  f"{len(shapes[0])} but rank of SparseTensor[{n}] is {len(shp)}")
        inds.append(_np.concatenate([_np.full((len(ind), 1), n, _np.int64), ind], 1))
        vals.append(v.numpy())
        shapes.append(shp)
    if rank is not None and shapes and len(shapes[0]) + 1 != int(rank):
        raise err(None, None, f"rank is {rank} but the SparseTensors have rank {len(shapes[0]) + 1}")
    r = len(shapes[0]) + 1 if shapes else (int(rank) if rank is not None else 1)
    ind = _np.concatenate(inds) if inds else _np.zeros((0, r), _np.int64)
    shape = _np.concatenate([[s.shape[0]], _np.max(shapes, axis=0)]) if shapes else _np.array([0] + [0] * (r - 1))
    values = _np.concatenate(vals) if vals else _np.zeros([0], dtype=object if dt.name == "string" else dt.name)
    return SparseTensor(ind.astype(_np.int64), _core.convert_to_tensor(values, dtype=dt) if dt.name != "string" else
                        _core.convert_to_tensor(_np.asarray(values, dtype=object)), shape.astype(_np.int64))
