"""tf.io's tensor and text decoders: serialize_tensor / parse_tensor (TF's TensorProto bytes,
in C++: src/io/tensor_proto.cpp), decode_raw, decode_csv, decode_compressed, matching_files."""
import glob as _glob
import gzip as _gzip
import zlib as _zlib

import numpy as _np

from . import _core

__all__ = ["serialize_tensor", "parse_tensor", "decode_raw", "decode_csv", "decode_compressed", "matching_files"]


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
    have one length unless fixed_length (bytes per string, truncated or zero-padded) is given."""
    dt = _as_dtype(out_type)
    if dt.name == "string":
        raise TypeError("decode_raw: out_type cannot be string")
    np_dt = _np.dtype(dt.as_numpy_dtype if hasattr(dt, "as_numpy_dtype") else dt.name)
    if not little_endian:
        np_dt = np_dt.newbyteorder(">")
    size = np_dt.itemsize
    s = _strings(input_bytes)
    flat = list(s.reshape(-1))
    err = _errors().InvalidArgumentError
    if fixed_length is not None:
        n = int(fixed_length.numpy() if hasattr(fixed_length, "numpy") else fixed_length)
        if n % size:
            raise err(None, None, f"fixed_length ({n}) must be a multiple of the size of out_type ({size})")
        flat = [bytes(b[:n]).ljust(n, b"\0") for b in flat]
    else:
        n = len(flat[0]) if flat else 0
        for i, b in enumerate(flat):
            if len(b) != n:
                raise err(None, None, f"DecodeRaw requires input strings to all be the same size, but element {i} has size "
                                      f"{len(b)} != {n}")
        if n % size:
            raise err(None, None, f"Input to DecodeRaw has length {n} that is not a multiple of {size}, the size of {dt.name}")
    data = _np.frombuffer(b"".join(flat), dtype=np_dt).astype(np_dt.newbyteorder("="))
    out = data.reshape(s.shape + (n // size,))
    return _core.convert_to_tensor(out, dtype=dt)


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
