"""keras.ops' window functions (NumPy's bartlett, blackman, hamming, hanning, kaiser) in floatx."""
import numpy as _np

from ._dtypes import tensor, floatx


def _window(fn):
    def op(x, *args):
        return tensor(fn(int(x), *args).astype("float64"), floatx())
    op.__name__ = fn.__name__
    return op


bartlett = _window(_np.bartlett)
blackman = _window(_np.blackman)
hamming = _window(_np.hamming)
hanning = _window(_np.hanning)
kaiser = _window(_np.kaiser)
