"""tf.nn's connectionist temporal classification: ctc_loss (TF 2's dense-label form, SparseTensor
labels too), the greedy and beam-search decoders, collapse_repeated and ctc_unique_labels.

ctc_loss runs the forward (alpha) recursion in log space over the extended label (a blank
between labels and at both ends) as ops, one step per frame, so it traces and its gradient is
autodiff's: exactly the forward-backward gradient TF's kernel computes (softmax minus the
alignment posterior). The frames are an ef.scan: one node when traced, its gradient a reverse
scan. Impossible states hold -1e30 rather than -inf, so no gradient sees
inf - inf; a label that cannot fit its frames gives a loss of about 1e30.

The decoders and the label helpers return data-dependent shapes (TF gives SparseTensors and
padded batches): they run on the host over eager values, as ef.sparse's structure does."""
import math as _pymath

import numpy as _np

from . import _core
from . import _scan
from . import errors as _errors
from . import sparse as _sparse

__all__ = ["ctc_loss", "ctc_greedy_decoder", "ctc_beam_search_decoder", "collapse_repeated", "ctc_unique_labels"]

_IMPOSSIBLE = -1e30


def _host(x, what):
    try:
        return _core.convert_to_tensor(x).numpy() if not isinstance(x, _np.ndarray) else x
    except Exception as e:  # a symbolic tensor inside ef.function
        raise _errors.InvalidArgumentError(f"{what} reads its input's values on the host (its result's shape depends "
                                           f"on them), so it runs eagerly, not inside ef.function: {e}") from None


def _lengths_of_sparse(sp, batch):
    rows = _host(sp.indices, "ctc_loss")[:, 0]
    return _np.bincount(rows, minlength=batch).astype(_np.int32)


def ctc_loss(labels, logits, label_length, logit_length, logits_time_major=True, unique=None, blank_index=None,
             name=None):
    """-log p(labels | logits) per example: logits [frames, batch, classes] (time major) or
    [batch, frames, classes], labels [batch, max_label_length] (the first label_length of each
    row count) or a SparseTensor (its rows' entries; then blank_index is required); blank_index
    0 by default for dense labels, a negative one counts from the number of classes."""
    x = _core.convert_to_tensor(logits)
    if not x.dtype.is_floating:
        raise TypeError(f"ctc_loss: logits must be floating point, got {x.dtype}")
    if len(x._shape_tuple) != 3:
        raise ValueError(f"ctc_loss: logits must be 3-D, got shape {tuple(x._shape_tuple)}")
    if logits_time_major:
        x = _core.transpose(x, [1, 0, 2])
    batch, frames, classes = x._shape_tuple
    if frames is None or classes is None:
        raise ValueError(f"ctc_loss: the number of frames and classes must be known, got logits {tuple(x._shape_tuple)}")
    if isinstance(labels, _sparse.SparseTensor):
        if blank_index is None:
            raise ValueError("Argument `blank_index` must be provided when `labels` is a `SparseTensor`.")
        n = batch if batch is not None else int(_host(labels.dense_shape, "ctc_loss")[0])
        label_length = _lengths_of_sparse(labels, n)
        labels = _sparse.to_dense(labels)
    blank = 0 if blank_index is None else int(blank_index)
    if blank < 0:
        blank += classes
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank_index {blank_index} is outside the {classes} classes")
    y = _core.cast(_core.convert_to_tensor(labels), _core.DType.int32)
    if len(y._shape_tuple) != 2:
        raise ValueError(f"ctc_loss: labels must be [batch, max_label_length], got shape {tuple(y._shape_tuple)}")
    label_len = _core.cast(_core.convert_to_tensor(label_length), _core.DType.int32)
    frame_len = _core.cast(_core.convert_to_tensor(logit_length), _core.DType.int32)
    width = y._shape_tuple[1]
    _check_labels(y, label_len, classes, blank)

    lp = _core.log_softmax(x, -1)
    # The extended label: blank, l1, blank, l2, ..., blank (2 * width + 1 states).
    # Built from the inputs' shapes (zeros_like), so a batch left dynamic by a trace works too.
    ext = _core.expand_dims(_core.zeros_like(label_len), -1) + blank
    if width:
        pairs = _core.reshape(_core.stack([_core.zeros_like(y) + blank, y], -1), [-1, 2 * width])
        ext = _core.concat([pairs, ext], -1)
    states = 2 * width + 1
    emit = _core.matmul(lp, _core.one_hot(ext, classes, lp.dtype), transpose_b=True)  # [batch, frames, states]
    before2 = _core.concat([_core.zeros_like(ext[:, :2]) - 1, ext[:, :-2]], -1)
    skip = _core.logical_and(_core.not_equal(ext, blank), _core.not_equal(ext, before2))

    impossible = _core.constant(_IMPOSSIBLE, dtype=lp.dtype)
    s = _np.arange(states)
    alpha = _core.where(_core.constant(s < 2), emit[:, 0], impossible)
    lead1 = _core.zeros_like(emit[:, 0, :1]) + impossible
    lead2 = _core.zeros_like(emit[:, 0, :2]) + impossible

    def step(alpha, frame):
        emit_t, live = frame
        a1 = _core.concat([lead1, alpha[:, :-1]], -1)
        a2 = _core.where(skip, _core.concat([lead2, alpha[:, :-2]], -1), impossible)
        top = _core.stop_gradient(_core.maximum(alpha, _core.maximum(a1, a2)))
        nxt = top + _core.log(_core.exp(alpha - top) + _core.exp(a1 - top) + _core.exp(a2 - top)) + emit_t
        nxt = _core.where(live, nxt, alpha)  # frames past an example's length keep its alpha
        return nxt, None

    if frames > 1:
        live = _core.expand_dims(_core.less(_core.constant(_np.arange(1, frames, dtype=_np.int32))[:, None],
                                            _core.expand_dims(frame_len, 0)), -1)
        alpha, _ = _scan.scan(step, alpha, (_core.transpose(emit[:, 1:], [1, 0, 2]), live))
    # The path ends in the last label or the blank after it.
    last = _core.expand_dims(2 * label_len, -1)
    state = _core.constant(s.astype(_np.int32))
    end = _core.logical_or(_core.equal(state, last), _core.equal(state, last - 1))
    final = _core.where(end, alpha, impossible)
    top = _core.stop_gradient(_core.reduce_max(final, axis=-1, keepdims=True))
    return _core.neg(_core.squeeze(top, [1]) + _core.log(_core.reduce_sum(_core.exp(final - top), axis=-1)))


