"""TF's candidate samplers (tf.random.* and tf.nn.* under the same names), compute_accidental_hits
and the sampled losses nce_loss and sampled_softmax_loss.

The samplers are one C++ op (src/ops/candidate_sampler_op.cpp) with TF's expected-count formulas.
The losses are compositions of ops (gather, matmul, the cross entropies), so they trace and
differentiate; they take TF's `sampled_values` (a sampler's three results) or draw them with the
log-uniform sampler as TF does. Accidental hits are removed with a dense mask, the same values as
TF's sparse one; compute_accidental_hits itself returns a list whose length depends on the values,
so it runs eagerly only (as boolean_mask).
"""
import collections as _collections

import numpy as _np

from . import _core
from . import errors as _errors

_d = _core._random_dists
_int64 = _core.DType.int64
_FLOAT_MAX = float(_np.finfo(_np.float32).max)

__all__ = ["uniform_candidate_sampler", "log_uniform_candidate_sampler", "learned_unigram_candidate_sampler",
           "fixed_unigram_candidate_sampler", "all_candidate_sampler", "compute_accidental_hits", "nce_loss",
           "sampled_softmax_loss"]


def _result(name):
    return _collections.namedtuple(name, ["sampled_candidates", "true_expected_count", "sampled_expected_count"])


_Uniform = _result("UniformCandidateSampler")
_LogUniform = _result("LogUniformCandidateSampler")
_Learned = _result("LearnedUnigramCandidateSampler")
_Fixed = _result("FixedUnigramCandidateSampler")
_All = _result("AllCandidateSampler")
_Hits = _collections.namedtuple("ComputeAccidentalHits", ["indices", "ids", "weights"])


def _classes(x):
    """TF's true classes are an int64 matrix: lists and arrays become int64; a tensor of another
    dtype is an InvalidArgumentError (from the op)."""
    if isinstance(x, (_core.Tensor, _core.Variable)):
        return x
    return _core.constant(_np.asarray(x, dtype=_np.int64))


def _seed(seed):
    return None if seed is None else int(seed)


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """tf.random.uniform_candidate_sampler: candidates uniform over [0, range_max)."""
    return _Uniform(*_d.candidate_sampler("uniform", _classes(true_classes), int(num_true), int(num_sampled),
                                          bool(unique), int(range_max), _seed(seed)))


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """tf.random.log_uniform_candidate_sampler: P(k) = log((k + 2) / (k + 1)) / log(range_max + 1)."""
    return _LogUniform(*_d.candidate_sampler("log_uniform", _classes(true_classes), int(num_true), int(num_sampled),
                                             bool(unique), int(range_max), _seed(seed)))


def learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """tf.random.learned_unigram_candidate_sampler: P(k) proportional to 1 + the times k was a true
    class in earlier calls with the same arguments (TF's sampler learns as its kernel is reused)."""
    return _Learned(*_d.candidate_sampler("learned_unigram", _classes(true_classes), int(num_true), int(num_sampled),
                                          bool(unique), int(range_max), _seed(seed)))


def _vocab_weights(vocab_file):
    """The last comma-separated field of each line of a vocabulary file, as TF reads it."""
    weights = []
    with open(vocab_file, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\r\n")
            try:
                weights.append(float(line.split(",")[-1]))
            except ValueError:
                raise _errors.InvalidArgumentError(None, None, f"Wrong vocabulary format at line: {line}") from None
    return weights


def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, vocab_file="",
                                    distortion=1.0, num_reserved_ids=0, num_shards=1, shard=0, unigrams=(), seed=None,
                                    name=None):
    """tf.random.fixed_unigram_candidate_sampler: P(k) proportional to unigrams[k]^distortion (from
    `unigrams` or the last field of each line of `vocab_file`), over this shard's ids."""
    unigrams = list(unigrams)
    if vocab_file and unigrams:
        raise _errors.InvalidArgumentError(None, None, "Must only provide one of vocab_file and unigrams.")
    if vocab_file:
        unigrams = _vocab_weights(vocab_file)
    if not unigrams:
        raise _errors.InvalidArgumentError(None, None, "Must provide either vocab_file or unigrams.")
    return _Fixed(*_d.fixed_unigram_candidate_sampler(
        _classes(true_classes), int(num_true), int(num_sampled), bool(unique), int(range_max),
        [float(w) for w in unigrams], float(distortion), int(num_reserved_ids), int(num_shards), int(shard), _seed(seed)))


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """tf.random.all_candidate_sampler: every class 0 .. num_sampled-1, each expected once."""
    return _All(*_d.all_candidate_sampler(_classes(true_classes), int(num_true), int(num_sampled), bool(unique)))


def _hit_mask(true_classes, sampled):
    """[batch, num_true, num_sampled]: true class == sampled candidate, only at the last position of
    each candidate value (TF maps a candidate to its last position)."""
    n = sampled._shape_tuple[0]
    same = _core.equal(_core.expand_dims(sampled, 1), _core.expand_dims(sampled, 0))  # [S, S]
    later = _core.constant(_np.triu(_np.ones((n, n), dtype=bool), 1))
    is_last = _core.logical_not(_core.reduce_any(_core.logical_and(same, later), axis=1))
    hits = _core.equal(_core.expand_dims(true_classes, 2), _core.reshape(sampled, [1, 1, n]))
    return _core.logical_and(hits, _core.reshape(is_last, [1, 1, n]))


