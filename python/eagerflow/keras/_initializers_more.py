"""Keras 3's Orthogonal and STFT initializers, and the fan rule of VarianceScaling's
input_axes / output_axes (keras.src.initializers' compute_fans)."""
import math

import numpy as np

from .. import _core


def compute_fans(shape, input_axes=None, output_axes=None):
    shape = tuple(int(d) for d in shape)
    if input_axes is not None and output_axes is not None:
        return int(np.prod([shape[a] for a in input_axes])), int(np.prod([shape[a] for a in output_axes]))
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    field = int(np.prod(shape[:-2]))
    return shape[-2] * field, shape[-1] * field


def fan_scale(mode, shape, input_axes, output_axes):
    """The divisor Keras uses for `mode` (fan_in, fan_out or their mean), at least 1."""
    fan_in, fan_out = compute_fans(shape, input_axes, output_axes)
    return max(1.0, {"fan_in": fan_in, "fan_out": fan_out}.get(mode, (fan_in + fan_out) / 2.0))


def orthogonal(shape, gain, seed, dtype):
    """gain * Q of the QR of a standard normal matrix, Q's columns signed by diag(R) (Keras' rule)."""
    if len(shape) < 2:
        raise ValueError(f"The tensor to initialize must be at least two-dimensional. Received: shape={tuple(shape)} "
                         f"of rank {len(shape)}.")
    from .. import linalg
    rows = int(np.prod(shape[:-1]))
    cols = int(shape[-1])
    a = _core._initializers.random_normal(0.0, 1.0, seed)([max(rows, cols), min(rows, cols)], dtype)
    q, r = linalg.qr(a)
    from .. import sign
    q = q * sign(linalg.diag_part(r))
    if rows < cols:
        q = _core.transpose(q)
    return _core.reshape(q * gain, list(shape))


def _cosine_window(n, coefs, periodic):
    # scipy.signal's general cosine windows: symmetric over n points, or periodic (n + 1, last dropped)
    m = n + 1 if periodic else n
    if m == 1:
        return np.ones(1)
    k = np.arange(m) * 2.0 * math.pi / (m - 1)
    w = sum(((-1) ** i) * c * np.cos(i * k) for i, c in enumerate(coefs))
    return w[:n]


def _bartlett(n, periodic):
    m = n + 1 if periodic else n
    if m == 1:
        return np.ones(1)
    k = np.arange(m)
    return (1.0 - np.abs(2.0 * k / (m - 1) - 1.0))[:n]


WINDOWS = {
    "hann": lambda n, p: _cosine_window(n, (0.5, 0.5), p),
    "hamming": lambda n, p: _cosine_window(n, (0.54, 0.46), p),
    "blackman": lambda n, p: _cosine_window(n, (0.42, 0.50, 0.08), p),
    "bartlett": _bartlett,
    "boxcar": lambda n, p: np.ones(n),
}


def check_window(window):
    if isinstance(window, str) and window not in WINDOWS:
        # Keras asks scipy.signal.get_window; eagerflow has no SciPy and knows these windows by name
        raise ValueError(f"Unknown window type {window!r}: eagerflow's STFT knows {sorted(WINDOWS)} by name "
                         "(give any other window as an array)")


def stft_kernel(shape, side, window, scaling, periodic, dtype):
    frame_length, _, fft_bins = (int(d) for d in shape)
    kernel_len = (fft_bins - 1) * 2
    freq = np.arange(fft_bins, dtype=np.float64).reshape(1, 1, fft_bins) / kernel_len
    time = np.arange(frame_length, dtype=np.float64).reshape(frame_length, 1, 1)
    args = -2.0 * time * freq * math.pi
    kernel = np.cos(args) if side == "real" else np.sin(args)
    if window is not None:
        win = WINDOWS[window](frame_length, periodic) if isinstance(window, str) else np.asarray(window, np.float64)
        if win.ndim != 1 or win.shape[-1] != frame_length:
            raise ValueError(f"The shape of `window` must be equal to [frame_length].Received: window shape={win.shape}")
        win = win.reshape(frame_length, 1, 1)
        scale = 1.0
        if scaling == "density":
            scale = np.sqrt(np.sum(win ** 2))
        elif scaling == "spectrum":
            scale = np.sum(np.abs(win))
        kernel = kernel * win / scale
    return _core.convert_to_tensor(kernel.astype(dtype.name if hasattr(dtype, "name") else str(dtype)))
