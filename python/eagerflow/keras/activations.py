"""ef.keras.activations: Keras' activation functions on tensors (ef ops: they trace and differentiate).
Each name is also accepted wherever a layer takes `activation="..."`."""
from .. import _core

__all__ = ["relu", "sigmoid", "tanh", "softmax", "linear", "leaky_relu", "elu", "selu", "softplus", "softsign",
           "swish", "silu", "mish", "gelu", "relu6", "hard_sigmoid", "exponential", "get", "serialize",
           "deserialize", "celu", "glu", "hard_shrink", "hard_silu", "hard_swish", "hard_tanh", "log_sigmoid", "log_softmax",
           "soft_shrink", "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink", "threshold"]


def _named(name):
    def fn(x):
        return _core._activation(name, x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.activations.{name}"
    return fn


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """Keras' relu: x above threshold, negative_slope * (x - threshold) below, capped at max_value."""
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return _core._activation("relu", x)
    x = _core.convert_to_tensor(x)
    out = _core.where(x > _core.full_like(x, threshold), x, (x - threshold) * negative_slope)
    if max_value is not None:
        out = _core.where(out > _core.full_like(out, max_value), _core.full_like(out, max_value), out)
    return out


def softmax(x, axis=-1):
    return _core.softmax(x, axis)


def leaky_relu(x, negative_slope=0.2):
    return _core._leaky_relu(x, negative_slope)


def elu(x, alpha=1.0):
    return _core._elu(x, alpha)


def gelu(x, approximate=False):
    if approximate:
        import math
        x = _core.convert_to_tensor(x)  # a NumPy input would otherwise come back as NumPy
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + _core.tanh(c * (x + 0.044715 * x * x * x)))
    return _core._activation("gelu", x)


def linear(x):
    return x


sigmoid = _named("sigmoid")
tanh = _named("tanh")
selu = _named("selu")
softplus = _named("softplus")
softsign = _named("softsign")
silu = _named("silu")
swish = silu
mish = _named("mish")
relu6 = _named("relu6")
hard_sigmoid = _named("hard_sigmoid")
exponential = _named("exponential")

from ._activations_more import (celu, glu, hard_shrink, hard_silu, hard_tanh, log_sigmoid, log_softmax,  # noqa: E402
                                soft_shrink, sparse_plus, sparse_sigmoid, sparsemax, squareplus, tanh_shrink,
                                threshold)
hard_swish = hard_silu

_ALL = {f.__name__: f for f in (relu, sigmoid, tanh, softmax, linear, leaky_relu, elu, selu, softplus, softsign,
                                silu, mish, gelu, relu6, hard_sigmoid, exponential, celu, glu, hard_shrink, hard_silu,
                                hard_tanh, log_sigmoid, log_softmax, soft_shrink, sparse_plus, sparse_sigmoid,
                                sparsemax, squareplus, tanh_shrink, threshold)}
_ALL["swish"] = silu
_ALL["hard_swish"] = hard_silu


def get(identifier):
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        if identifier not in _ALL:
            raise ValueError(f"Could not interpret activation function identifier: {identifier}")
        return _ALL[identifier]
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation function identifier: {identifier}")


def serialize(activation):
    return activation.__name__


def deserialize(name):
    return get(name)
