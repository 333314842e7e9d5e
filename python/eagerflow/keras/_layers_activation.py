"""Keras 3's activation layers written from ef ops: ReLU, Softmax (with a mask), PReLU."""
from . import activations as _act
from ._catalogue_base import CatalogueLayer, initializer, register, regularizer

import eagerflow as _ef


class ReLU(CatalogueLayer):
    """Keras' ReLU: x for x >= threshold, negative_slope * (x - threshold) below, capped at max_value."""

    _config = ("max_value", "negative_slope", "threshold")

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError("max_value of a ReLU layer cannot be a negative value. Received: "
                             f"max_value={max_value}")
        if negative_slope is None or negative_slope < 0.0:
            raise ValueError("negative_slope of a ReLU layer cannot be a negative value. Received: "
                             f"negative_slope={negative_slope}")
        if threshold is None or threshold < 0.0:
            raise ValueError("threshold of a ReLU layer cannot be a negative value. Received: "
                             f"threshold={threshold}")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def call(self, inputs):
        return _act.relu(inputs, negative_slope=self.negative_slope, max_value=self.max_value,
                         threshold=self.threshold)


class Softmax(CatalogueLayer):
    """Keras' Softmax(axis): layer(x, mask=m) keeps the positions where m is True (or > 0.5); a
    fully masked row gives zeros, not a uniform distribution."""

    _config = ("axis",)

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def __call__(self, inputs, mask=None, training=None):
        # The C++ __call__ takes one input: a mask travels beside it, so functional models record it.
        if mask is None:
            return super().__call__(inputs, training=training)
        return super().__call__([inputs, mask], training=training)

    def call(self, inputs):
        mask = None
        if isinstance(inputs, (list, tuple)):
            inputs, mask = inputs
            if mask.dtype != _ef.bool:
                mask = _ef.math.greater(mask, _ef.cast(0.5, mask.dtype))
            if len(mask.shape) > len(inputs.shape):
                raise ValueError("The `mask` must be broadcastable to `inputs` and must not have more dimensions. "
                                 f"Received: inputs.shape={inputs.shape}, mask.shape={mask.shape}")
            mask = _ef.logical_and(mask, _ef.cast(_ef.ones_like(inputs), _ef.bool))  # broadcast, any batch
            inputs = _ef.where(mask, inputs, _ef.zeros_like(inputs) + _large_negative(inputs.dtype))
        axis = self.axis
        if isinstance(axis, (tuple, list)) and len(axis) > 1:
            outputs = _ef.exp(inputs - _ef.reduce_logsumexp(inputs, axis=list(axis), keepdims=True))
        else:
            if isinstance(axis, (tuple, list)):
                axis = axis[0]
            outputs = _ef.nn.softmax(inputs, axis=axis)
        if mask is not None:
            outputs = _ef.where(mask, outputs, _ef.zeros_like(outputs))
        return outputs


def _masked_softmax(scores, mask):
    """Softmax over the last axis of scores where mask (bool, broadcastable) holds; rows with no
    position kept are zeros, as Keras' Softmax(mask=...)."""
    mask = _ef.logical_and(mask, _ef.cast(_ef.ones_like(scores), _ef.bool))
    scores = _ef.where(mask, scores, _ef.zeros_like(scores) + _large_negative(scores.dtype))
    return _ef.where(mask, _ef.nn.softmax(scores, axis=-1), _ef.zeros_like(scores))


Softmax._masked = staticmethod(_masked_softmax)


def _large_negative(dtype):
    # Keras' choice: the most negative value stays finite in half precision.
    return -3e4 if dtype in (_ef.float16, _ef.bfloat16) else -1e9


class PReLU(CatalogueLayer):
    """Keras' PReLU: max(x, 0) + alpha * min(x, 0), alpha learned per element (shared_axes share it)."""

    _config = ("alpha_initializer", "alpha_regularizer", "alpha_constraint", "shared_axes")

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None, shared_axes=None,
                 **kwargs):
        super().__init__(**kwargs)
        if alpha_constraint is not None:
            raise NotImplementedError("PReLU: alpha_constraint is not supported in eagerflow")
        self.alpha_initializer = alpha_initializer
        self.alpha_regularizer, self.alpha_constraint = regularizer(alpha_regularizer), None
        if shared_axes is not None and not isinstance(shared_axes, (list, tuple)):
            shared_axes = [shared_axes]
        self.shared_axes = None if shared_axes is None else list(shared_axes)

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            shape[axis - 1] = 1
        init = self.alpha_initializer
        init = "zeros" if isinstance(init, str) and init.lower() == "zeros" else initializer(init)
        self.alpha = self._regularize(self.alpha_regularizer, self.add_weight("alpha", shape=shape, initializer=init))

    def call(self, inputs):
        return _ef.nn.relu(inputs) - self.alpha * _ef.nn.relu(-inputs)


register(ReLU, Softmax, PReLU)