def _check_labels(y, label_len, classes, blank):
    """Labels inside their length must be classes other than the blank (checked when known)."""
    try:
        labels, lengths = y.numpy(), label_len.numpy()
    except Exception:  # symbolic: the values are not known while tracing
        return
    if lengths.shape != (labels.shape[0],):
        raise ValueError(f"ctc_loss: label_length must be [batch] = [{labels.shape[0]}], got shape {lengths.shape}")
    if (lengths < 0).any() or (lengths > labels.shape[1]).any():
        raise _errors.InvalidArgumentError(f"ctc_loss: label_length {lengths.tolist()} must be in [0, {labels.shape[1]}]")
    used = _np.arange(labels.shape[1])[None, :] < lengths[:, None]
    bad = used & ((labels < 0) | (labels >= classes) | (labels == blank))
    if bad.any():
        raise _errors.InvalidArgumentError(f"ctc_loss: labels must be classes in [0, {classes}) other than the blank "
                                           f"{blank}, got {labels[bad].tolist()}")


def _sparse_result(seqs, batch):
    indices = [[b, i] for b, seq in enumerate(seqs) for i in range(len(seq))]
    values = [v for seq in seqs for v in seq]
    width = max((len(seq) for seq in seqs), default=0)
    return _sparse.SparseTensor(_np.asarray(indices, _np.int64).reshape(-1, 2), _np.asarray(values, _np.int64),
                                _np.asarray([batch, width], _np.int64))


def _decoder_inputs(inputs, sequence_length, what):
    x = _host(inputs, what)
    if x.ndim != 3:
        raise ValueError(f"{what}: inputs must be [max_time, batch_size, num_classes], got shape {x.shape}")
    lengths = _host(sequence_length, what).astype(_np.int64).ravel()
    if lengths.shape != (x.shape[1],):
        raise ValueError(f"{what}: sequence_length must be [batch_size] = [{x.shape[1]}], got shape {lengths.shape}")
    if (lengths < 0).any() or (lengths > x.shape[0]).any():
        raise _errors.InvalidArgumentError(f"{what}: sequence_length {lengths.tolist()} must be in [0, {x.shape[0]}]")
    return x, lengths


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """([SparseTensor of the best class per frame, repeats merged, blanks removed],
    [batch, 1] the negated sum of each frame's largest logit); blank_index None is the last class."""
    x, lengths = _decoder_inputs(inputs, sequence_length, "ctc_greedy_decoder")
    classes = x.shape[2]
    blank = classes - 1 if blank_index is None else int(blank_index)
    if blank < 0:
        blank += classes
    seqs, scores = [], []
    for b in range(x.shape[1]):
        frames = x[:lengths[b], b]
        best = frames.argmax(-1) if len(frames) else _np.zeros(0, _np.int64)
        scores.append(-frames.max(-1).sum() if len(frames) else 0.0)
        seq, prev = [], None
        for c in best.tolist():
            if c != blank and not (merge_repeated and c == prev):
                seq.append(c)
            prev = c
        seqs.append(seq)
    neg_sum = _core.constant(_np.asarray(scores, x.dtype).reshape(-1, 1))
    return [_sparse_result(seqs, x.shape[1])], neg_sum


