"""tf.io's Example parsing: the feature configurations (FixedLenFeature, VarLenFeature, ...)
and parse_(single_)(sequence_)example. The parsing is one C++ op (src/io/example_ops.cpp), so
it traces into Dataset.map graphs; this module turns TF's configurations into its parameters
and its outputs into TF's structures (SparseTensor, RaggedTensor)."""
import collections as _collections

import numpy as _np

from . import _core

__all__ = ["FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature", "RaggedFeature", "SparseFeature", "parse_single_example",
           "parse_example", "parse_single_sequence_example", "parse_sequence_example"]

_FIXED, _VAR, _FIXED_SEQ, _VAR_SEQ = 0, 1, 2, 3


class FixedLenFeature(_collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """tf.io.FixedLenFeature(shape, dtype, default_value=None): exactly prod(shape) values."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(_collections.namedtuple("VarLenFeature", ["dtype"])):
    """tf.io.VarLenFeature(dtype): any number of values, as a SparseTensor."""


class FixedLenSequenceFeature(_collections.namedtuple("FixedLenSequenceFeature",
                                                      ["shape", "dtype", "allow_missing", "default_value"])):
    """tf.io.FixedLenSequenceFeature(shape, dtype, allow_missing=False, default_value=None)."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class RaggedFeature(_collections.namedtuple("RaggedFeature",
                                            ["dtype", "value_key", "partitions", "row_splits_dtype", "validate"])):
    """tf.io.RaggedFeature(dtype, value_key=None, partitions=(), row_splits_dtype=int32,
    validate=False): the values of one key, a RaggedTensor over a batch (partitions are not
    supported here)."""

    def __new__(cls, dtype, value_key=None, partitions=(), row_splits_dtype=None, validate=False):
        if row_splits_dtype is None:
            row_splits_dtype = _core.DType.int32
        if partitions:
            raise NotImplementedError("RaggedFeature: partitions are not supported")
        return super().__new__(cls, dtype, value_key, tuple(partitions), row_splits_dtype, validate)


