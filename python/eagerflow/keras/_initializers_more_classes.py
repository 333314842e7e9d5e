"""Keras 3's Orthogonal and STFT initializer classes (their math: _initializers_more.py)."""
from . import _initializers_more as _m
from .initializers import Initializer, _core, _dtype


def _dt(dtype):
    return _core.DType.float32 if dtype is None else _dtype(dtype)


class Orthogonal(Initializer):
    """Keras' Orthogonal(gain=1.0, seed=None): an orthogonal matrix (rows or columns, whichever are
    fewer, orthonormal) for the shape flattened to [prod(shape[:-1]), shape[-1]], times gain."""

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None):
        return _m.orthogonal(list(shape), float(self.gain), self.seed, _dt(dtype))

    def get_config(self):
        return {"seed": self.seed, "gain": self.gain}


class STFT(Initializer):
    """Keras' STFT(side, window, scaling, periodic): the (frame_length, 1, fft_bins) Conv1D kernel
    whose output is the real ("real") or imaginary ("imag") part of a windowed DFT."""

    def __init__(self, side="real", window="hann", scaling="density", periodic=False):
        if side not in ("real", "imag"):
            raise ValueError(f"side should be 'real' or 'imag', not {side}")
        _m.check_window(window)
        if scaling is not None and scaling not in ("density", "spectrum"):
            raise ValueError(f"Scaling is invalid, it must be `None`, 'density' or 'spectrum'. "
                             f"Received scaling={scaling}")
        self.side, self.window, self.scaling, self.periodic = side, window, scaling, periodic

    def __call__(self, shape, dtype=None):
        return _m.stft_kernel(shape, self.side, self.window, self.scaling, self.periodic, _dt(dtype))

    def get_config(self):
        return {"side": self.side, "window": self.window, "periodic": self.periodic, "scaling": self.scaling}
