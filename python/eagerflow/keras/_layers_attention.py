"""Keras 3's Attention (Luong) and AdditiveAttention (Bahdanau) written from ef ops."""
import eagerflow as _ef

from ._catalogue_base import CatalogueLayer, register


class _BaseDenseAttention(CatalogueLayer):
    """layer([query, value(, key)], mask=[query_mask, value_mask], return_attention_scores=...,
    use_causal_mask=...). The C++ __call__ carries one input, so the masks travel in it; the two
    flags are fixed per layer (a functional model replays the call with the flags it was built
    with), and a second call with other flags is refused rather than silently using the first."""

    def __call__(self, inputs, mask=None, training=None, return_attention_scores=False, use_causal_mask=False):
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError(f"{type(self).__name__} layer must be called on a list of inputs, namely "
                             f"[query, value] or [query, value, key]. Received: inputs={inputs}.")
        if mask is not None and (not isinstance(mask, (list, tuple)) or len(mask) not in (2, 3)):
            raise ValueError(f"{type(self).__name__} layer mask must be a list of length 2, namely "
                             f"[query_mask, value_mask]. Received: mask={mask}.")
        q_mask, v_mask = (mask[0], mask[1]) if mask is not None else (None, None)
        layout = (len(inputs), q_mask is not None, v_mask is not None, bool(return_attention_scores),
                  bool(use_causal_mask))
        previous = getattr(self, "_ef_layout", None)
        if previous is not None and previous != layout:
            raise NotImplementedError(f"{type(self).__name__}: eagerflow fixes the masks and the flags "
                                      f"(return_attention_scores, use_causal_mask) at the first call; use another "
                                      f"layer for another combination")
        self._ef_layout = layout
        packed = list(inputs) + [m for m in (q_mask, v_mask) if m is not None]
        return super().__call__(packed, training=training)

    def call(self, inputs, training=False):
        n, has_q, has_v, return_scores, causal = self._ef_layout
        q, v = inputs[0], inputs[1]
        k = inputs[2] if n == 3 else v
        rest = list(inputs[n:])
        q_mask = _ef.cast(rest.pop(0), _ef.bool) if has_q else None
        v_mask = _ef.cast(rest.pop(0), _ef.bool) if has_v else None
        scores = self._scores(q, k)
        score_mask = None
        if v_mask is not None:
            score_mask = _ef.expand_dims(v_mask, -2)
        if causal:
            tq, tv = _ef.shape(scores)[-2], _ef.shape(scores)[-1]
            rows = _ef.expand_dims(_ef.range(tq), -1)
            cols = _ef.expand_dims(_ef.range(tv), 0)
            lower = _ef.expand_dims(rows >= cols, 0)
            score_mask = lower if score_mask is None else _ef.logical_and(score_mask, lower)
        if score_mask is not None:
            big = 65504.0 if scores.dtype == _ef.float16 else 1.0e9
            score_mask = _ef.broadcast_to(score_mask, _ef.shape(scores))
            scores = _ef.where(score_mask, scores, scores - big)
        weights = _ef.nn.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            weights = _ef.nn.dropout(weights, self.dropout)
        output = _ef.matmul(weights, v)
        if q_mask is not None:
            q_mask = _ef.broadcast_to(_ef.expand_dims(q_mask, -1), _ef.shape(output))
            output = _ef.where(q_mask, output, _ef.zeros_like(output))
        return [output, weights] if return_scores else output


class Attention(_BaseDenseAttention):
    """Dot-product attention: softmax(q . k^T [* scale]) . v; score_mode="concat" scores
    sum(tanh(q + k)) [* scale] weighted by a learned scalar."""

    _config = ("use_scale", "score_mode", "dropout", "seed")

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Invalid value for argument score_mode. Expected one of {{'dot', 'concat'}}. "
                             f"Received: score_mode={score_mode}")
        self.use_scale, self.score_mode, self.dropout, self.seed = use_scale, score_mode, dropout, seed

    def build(self, input_shape):
        if self.use_scale:
            self.scale = self.add_weight("scale", shape=(), initializer="ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", shape=(), initializer="ones")

    def _scores(self, q, k):
        if self.score_mode == "dot":
            scores = _ef.matmul(q, k, transpose_b=True)
            return scores * self.scale if self.use_scale else scores
        s = _ef.expand_dims(q, -2) + _ef.expand_dims(k, -3)
        if self.use_scale:
            s = self.scale * s
        return self.concat_score_weight * _ef.reduce_sum(_ef.tanh(s), axis=-1)


class AdditiveAttention(_BaseDenseAttention):
    """Bahdanau attention: scores sum(scale * tanh(q + k)) with a learned per-feature scale."""

    _config = ("use_scale", "dropout", "seed")

    def __init__(self, use_scale=True, dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.use_scale, self.dropout, self.seed = use_scale, dropout, seed

    def build(self, input_shape):
        if self.use_scale:
            self.scale = self.add_weight("scale", shape=(input_shape[0][-1],), initializer="glorot_uniform")

    def _scores(self, q, k):
        s = _ef.tanh(_ef.expand_dims(q, -2) + _ef.expand_dims(k, -3))
        if self.use_scale:
            s = self.scale * s
        return _ef.reduce_sum(s, axis=-1)


register(Attention, AdditiveAttention)
