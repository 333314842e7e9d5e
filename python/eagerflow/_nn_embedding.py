"""tf.nn.embedding_lookup_sparse and safe_embedding_lookup_sparse over ef.sparse.SparseTensor:
each row of the sparse ids is a bag of ids whose embeddings (gathered, optionally weighted) are
combined by a segment sum over the rows. Values and params flow through gather and segment
sums, so they differentiate; the sparse structure (which rows exist) is read eagerly, as
ef.sparse's other functions read it."""
import numpy as _np

from . import _core
from . import math as _math
from . import sparse as _sparse

__all__ = ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]


def _params(params, what):
    """A list of shards is TF's "div" partition: concatenated in order, id i is row i."""
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError(f"{what}: params must not be empty")
        return params[0] if len(params) == 1 else _core.concat([_core.convert_to_tensor(p) for p in params], 0)
    return _core.convert_to_tensor(params)


def _check_sparse(sp, what, arg):
    if not isinstance(sp, _sparse.SparseTensor):
        raise TypeError(f"{what}: {arg} must be a SparseTensor, got {type(sp).__name__}")


def embedding_lookup_sparse(params, sp_ids, sp_weights, combiner=None, max_norm=None, name=None, allow_fast_lookup=False):
    """Row r of the result combines params[id] for the ids in row r of sp_ids ("sum", "mean":
    divided by the weights' sum, "sqrtn": by the root of their squares' sum); rows up to the
    last one that has ids (empty rows are zeros)."""
    what = "embedding_lookup_sparse"
    combiner = "mean" if combiner is None else combiner
    if combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"{what}: combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    _check_sparse(sp_ids, what, "sp_ids")
    if sp_weights is not None:
        _check_sparse(sp_weights, what, "sp_weights")
    p = _params(params, what)
    rows = _core.cast(sp_ids.indices[:, 0], _core.DType.int32)
    ids = _core.cast(sp_ids.values, _core.DType.int64)
    host_rows = rows.numpy()
    segments = int(host_rows.max()) + 1 if host_rows.size else 0
    emb = _core.gather(p, ids, 0)
    if max_norm is not None:
        emb = _math.clip_by_norm(emb, max_norm, axes=list(range(1, len(emb._shape_tuple))))
    extra = [1] * (len(emb._shape_tuple) - 1)
    if sp_weights is None:
        total = _math.unsorted_segment_sum(emb, rows, segments)
        if combiner == "sum":
            return total
        counts = _math.unsorted_segment_sum(_core.ones_like(_core.cast(rows, emb.dtype)), rows, segments)
        div = counts if combiner == "mean" else _core.sqrt(counts)
        return total / _core.reshape(_core.maximum(div, _core.ones_like(div)), [-1] + extra)
    w = _core.cast(sp_weights.values, emb.dtype)
    total = _math.unsorted_segment_sum(emb * _core.reshape(w, [-1] + extra), rows, segments)
    if combiner == "sum":
        return total
    div = _math.unsorted_segment_sum(w if combiner == "mean" else w * w, rows, segments)
    if combiner == "sqrtn":
        div = _core.sqrt(div)
    # A row whose weights sum to zero has a zero sum too: TF's divide_no_nan gives 0 there.
    safe = _core.where(div == 0.0, _core.ones_like(div), div)
    return _core.where(_core.reshape(div == 0.0, [-1] + extra), _core.zeros_like(total), total / _core.reshape(safe, [-1] + extra))


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None, combiner="mean", default_id=None,
                                 max_norm=None, name=None, allow_fast_lookup=False):
    """embedding_lookup_sparse that drops ids < 0 (and weights <= 0), gives every row of the
    dense shape a result (default_id's embedding, or zeros, for an empty row), and takes ids of
    any rank >= 2 (the result has the ids' leading dims)."""
    what = "safe_embedding_lookup_sparse"
    _check_sparse(sparse_ids, what, "sparse_ids")
    if sparse_weights is not None:
        _check_sparse(sparse_weights, what, "sparse_weights")
    p = _params(embedding_weights, what)
    shape = [int(v) for v in sparse_ids.dense_shape.numpy()]
    if len(shape) < 2:
        raise ValueError(f"{what}: sparse_ids must have rank >= 2, got dense_shape {shape}")
    rows = int(_np.prod(shape[:-1]))
    flat = [rows, shape[-1]]
    ids = _sparse.reshape(sparse_ids, flat)
    weights = None if sparse_weights is None else _sparse.reshape(sparse_weights, flat)
    keep = ids.values.numpy() >= 0
    if weights is not None:
        keep &= weights.values.numpy() > 0
    ids = _sparse.retain(ids, keep)
    if weights is not None:
        weights = _sparse.retain(weights, keep)
    ids, empty = _sparse.fill_empty_rows(ids, 0 if default_id is None else int(default_id))
    if weights is not None:
        weights, _ = _sparse.fill_empty_rows(weights, 1.0)
    out = embedding_lookup_sparse(p, ids, weights, combiner, max_norm)
    extra = list(out._shape_tuple[1:])
    if default_id is None:
        out = _core.where(_core.reshape(empty, [-1] + [1] * len(extra)), _core.zeros_like(out), out)
    return _core.reshape(out, shape[:-1] + extra)