def _check_hits_args(true_classes, sampled, num_true):
    t = true_classes._shape_tuple
    if len(t) != 2 or (t[1] is not None and t[1] != int(num_true)):
        raise _errors.InvalidArgumentError(None, None, "true_candidates must be a batch_size * num_true matrix")
    if len(sampled._shape_tuple) != 1:
        raise _errors.InvalidArgumentError(None, None, "sampled_candidates must be a vector, which is typically an "
                                                       "output from CandidateSampler")
    for x in (true_classes, sampled):
        if x.dtype != _int64:
            raise _errors.InvalidArgumentError(None, None, f"compute_accidental_hits: expected int64 ids, got {x.dtype}")


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """tf.nn.compute_accidental_hits: (indices int32, ids int64, weights float32 -FLT_MAX) of each true
    class, row by row, that is also a sampled candidate (ids: its position among the candidates).
    Eager only: the number of hits depends on the values."""
    t, s = _classes(true_classes), _classes(sampled_candidates)
    _check_hits_args(t, s, num_true)
    n = s._shape_tuple[0]
    positions = _core.reshape(_core.cast(_core.range(0, n, 1), _int64), [1, 1, n])
    last = _core.reduce_max(_core.where(_hit_mask(t, s), positions, _core.fill([1, 1, n], -1, _int64)), axis=2)
    coords = _core._array.where_coordinates(last >= 0)
    ids = _core.gather_nd(last, coords)
    rows = _core.cast(coords[:, 0], _core.DType.int32)
    return _Hits(rows, ids, _core.fill([coords._shape_tuple[0]], -_FLOAT_MAX, _core.DType.float32))


def _sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values,
                    subtract_log_q, remove_accidental_hits, seed):
    """TF's _compute_sampled_logits: logits [batch, num_true + num_sampled] and their labels."""
    if isinstance(weights, (list, tuple)):  # shards by "div": consecutive blocks of rows
        weights = weights[0] if len(weights) == 1 else _core.concat(list(weights), 0)
    weights = _core.convert_to_tensor(weights)
    inputs = _core.convert_to_tensor(inputs)
    biases = _core.convert_to_tensor(biases)
    labels = _core.convert_to_tensor(labels)
    if labels.dtype != _int64:
        labels = _core.cast(labels, _int64)
    num_true = int(num_true)
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True, num_classes, seed)
    sampled, true_expected, sampled_expected = (_core.stop_gradient(_core.convert_to_tensor(v)) for v in sampled_values)
    if sampled.dtype != _int64:
        sampled = _core.cast(sampled, _int64)
    labels_flat = _core.reshape(labels, [-1])
    dim = weights._shape_tuple[1]
    true_w = _core.reshape(_core.gather(weights, labels_flat, 0), [-1, num_true, dim])
    true_b = _core.reshape(_core.gather(biases, labels_flat, 0), [-1, num_true])
    true_logits = _core.reduce_sum(_core.expand_dims(inputs, 1) * true_w, axis=2) + true_b
    sampled_logits = _core.matmul(inputs, _core.gather(weights, sampled, 0), transpose_b=True) + \
        _core.gather(biases, sampled, 0)
    if remove_accidental_hits:
        hit = _core.reduce_any(_hit_mask(labels, sampled), axis=1)  # [batch, num_sampled]
        sampled_logits = sampled_logits + _core.where(hit, _core.constant(-_FLOAT_MAX, sampled_logits.dtype),
                                                      _core.constant(0.0, sampled_logits.dtype))
    if subtract_log_q:
        true_logits = true_logits - _core.log(_core.cast(true_expected, true_logits.dtype))
        sampled_logits = sampled_logits - _core.log(_core.cast(sampled_expected, sampled_logits.dtype))
    logits = _core.concat([true_logits, sampled_logits], 1)
    out_labels = _core.concat([_core.ones_like(true_logits) / float(num_true), _core.zeros_like(sampled_logits)], 1)
    return logits, out_labels


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1, sampled_values=None,
             remove_accidental_hits=False, name="nce_loss"):
    """tf.nn.nce_loss: noise-contrastive estimation, per example [batch]: sigmoid cross entropy of
    the true classes (label 1/num_true) and the sampled ones (label 0), logits less log(expected count)."""
    from . import nn as _nn
    logits, out_labels = _sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                                         sampled_values, True, remove_accidental_hits, None)
    losses = _nn.sigmoid_cross_entropy_with_logits(labels=out_labels, logits=logits)
    return _core.reduce_sum(losses, axis=1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1, sampled_values=None,
                         remove_accidental_hits=True, seed=None, name="sampled_softmax_loss"):
    """tf.nn.sampled_softmax_loss: softmax cross entropy over the true and sampled classes [batch]."""
    from . import nn as _nn
    logits, out_labels = _sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                                         sampled_values, True, remove_accidental_hits, seed)
    return _nn.softmax_cross_entropy_with_logits(labels=_core.stop_gradient(out_labels), logits=logits)
