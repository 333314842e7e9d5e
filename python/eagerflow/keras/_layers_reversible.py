"""Keras 3's ReversibleEmbedding written from ef ops: an Embedding whose reverse call maps hidden
states back to vocabulary logits (with the transposed embeddings, or its own reverse matrix)."""
import numpy as np

import eagerflow as _ef

from .. import _core
from . import initializers as _initializers
from ._catalogue_base import CatalogueLayer, initializer, register


class ReversibleEmbedding(CatalogueLayer):
    """layer(ids) -> embeddings; layer(hidden, reverse=True) -> logits. The C++ __call__ carries no
    flag, so the direction is the input's dtype (ids are integers, hidden states floats): one
    layer serves both ends of a functional model, as in Keras."""

    _config = ("input_dim", "output_dim", "embeddings_initializer", "embeddings_regularizer",
               "embeddings_constraint", "mask_zero", "tie_weights", "reverse_dtype", "logit_soft_cap")

    def __init__(self, input_dim, output_dim, tie_weights=True, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False, reverse_dtype=None,
                 logit_soft_cap=None, **kwargs):
        for key in ("quantization_config", "lora_rank", "lora_alpha"):
            if kwargs.pop(key, None) is not None:
                raise NotImplementedError(f"ReversibleEmbedding: {key} is not supported in eagerflow")
        if embeddings_regularizer is not None or embeddings_constraint is not None:
            raise NotImplementedError("ReversibleEmbedding: regularizers and constraints are not supported in eagerflow")
        super().__init__(**kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.tie_weights, self.mask_zero = bool(tie_weights), bool(mask_zero)
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = self.embeddings_constraint = None
        self.reverse_dtype, self.logit_soft_cap = reverse_dtype, logit_soft_cap

    def __call__(self, inputs, reverse=False, training=None):
        dtype = getattr(inputs, "dtype", None)
        if dtype is None:
            dtype = np.asarray(inputs).dtype
        integer = "int" in str(getattr(dtype, "name", dtype))  # ef, NumPy and Keras-tensor dtypes alike
        if reverse and integer:
            raise ValueError("ReversibleEmbedding(reverse=True) takes hidden states (floats), got integer inputs")
        if not reverse and not integer:
            inputs = _ef.cast(inputs, _ef.int32)  # ids given as floats, as Keras' Embedding takes them
        return super().__call__(inputs, training=training)

    def build(self, input_shape):
        init = self.embeddings_initializer
        if isinstance(init, str) and init == "uniform":  # Keras' name for RandomUniform(-0.05, 0.05)
            init = _initializers.RandomUniform(-0.05, 0.05)
        self.embeddings = self.add_weight("embeddings", shape=(self.input_dim, self.output_dim),
                                          initializer=initializer(init))
        if not self.tie_weights:
            self.reverse_embeddings = self.add_weight("reverse_embeddings", shape=(self.output_dim, self.input_dim),
                                                      initializer=initializer(init))

    def call(self, inputs):
        if inputs.dtype in (_ef.int32, _ef.int64):
            out = _ef.gather(self.embeddings, inputs)
            if self.mask_zero:
                _core._set_mask(out, _ef.not_equal(inputs, 0))
            return out
        kernel = _ef.transpose(self.embeddings) if self.tie_weights else self.reverse_embeddings
        if self.reverse_dtype is not None:
            inputs, kernel = _ef.cast(inputs, self.reverse_dtype), _ef.cast(kernel, self.reverse_dtype)
        logits = _ef.matmul(inputs, kernel)
        if self.logit_soft_cap is not None:
            logits = _ef.tanh(logits / self.logit_soft_cap) * self.logit_soft_cap
        return logits


register(ReversibleEmbedding)
