"""Keras 3's UnitNormalization and GroupNormalization written from ef ops."""
import eagerflow as _ef

from ._catalogue_base import CatalogueLayer, initializer, register, regularizer


class UnitNormalization(CatalogueLayer):
    """Scales each sample to unit L2 norm along axis (an int or a list)."""

    _config = ("axis",)

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            axis = list(axis)
        elif not isinstance(axis, int):
            raise TypeError(f"Invalid value for `axis` argument: expected an int or a list/tuple of ints. "
                            f"Received: axis={axis}")
        self.axis = axis

    def call(self, inputs):
        return _ef.nn.l2_normalize(inputs, axis=self.axis, epsilon=1e-12)


class GroupNormalization(CatalogueLayer):
    """Normalises each sample over groups of channels (mean and variance per group over the
    spatial axes and the group's channels), then a per-channel gamma and beta."""

    _config = ("groups", "axis", "epsilon", "center", "scale", "beta_initializer", "gamma_initializer",
               "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint")

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        if beta_constraint is not None or gamma_constraint is not None:
            raise NotImplementedError("GroupNormalization: constraints are not supported in eagerflow")
        super().__init__(**kwargs)
        self.groups, self.axis, self.epsilon = int(groups), int(axis), epsilon
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.beta_regularizer, self.gamma_regularizer = regularizer(beta_regularizer), regularizer(gamma_regularizer)
        self.beta_constraint = self.gamma_constraint = None

    def build(self, input_shape):
        channels = input_shape[self.axis]
        if channels is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined dimension but the layer "
                             f"received an input with shape {tuple(input_shape)}.")
        if self.groups == -1:
            self.groups = channels
        if channels < self.groups:
            raise ValueError(f"Number of groups ({self.groups}) cannot be more than the number of channels "
                             f"({channels}).")
        if channels % self.groups != 0:
            raise ValueError(f"Number of groups ({self.groups}) must be a multiple of the number of channels "
                             f"({channels}).")
        if self.scale:
            self.gamma = self._regularize(self.gamma_regularizer, self.add_weight(
                "gamma", shape=(channels,), initializer=initializer(self.gamma_initializer)))
        if self.center:
            self.beta = self._regularize(self.beta_regularizer, self.add_weight(
                "beta", shape=(channels,), initializer=initializer(self.beta_initializer)))

    def call(self, inputs):
        rank = len(inputs.shape)
        axis = self.axis % rank
        x = inputs if axis == rank - 1 else _ef.transpose(
            inputs, [i for i in range(rank) if i != axis] + [axis])
        shape = list(x.shape)
        channels = shape[-1]
        grouped = _ef.reshape(x, [-1] + [(-1 if d is None else d) for d in shape[1:-1]] +
                              [self.groups, channels // self.groups])
        compute = grouped if grouped.dtype not in (_ef.float16, _ef.bfloat16) else _ef.cast(grouped, _ef.float32)
        axes = [i for i in range(1, rank + 1) if i != rank - 1]  # all but the batch and the group axis
        mean, variance = _ef.nn.moments(compute, axes=axes, keepdims=True)
        y = (compute - mean) * _ef.math.rsqrt(variance + self.epsilon)
        y = _ef.reshape(_ef.cast(y, x.dtype), [-1] + shape[1:])
        if self.scale:
            y = y * _ef.cast(self.gamma, y.dtype)
        if self.center:
            y = y + _ef.cast(self.beta, y.dtype)
        if axis != rank - 1:
            perm = [i for i in range(rank) if i != axis] + [axis]
            y = _ef.transpose(y, [perm.index(i) for i in range(rank)])
        return y


register(UnitNormalization, GroupNormalization)


class RMSNormalization(CatalogueLayer):
    """x / sqrt(mean(x^2 over axis) + epsilon) * scale (computed in at least float32)."""

    _config = ("axis", "epsilon")

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis, self.epsilon = axis, epsilon

    def build(self, input_shape):
        axes = sorted(self.axis) if isinstance(self.axis, (list, tuple)) else [self.axis]
        self.scale = self.add_weight("scale", shape=tuple(input_shape[a] for a in axes), initializer="ones")
        # Keras stores the axes as a list once built (its get_config then reports that).
        self.axis = axes

    def call(self, inputs):
        x = inputs if inputs.dtype in (_ef.float32, _ef.float64) else _ef.cast(inputs, _ef.float32)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        y = x * _ef.math.rsqrt(_ef.reduce_mean(_ef.square(x), axis=axes, keepdims=True) + self.epsilon)
        scale = _ef.cast(self.scale, y.dtype)
        rank = len(x.shape)
        positive = [a % rank for a in axes]
        if positive != list(range(rank - len(axes), rank)):  # the scale's axes are not the trailing ones
            scale = _ef.reshape(scale, [x.shape[i] if i in positive else 1 for i in range(rank)])
        return _ef.cast(y * scale, inputs.dtype)


register(RMSNormalization)
