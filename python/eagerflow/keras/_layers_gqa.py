"""Keras 3's GroupQueryAttention written from ef ops and EinsumDense: num_key_value_heads key/value
heads, each shared by num_query_heads / num_key_value_heads query heads."""
import math

import eagerflow as _ef

from ._catalogue_base import CatalogueLayer, register
from ._layers_activation import Softmax
from ._layers_einsum import EinsumDense


class GroupQueryAttention(CatalogueLayer):
    """layer(query, value, key=None, query_mask=, value_mask=, key_mask=, attention_mask=,
    return_attention_scores=, use_causal_mask=). As with Attention, the C++ __call__ carries one
    input: the masks are merged into one (batch, T, S) mask that travels with the tensors, and the
    two flags are fixed at the first call (kept in the config when set)."""

    _ef_default_name = "grouped_query_attention"  # Keras' class is GroupedQueryAttention
    _config = ("head_dim", "num_query_heads", "num_key_value_heads", "use_bias", "use_gate", "sliding_window",
               "dropout", "kernel_initializer", "bias_initializer", "kernel_regularizer", "bias_regularizer",
               "kernel_constraint", "bias_constraint", "seed")

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0, use_bias=True, sliding_window=None,
                 flash_attention=None, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, use_gate=False, seed=None, ef_call_flags=None, **kwargs):
        if any(v is not None for v in (kernel_regularizer, bias_regularizer, kernel_constraint, bias_constraint,
                                       sliding_window)):
            raise NotImplementedError("GroupQueryAttention: regularizers, constraints and sliding_window are not "
                                      "supported in eagerflow")
        super().__init__(**kwargs)
        if activity_regularizer is not None:
            self.activity_regularizer = activity_regularizer
        if num_query_heads % num_key_value_heads != 0:
            raise ValueError("`num_query_heads` must be divisible by `num_key_value_heads`.")
        self.head_dim, self.num_query_heads, self.num_key_value_heads = head_dim, num_query_heads, num_key_value_heads
        self.num_repeats = num_query_heads // num_key_value_heads
        self.dropout, self.use_bias, self.use_gate, self.seed = dropout, bool(use_bias), bool(use_gate), seed
        self.sliding_window = None
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer = self.bias_regularizer = self.kernel_constraint = self.bias_constraint = None
        self._ef_flags = None if ef_call_flags is None else tuple(bool(f) for f in ef_call_flags)

    def get_config(self):
        config = super().get_config()
        if self._ef_flags is not None and any(self._ef_flags):
            config["ef_call_flags"] = list(self._ef_flags)
        return config

    def __call__(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
                 return_attention_scores=False, training=None, use_causal_mask=False):
        flags = (bool(return_attention_scores), bool(use_causal_mask))
        if self._ef_flags is not None and self._ef_flags != flags:
            raise NotImplementedError("GroupQueryAttention: eagerflow fixes return_attention_scores and "
                                      "use_causal_mask at the first call; use another layer for other values")
        self._ef_flags = flags
        mask = None
        for m, axis in ((query_mask, -1), (value_mask, -2), (key_mask if key is not None else None, -2)):
            if m is not None:
                m = _ef.expand_dims(_ef.cast(m, _ef.bool), axis)
                mask = m if mask is None else _ef.logical_and(mask, m)
        if attention_mask is not None:
            a = _ef.cast(attention_mask, _ef.bool)
            mask = a if mask is None else _ef.logical_and(a, mask)
        packed = [query, value, value if key is None else key]
        if mask is not None:
            packed.append(mask)
        return super().__call__(packed, training=training)

    def _dense(self, equation, output_shape, bias_axes, name, activation=None):
        return EinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes if self.use_bias else None,
                           activation=activation, kernel_initializer=self.kernel_initializer,
                           bias_initializer=self.bias_initializer, name=name)

    def build(self, input_shape):
        feature_dim = int(input_shape[0][-1])
        self._query_dense = self._dense("bqm,muh->bquh", (None, self.num_query_heads, self.head_dim), "uh", "query")
        self._key_dense = self._dense("bkm,mvh->bkvh", (None, self.num_key_value_heads, self.head_dim), "vh", "key")
        self._value_dense = self._dense("bkm,mvh->bkvh", (None, self.num_key_value_heads, self.head_dim), "vh",
                                        "value")
        if self.use_gate:
            self._gate_dense = self._dense("bqm,muh->bquh", (None, self.num_query_heads, self.head_dim), "uh", "gate",
                                           activation="sigmoid")
        self._output_dense = self._dense("bquh,uhm->bqm", (None, feature_dim), "m", "attention_output")

    def call(self, inputs, training=False):
        return_scores, causal = self._ef_flags or (False, False)
        query, value, key = inputs[0], inputs[1], inputs[2]
        mask = inputs[3] if len(inputs) > 3 else None
        if causal:
            t, s = query.shape[1], value.shape[1]
            if t is None or s is None:
                raise ValueError("GroupQueryAttention: use_causal_mask needs known sequence lengths in eagerflow")
            lower = _ef.constant([[j <= i for j in range(s)] for i in range(t)])
            causal_mask = _ef.expand_dims(lower, 0)
            mask = causal_mask if mask is None else _ef.logical_and(mask, causal_mask)
        # Called in Keras' build order, so the weights come in Keras' order (query, key, gate, value, output).
        q = self._query_dense(query)
        k = _ef.repeat(self._key_dense(key), self.num_repeats, axis=2)
        gate = self._gate_dense(query) if self.use_gate else None
        v = _ef.repeat(self._value_dense(value), self.num_repeats, axis=2)
        q = q * _ef.cast(1.0 / math.sqrt(float(self.head_dim)), q.dtype)
        scores = _ef.einsum("bquh,bkuh->buqk", q, k)
        if mask is not None:
            mask = _ef.expand_dims(mask, -3)  # one mask for every head
            scores = Softmax._masked(scores, mask)
        else:
            scores = _ef.nn.softmax(scores, axis=-1)
        dropped = _ef.nn.dropout(scores, self.dropout) if training and self.dropout > 0 else scores
        output = _ef.einsum("buqk,bkuh->bquh", dropped, v)
        if self.use_gate:
            output = output * gate
        output = self._output_dense(output)
        return [output, scores] if return_scores else output


register(GroupQueryAttention)
