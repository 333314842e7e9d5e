"""ef.signal, as tf.signal: the discrete Fourier transforms (the op of src/ops/fft_op.cpp: they
trace, differentiate and vmap), their shifts, and the window functions."""
import math as _pymath

from . import _core

_c = _core._complex


def fft(input, name=None):  # noqa: A002 - TF's argument names
    """The DFT over the innermost axis of a complex tensor (unnormalized)."""
    return _c.fft(input)


def ifft(input, name=None):  # noqa: A002
    """The inverse DFT over the innermost axis (divided by its length)."""
    return _c.ifft(input)


def fft2d(input, name=None):  # noqa: A002
    return _c.fft2d(input)


def ifft2d(input, name=None):  # noqa: A002
    return _c.ifft2d(input)


def fft3d(input, name=None):  # noqa: A002
    return _c.fft3d(input)


def ifft3d(input, name=None):  # noqa: A002
    return _c.ifft3d(input)


def _lengths(fft_length, rank, what):
    if fft_length is None:
        return None
    n = _core.convert_to_tensor(fft_length)
    if n.is_symbolic:
        raise TypeError(f"{what}: fft_length must be known when tracing (a Python list or a constant), got a symbolic tensor")
    values = [int(v) for v in n.numpy().reshape(-1)]
    if len(values) != rank:
        raise ValueError(f"{what}: fft_length must have {rank} entries, got {values}")
    return values


def rfft(input_tensor, fft_length=None, name=None):
    """The DFT of a real tensor's innermost axis (cropped or zero-padded to fft_length): its
    fft_length // 2 + 1 nonnegative frequencies, complex64 for float32 (complex128 for float64)."""
    return _c.rfft(input_tensor, _lengths(fft_length, 1, "rfft"), 1)


def irfft(input_tensor, fft_length=None, name=None):
    """The real signal of fft_length points (default 2 (n - 1)) whose rfft is the input."""
    return _c.irfft(input_tensor, _lengths(fft_length, 1, "irfft"), 1)


def rfft2d(input_tensor, fft_length=None, name=None):
    return _c.rfft(input_tensor, _lengths(fft_length, 2, "rfft2d"), 2)


def irfft2d(input_tensor, fft_length=None, name=None):
    return _c.irfft(input_tensor, _lengths(fft_length, 2, "irfft2d"), 2)


def rfft3d(input_tensor, fft_length=None, name=None):
    return _c.rfft(input_tensor, _lengths(fft_length, 3, "rfft3d"), 3)


def irfft3d(input_tensor, fft_length=None, name=None):
    return _c.irfft(input_tensor, _lengths(fft_length, 3, "irfft3d"), 3)


def _shift(x, axes, sign):
    x = _core.convert_to_tensor(x)
    if axes is None:
        axes = list(range(x.ndim))
    elif isinstance(axes, int):
        axes = [axes]
    axes = [int(a) for a in axes]
    from ._array_ops import roll
    shifts = []
    for a in axes:
        n = x._shape_tuple[a]
        if n is None:
            raise ValueError("fftshift: the shifted axes must have known sizes")
        shifts.append(n // 2 if sign > 0 else -(n // 2))
    return roll(x, shifts, axes)


def fftshift(x, axes=None, name=None):
    """Moves the zero frequency to the middle (NumPy's fftshift): a roll by n // 2."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None, name=None):
    """fftshift's inverse: a roll by -(n // 2)."""
    return _shift(x, axes, -1)


def _window(window_length, periodic, dtype, fn):
    n = int(window_length)
    if n < 0:
        raise ValueError(f"window_length must be >= 0, got {n}")
    if n == 1:
        return _core.ones([1], dtype=dtype)
    denominator = n if periodic else n - 1
    import numpy as np
    k = np.arange(n, dtype=np.float64)
    return _core.constant(fn(k, denominator).astype(np.float64)).astype(dtype)


def hann_window(window_length, periodic=True, dtype=_core.DType.float32, name=None):
    """0.5 - 0.5 cos(2 pi k / N), N = length (periodic) or length - 1."""
    import numpy as np
    return _window(window_length, periodic, dtype, lambda k, d: 0.5 - 0.5 * np.cos(2 * _pymath.pi * k / d))


def hamming_window(window_length, periodic=True, dtype=_core.DType.float32, name=None):
    """0.54 - 0.46 cos(2 pi k / N), N = length (periodic) or length - 1."""
    import numpy as np
    return _window(window_length, periodic, dtype, lambda k, d: 0.54 - 0.46 * np.cos(2 * _pymath.pi * k / d))
