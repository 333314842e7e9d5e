"""Keras 3's newer activations (celu, glu, the shrinks, sparsemax, ...): keras.activations' names
and arguments on keras.ops.nn's functions, so a layer's activation="celu" and ops.celu agree."""
from .ops import nn as _nn


def _fn(name, doc):
    impl = getattr(_nn, name)

    def fn(x, *args, **kwargs):
        return impl(x, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"keras.activations.{name}: {doc}"
    fn.__wrapped__ = impl  # inspect.signature shows Keras' arguments
    return fn


celu = _fn("celu", "max(x, 0) + alpha * expm1(min(x, 0) / alpha)")
glu = _fn("glu", "a * sigmoid(b), x split in halves a, b along axis")
hard_shrink = _fn("hard_shrink", "x where |x| > threshold, else 0")
hard_silu = _fn("hard_silu", "x * relu6(x + 3) / 6")
hard_tanh = _fn("hard_tanh", "x clipped to [-1, 1]")
log_sigmoid = _fn("log_sigmoid", "log(sigmoid(x)) = -softplus(-x)")
log_softmax = _fn("log_softmax", "x - logsumexp(x, axis)")
soft_shrink = _fn("soft_shrink", "x - threshold above threshold, x + threshold below -threshold, else 0")
sparse_plus = _fn("sparse_plus", "0 below -1, (x + 1)**2 / 4 in [-1, 1], x above 1")
sparse_sigmoid = _fn("sparse_sigmoid", "0 below -1, (x + 1) / 2 in [-1, 1], 1 above 1")
sparsemax = _fn("sparsemax", "the Euclidean projection of x onto the probability simplex along axis")
squareplus = _fn("squareplus", "(x + sqrt(x**2 + b)) / 2")
tanh_shrink = _fn("tanh_shrink", "x - tanh(x)")
threshold = _fn("threshold", "x where x > threshold, else default_value")