def _log_add(a, b):
    if a == -_np.inf:
        return b
    if b == -_np.inf:
        return a
    top = max(a, b)
    return top + _pymath.log1p(_pymath.exp(-abs(a - b)))


def _beam_search(logp, blank, beam_width):
    """Prefix beam search over log probabilities [frames, classes]; the beams a step keeps are the
    beam_width most probable prefixes. Returns {prefix: (p_blank, p_label)} of the last step."""
    neg = -_np.inf
    beams = {(): (0.0, neg)}
    for row in logp:
        nxt = {}

        def add(prefix, pb, pl):
            ob, ol = nxt.get(prefix, (neg, neg))
            nxt[prefix] = (_log_add(ob, pb), _log_add(ol, pl))

        for prefix, (pb, pl) in beams.items():
            total = _log_add(pb, pl)
            add(prefix, total + row[blank], neg)
            if prefix:
                add(prefix, neg, pl + row[prefix[-1]])
            for c in range(len(row)):
                if c == blank:
                    continue
                # A repeated label needs a blank between: only the blank-ending paths extend it.
                base = pb if prefix and prefix[-1] == c else total
                add(prefix + (c,), neg, base + row[c])
        ranked = sorted(nxt.items(), key=lambda kv: -_log_add(*kv[1]))
        beams = dict(ranked[:beam_width])
    return beams


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1):
    """([top_paths SparseTensors: the most probable label sequences, best first],
    [batch, top_paths] their log probabilities); the blank is the last class."""
    x, lengths = _decoder_inputs(inputs, sequence_length, "ctc_beam_search_decoder")
    beam_width, top_paths = int(beam_width), int(top_paths)
    if beam_width < 1 or not 1 <= top_paths <= beam_width:
        raise ValueError(f"ctc_beam_search_decoder: need beam_width >= 1 and 1 <= top_paths <= beam_width, got "
                         f"{beam_width} and {top_paths}")
    classes = x.shape[2]
    shifted = x.astype(_np.float64) - x.max(-1, keepdims=True)
    logp = shifted - _np.log(_np.exp(shifted).sum(-1, keepdims=True))
    paths = [[] for _ in range(top_paths)]
    scores = _np.full((x.shape[1], top_paths), -_np.inf)
    for b in range(x.shape[1]):
        beams = _beam_search(logp[:lengths[b], b], classes - 1, beam_width)
        ranked = sorted(((_log_add(*p), prefix) for prefix, p in beams.items()), key=lambda v: -v[0])
        for i in range(top_paths):
            if i < len(ranked):
                scores[b, i] = ranked[i][0]
                paths[i].append(list(ranked[i][1]))
            else:
                paths[i].append([])
    return [_sparse_result(p, x.shape[1]) for p in paths], _core.constant(scores.astype(x.dtype))


def collapse_repeated(labels, seq_length, name=None):
    """(labels with runs of a repeated label merged into one, padded with 0 to the longest result,
    the new lengths as int32)."""
    y = _host(labels, "collapse_repeated")
    lengths = _host(seq_length, "collapse_repeated").astype(_np.int64).ravel()
    if y.ndim != 2 or lengths.shape != (y.shape[0],):
        raise ValueError(f"collapse_repeated: labels must be [batch, max_length] and seq_length [batch], got shapes "
                         f"{y.shape} and {lengths.shape}")
    rows = []
    for row, n in zip(y, lengths):
        row = row[:n]
        keep = _np.ones(len(row), bool)
        keep[1:] = row[1:] != row[:-1]
        rows.append(row[keep])
    width = max((len(r) for r in rows), default=0)
    out = _np.zeros((y.shape[0], width), y.dtype)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return _core.constant(out), _core.constant(_np.asarray([len(r) for r in rows], _np.int32))


def ctc_unique_labels(labels, name=None):
    """(each row's distinct labels in order of first appearance, padded with 0, and for every
    position the index of its label among them, int32)."""
    y = _host(labels, "ctc_unique_labels")
    if y.ndim != 2:
        raise ValueError(f"ctc_unique_labels: labels must be [batch, max_label_length], got shape {y.shape}")
    out = _np.zeros_like(y)
    idx = _np.zeros(y.shape, _np.int32)
    for i, row in enumerate(y):
        seen = {}
        for j, v in enumerate(row.tolist()):
            idx[i, j] = seen.setdefault(v, len(seen))
        out[i, :len(seen)] = list(seen)
    return [_core.constant(out), _core.constant(idx)]
