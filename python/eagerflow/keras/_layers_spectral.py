"""Keras 3's SpectralNormalization written from ef ops: in training, the wrapped layer's kernel is
divided by its largest singular value (estimated by power iteration on a kept vector u) before
the layer runs, as Keras does (the kernel variable itself is rescaled)."""
import eagerflow as _ef

from . import initializers as _initializers
from ._catalogue_base import register
from ._layers_wrappers import Wrapper


class SpectralNormalization(Wrapper):
    """SpectralNormalization(layer, power_iterations=1) for a layer with `kernel` or `embeddings`."""

    def __init__(self, layer, power_iterations=1, **kwargs):
        super().__init__(layer, **kwargs)
        if power_iterations <= 0:
            raise ValueError("`power_iterations` should be greater than zero. Received: "
                             f"`power_iterations={power_iterations}`")
        self.power_iterations = power_iterations

    def get_config(self):
        config = super().get_config()
        config["power_iterations"] = self.power_iterations
        return config

    def build(self, input_shape):
        self._track(self.layer)
        if not self.layer.built:  # the C++ layers build on their first call
            self.layer(_ef.zeros([1] + [1 if d is None else int(d) for d in input_shape[1:]]))
        kernel = getattr(self.layer, "kernel", None)
        if kernel is None:
            kernel = getattr(self.layer, "embeddings", None)
        if kernel is None:
            raise ValueError(f"{type(self.layer).__name__} object has no attribute 'kernel' nor 'embeddings'")
        self._ef_kernel = kernel
        self.kernel_shape = tuple(kernel.shape)
        self.vector_u = self.add_weight("vector_u", shape=(1, self.kernel_shape[-1]),
                                        initializer=_initializers.TruncatedNormal(stddev=0.02), trainable=False)

    def normalized_weights(self):
        """(u, kernel / sigma) from power_iterations steps of the power method."""
        weights = _ef.reshape(self._ef_kernel, [-1, self.kernel_shape[-1]])
        u = _ef.convert_to_tensor(self.vector_u)
        for _ in range(self.power_iterations):
            v = _ef.math.l2_normalize(_ef.matmul(u, weights, transpose_b=True), axis=None)
            u = _ef.math.l2_normalize(_ef.matmul(v, weights), axis=None)
        u, v = _ef.stop_gradient(u), _ef.stop_gradient(v)
        sigma = _ef.matmul(_ef.matmul(v, weights), u, transpose_b=True)
        return u, _ef.reshape(self._ef_kernel / sigma, self.kernel_shape)

    def call(self, inputs, training=False):
        if training:
            u, kernel = self.normalized_weights()
            self.vector_u.assign(u)
            self._ef_kernel.assign(kernel)
        return _ef.cast(self.layer(inputs), inputs.dtype)


register(SpectralNormalization)
