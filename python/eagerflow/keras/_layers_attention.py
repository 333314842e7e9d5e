"""Keras 3's Attention (Luong) and AdditiveAttention (Bahdanau) written from ef ops."""
import eagerflow as _ef

from ._catalogue_base import CatalogueLayer, register


class _BaseDenseAttention(CatalogueLayer):
    """layer([query, value(, key)], mask=[query_mask, value_mask], return_attention_scores=...,
    use_causal_mask=...). The C++ __call__ carries one input, so the masks travel in it (as bool
    tensors, both when either is given, so call() tells them from the float inputs). The two flags
    are fixed per layer, since a functional model replays the call with the flags it was built with:
    a second call with other flags is refused rather than silently using the first, and a saved
    model keeps them in its config ("ef_call_flags", written only when set)."""

    def __init__(self, ef_call_flags=None, **kwargs):
        super().__init__(**kwargs)
        self._ef_flags = None if ef_call_flags is None else tuple(bool(f) for f in ef_call_flags)

    def get_config(self):
        config = super().get_config()
        if self._ef_flags is not None and any(self._ef_flags):
            config["ef_call_flags"] = list(self._ef_flags)
        return config

    def __call__(self, inputs, mask=None, training=None, return_attention_scores=False, use_causal_mask=False):
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError(f"{type(self).__name__} layer must be called on a list of inputs, namely "
                             f"[query, value] or [query, value, key]. Received: inputs={inputs}.")
        if mask is not None and (not isinstance(mask, (list, tuple)) or len(mask) not in (2, 3)):
            raise ValueError(f"{type(self).__name__} layer mask must be a list of length 2, namely "
                             f"[query_mask, value_mask]. Received: mask={mask}.")
        flags = (bool(return_attention_scores), bool(use_causal_mask))
        if self._ef_flags is not None and self._ef_flags != flags:
            raise NotImplementedError(f"{type(self).__name__}: eagerflow fixes return_attention_scores and "
                                      f"use_causal_mask at the first call; use another layer for other values")
        self._ef_flags = flags
        packed = list(inputs)
        if mask is not None and (mask[0] is not None or mask[1] is not None):
            for m, like in ((mask[0], inputs[0]), (mask[1], inputs[1])):
                packed.append(_ef.cast(_ef.ones_like(like[..., 0]) if m is None else m, _ef.bool))
        return super().__call__(packed, training=training)

    def call(self, inputs, training=False):
        return_scores, causal = self._ef_flags or (False, False)
        tensors = [t for t in inputs if t.dtype != _ef.bool]
        masks = [t for t in inputs if t.dtype == _ef.bool]
        q, v = tensors[0], tensors[1]
        k = tensors[2] if len(tensors) == 3 else v
        q_mask, v_mask = masks if masks else (None, None)
        scores = self._scores(q, k)
        score_mask = None
        if v_mask is not None:
            score_mask = _ef.expand_dims(v_mask, -2)
        if causal:
            tq, tv = scores.shape[-2], scores.shape[-1]
            if tq is None or tv is None:
                tq, tv = _ef.shape(scores)[-2], _ef.shape(scores)[-1]
            rows = _ef.expand_dims(_ef.range(tq), -1)
            cols = _ef.expand_dims(_ef.range(tv), 0)
            lower = _ef.expand_dims(rows >= cols, 0)
            score_mask = lower if score_mask is None else _ef.logical_and(score_mask, lower)
        if score_mask is not None:
            big = 65504.0 if scores.dtype == _ef.float16 else 1.0e9
            score_mask = _ef.logical_and(score_mask, _ef.cast(_ef.ones_like(scores), _ef.bool))
            scores = _ef.where(score_mask, scores, scores - big)
        weights = _ef.nn.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            weights = _ef.nn.dropout(weights, self.dropout)
        output = _ef.matmul(weights, v)
        if q_mask is not None:
            q_mask = _ef.logical_and(_ef.expand_dims(q_mask, -1), _ef.cast(_ef.ones_like(output), _ef.bool))
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
