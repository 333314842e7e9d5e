"""`%` and `//` on tensors (TF's Tensor.__mod__/__floordiv__: tf.math.floormod/floordiv, the
result's sign follows the divisor, as Python's). The guides' loops test `i % 2 == 0`."""
from . import _core, math as _math


def _install():
    def mod(a, b):
        return _math.floormod(a, b)

    def rmod(a, b):
        return _math.floormod(b, a)

    def floordiv(a, b):
        return _math.floordiv(a, b)

    def rfloordiv(a, b):
        return _math.floordiv(b, a)

    for cls in (_core.Tensor,):
        for name, fn in (("__mod__", mod), ("__rmod__", rmod), ("__floordiv__", floordiv), ("__rfloordiv__", rfloordiv)):
            if not hasattr(cls, name):
                setattr(cls, name, fn)
    for name in ("__mod__", "__rmod__", "__floordiv__", "__rfloordiv__"):
        if not hasattr(_core.Variable, name):
            setattr(_core.Variable, name, lambda self, other, _n=name: getattr(self.value(), _n)(other))


_install()