class SparseFeature(_collections.namedtuple("SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """tf.io.SparseFeature(index_key, value_key, dtype, size, already_sorted=False): a SparseTensor
    of dense_shape [size] whose indices and values are two int64 / dtype features (one index_key:
    rank-1 sparse tensors)."""

    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        if not isinstance(index_key, str):
            if len(index_key) != 1:
                raise NotImplementedError("SparseFeature: only one index_key (rank-1 sparse tensors) is supported")
            index_key, size = index_key[0], (size[0] if isinstance(size, (list, tuple)) else size)
        return super().__new__(cls, index_key, value_key, dtype, int(size), already_sorted)


def _dtype(d, key):
    from ._tf_misc import as_dtype
    d = as_dtype(d)
    name = getattr(d, "name", str(d))
    if name not in ("float32", "int64", "string"):
        raise ValueError(f"Unsupported dtype {name} for feature '{key}': parsing supports float32, int64 and string")
    return d


def _shape(shape, key):
    if shape is None:
        raise ValueError(f"Missing shape for feature {key}.")
    dims = list(getattr(shape, "as_list", lambda: shape)()) if not isinstance(shape, int) else [shape]
    if any(d is None for d in dims):
        raise ValueError(f"All dimensions of shape for feature {key} need to be known but received {shape}.")
    return [int(d) for d in dims]


def _default(value, dtype, shape):
    if value is None:
        return None
    t = _core.convert_to_tensor(value, dtype=dtype) if not isinstance(value, _core.Tensor) else value
    if t.dtype != dtype:
        raise TypeError(f"default_value has dtype {t.dtype.name}, expected {dtype.name}")
    return t


def _configure(features, sequence_part):
    """The op's feature tuples and defaults, and how to build each result from its outputs."""
    specs, defaults, builders = [], [], []
    for key in sorted(features):
        f = features[key]
        if not isinstance(key, str):
            raise TypeError(f"feature keys must be str, got {key!r}")
        if isinstance(f, FixedLenFeature):
            if sequence_part:
                raise ValueError(f"Unsupported feature type FixedLenFeature for sequence feature '{key}'")
            d = _dtype(f.dtype, key)
            shape = _shape(f.shape, key)
            dv = _default(f.default_value, d, shape)
            specs.append((key, _FIXED, d, shape, dv is not None, False))
            builders.append((key, "dense", 1))
        elif isinstance(f, FixedLenSequenceFeature):
            if not sequence_part and not f.allow_missing:
                raise ValueError(f"Unsupported: FixedLenSequenceFeature requires allow_missing to be True ('{key}').")
            d = _dtype(f.dtype, key)
            shape = _shape(f.shape, key)
            dv = _default(f.default_value, d, shape)
            specs.append((key, _FIXED_SEQ, d, shape, dv is not None, bool(f.allow_missing)))
            builders.append((key, "sequence", 2))
        elif isinstance(f, VarLenFeature):
            d = _dtype(f.dtype, key)
            dv = None
            specs.append((key, _VAR_SEQ if sequence_part else _VAR, d, [], False, False))
            builders.append((key, "sparse", 3))
        elif isinstance(f, RaggedFeature):
            if sequence_part:
                raise NotImplementedError(f"RaggedFeature in sequence_features ('{key}') is not supported")
            d = _dtype(f.dtype, key)
            dv = None
            vkey = f.value_key or key
            specs.append((vkey, _VAR, d, [], False, False))
            builders.append((key, ("ragged", f.row_splits_dtype), 3))
        elif isinstance(f, SparseFeature):
            if sequence_part:
                raise ValueError(f"Unsupported feature type SparseFeature for sequence feature '{key}'")
            d = _dtype(f.dtype, key)
            dv = None
            specs.append((f.index_key, _VAR, _dtype("int64", key), [], False, False))
            specs.append((f.value_key, _VAR, d, [], False, False))
            builders.append((key, ("sparse_feature", f.size, f.already_sorted), 6))
        else:
            raise ValueError(f"Unsupported feature type {type(f).__name__} for '{key}'")
        if dv is not None:
            defaults.append(dv)
    return specs, defaults, builders


def _build(outputs, builders, batch, lengths=None):
    result, at = {}, 0
    for key, kind, n in builders:
        outs = outputs[at:at + n]
        at += n
        if kind == "dense":
            result[key] = outs[0]
        elif kind == "sequence":
            result[key] = outs[0]
            if lengths is not None:
                lengths[key] = outs[1]
        elif kind == "sparse":
            from .sparse import SparseTensor
            result[key] = SparseTensor(outs[0], outs[1], outs[2])
        elif kind[0] == "sparse_feature":
            result[key] = _sparse_feature(outs, key, kind[1], kind[2], batch)
        else:
            if not batch:
                result[key] = outs[1]
            else:
                from .ragged import RaggedTensor
                rows = _np.asarray(outs[0].numpy())[:, 0]
                nrows = int(outs[2].numpy()[0])
                splits = _np.concatenate([[0], _np.cumsum(_np.bincount(rows, minlength=nrows))]).astype(
                    _np.int64 if kind[1] == _core.DType.int64 else _np.int32)
                result[key] = RaggedTensor.from_row_splits(outs[1], splits)
    return result


def _sparse_feature(outs, key, size, already_sorted, batch):
    """The SparseTensor of a SparseFeature from its index and value features (sparse each)."""
    from .sparse import SparseTensor
    ix_idx, ix, _, v_idx, values, _ = outs
    ix_idx, ix, v_idx = (_np.asarray(t.numpy()) for t in (ix_idx, ix, v_idx))
    vals = _np.asarray(values.numpy())
    rows_i = ix_idx[:, 0] if batch else _np.zeros(len(ix), _np.int64)
    rows_v = v_idx[:, 0] if batch else _np.zeros(len(vals), _np.int64)
    if len(ix) != len(vals) or (rows_i != rows_v).any():
        from . import errors
        raise errors.InvalidArgumentError(None, None, f"SparseFeature '{key}': the index and value features have different "
                                                      f"lengths ({len(ix)} indices, {len(vals)} values)")
    order = _np.arange(len(ix)) if already_sorted else _np.lexsort((ix, rows_i))
    ind = _np.stack([rows_i[order], ix[order]], 1) if batch else ix[order].reshape(-1, 1)
    nrows = int(outs[2].numpy()[0]) if batch else None
    shape = [nrows, size] if batch else [size]
    return SparseTensor(ind.astype(_np.int64), _core.convert_to_tensor(vals[order]), _np.array(shape, _np.int64))


def _serialized(serialized, rank):
    t = serialized if isinstance(serialized, _core.Tensor) else _core.convert_to_tensor(serialized)
    if getattr(t.dtype, "name", "") != "string":
        raise TypeError(f"serialized must be a string tensor, got {t.dtype.name}")
    if rank is not None and len(t.shape) != rank:
        raise ValueError(f"serialized must be {'a scalar' if rank == 0 else 'a vector'}, got shape {tuple(t.shape)}")
    return t


def _parse(serialized, context, sequence, is_sequence, rank):
    t = _serialized(serialized, rank)
    cspecs, cdefaults, cbuild = _configure(context or {}, False)
    sspecs, sdefaults, sbuild = _configure(sequence or {}, True) if is_sequence else ([], [], [])
    outputs = _core._io._parse_example(t, cspecs + sspecs, cdefaults + sdefaults, is_sequence)
    ncontext = sum(n for _, _, n in cbuild)
    batch = len(t.shape) == 1
    lengths = {}
    ctx = _build(outputs[:ncontext], cbuild, batch)
    seq = _build(outputs[ncontext:], sbuild, batch, lengths)
    return ctx, seq, lengths


def parse_single_example(serialized, features, example_names=None, name=None):
    """tf.io.parse_single_example: one serialized Example (a string scalar) -> a dict of
    Tensors (FixedLenFeature), SparseTensors (VarLenFeature) and Tensors (RaggedFeature)."""
    if not features:
        raise ValueError("Must provide at least one feature key.")
    return _parse(serialized, features, None, False, 0)[0]


def parse_example(serialized, features, example_names=None, name=None):
    """tf.io.parse_example: a vector of serialized Examples -> batched results (dense [B, ...],
    SparseTensor [B, n], RaggedTensor)."""
    if not features:
        raise ValueError("Must provide at least one feature key.")
    return _parse(serialized, features, None, False, 1)[0]


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None, example_name=None, name=None):
    """tf.io.parse_single_sequence_example: (context dict, feature_lists dict)."""
    if not context_features and not sequence_features:
        raise ValueError("Must provide at least one context_features or sequence_features key.")
    ctx, seq, _ = _parse(serialized, context_features, sequence_features, True, 0)
    return ctx, seq


def parse_sequence_example(serialized, context_features=None, sequence_features=None, example_names=None, name=None):
    """tf.io.parse_sequence_example: a vector of SequenceExamples -> (context, feature_lists,
    lengths of the FixedLenSequenceFeature lists)."""
    if not context_features and not sequence_features:
        raise ValueError("Must provide at least one context_features or sequence_features key.")
    return _parse(serialized, context_features, sequence_features, True, 1)
