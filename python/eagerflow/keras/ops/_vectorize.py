"""keras.ops.vectorize (NumPy's vectorize with gufunc signatures) and keras.ops.stft on eagerflow's ops."""
import functools as _functools
import re as _re

import numpy as _np

import eagerflow as _ef
from ._dtypes import dtype_of, tensor

_DIMS = r"\w+"
_CORE = rf"\((?:{_DIMS}(?:,{_DIMS})*)?\)"
_ARGS = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse(signature):
    sig = signature.replace(" ", "")
    if not _re.match(_SIGNATURE, sig):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = sig.split("->")
    parse = lambda part: [tuple(_re.findall(_DIMS, arg)) for arg in _re.findall(_CORE, part)]  # noqa: E731
    return parse(ins), parse(outs)


def vectorize(pyfunc, *, excluded=None, signature=None):
    """pyfunc applied over the broadcast leading (loop) dimensions of its arguments; with a signature
    like "(n),(n)->()" the named trailing (core) dimensions go to pyfunc whole."""
    excluded = set(excluded or ())

    @_functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        fixed = {i: a for i, a in enumerate(args) if i in excluded or a is None}
        fixed_kw = {k: v for k, v in kwargs.items() if k in excluded}
        live_kw = {k: v for k, v in kwargs.items() if k not in excluded}
        if live_kw:
            raise ValueError("vectorize: pass the vectorized arguments by position (or list their names in excluded)")
        live = [tensor(a) for i, a in enumerate(args) if i not in fixed]
        in_core = _parse(signature)[0] if signature else [()] * len(live)
        if len(in_core) != len(live):
            raise TypeError(f"wrong number of positional arguments: expected {len(in_core)}, got {len(live)}")
        loop_shapes = [tuple(a.shape[:a.shape.rank - len(c)]) for a, c in zip(live, in_core)]
        loop = tuple(_np.broadcast_shapes(*loop_shapes)) if loop_shapes else ()
        n = int(_np.prod(loop)) if loop else 1
        flat = [_ef.reshape(_ef.broadcast_to(a, list(loop) + list(a.shape[a.shape.rank - len(c):])),
                            [n] + list(a.shape[a.shape.rank - len(c):])) for a, c in zip(live, in_core)]

        def call(live_args):
            it = iter(live_args)
            full = [fixed[i] if i in fixed else next(it) for i in range(len(args))]
            return pyfunc(*full, **fixed_kw)
        if not loop:
            return call([_ef.reshape(f, f.shape[1:]) for f in flat])
        out = _ef.vectorized_map(lambda elems: call(list(elems)), tuple(flat))
        if isinstance(out, (tuple, list)):
            return tuple(_ef.reshape(o, list(loop) + list(o.shape[1:])) for o in out)
        return _ef.reshape(out, list(loop) + list(out.shape[1:]))
    return wrapped


def _window(kind, n, dtype):
    k = _np.arange(n)
    w = 0.5 - 0.5 * _np.cos(2 * _np.pi * k / n) if kind == "hann" else 0.54 - 0.46 * _np.cos(2 * _np.pi * k / n)
    return w.astype(dtype)  # periodic windows, as tf.signal's hann_window / hamming_window


def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """Short-time Fourier transform along the last axis: (real, imag), each (..., frames, fft_length // 2 + 1)."""
    from .core import extract_sequences, rfft
    t = tensor(x)
    if dtype_of(t) not in ("float32", "float64"):
        raise TypeError(f"Invalid input type. Expected `float32` or `float64`. Received: input type={dtype_of(t)}")
    if fft_length < sequence_length:
        raise ValueError(f"`fft_length` must equal or larger than `sequence_length`. Received: "
                         f"sequence_length={sequence_length}, fft_length={fft_length}")
    if isinstance(window, str) and window not in ("hann", "hamming"):
        raise ValueError(f"If a string is passed to `window`, it must be one of \"hann\", \"hamming\". Received: "
                         f"window={window}")
    if center:
        pads = [[0, 0]] * (t.shape.rank - 1) + [[fft_length // 2, fft_length // 2]]
        t = _ef.pad(t, pads, mode="REFLECT")
    l_pad = (fft_length - sequence_length) // 2
    r_pad = fft_length - sequence_length - l_pad
    frames = extract_sequences(t, fft_length, sequence_stride)
    if window is not None:
        npdt = t.dtype.as_numpy_dtype
        w = _window(window, sequence_length, npdt) if isinstance(window, str) else _np.asarray(
            tensor(window).numpy(), npdt)
        if w.ndim != 1 or w.shape[-1] != sequence_length:
            raise ValueError(f"The shape of `window` must be equal to [sequence_length]. Received: window shape={w.shape}")
        frames = frames * _ef.constant(_np.pad(w, [l_pad, r_pad]))
    return rfft(frames, fft_length)



def _inverse_window(win, step):
    """tf.signal.inverse_stft_window_fn: the forward window over the sum of its overlapping squares."""
    n = win.shape[0]
    overlaps = -(-n // step)
    denom = _np.pad(win * win, [0, overlaps * step - n]).reshape(overlaps, step).sum(0)
    return win / _np.tile(denom, overlaps)[:n]


def istft(x, sequence_length, sequence_stride, fft_length, length=None, window="hann", center=True):
    """The inverse of stft: irfft of each frame, the inverse-STFT window, overlap-add, and the
    centering pad cut off again (tf.signal.inverse_stft, as Keras' TensorFlow backend)."""
    from .core import _complex_pair
    c, fdt = _complex_pair(x)
    frames = _ef.signal.irfft(c, [fft_length])[..., :fft_length]
    npdt = fdt.as_numpy_dtype
    l_pad = (fft_length - sequence_length) // 2
    r_pad = fft_length - sequence_length - l_pad
    if window is not None:
        w = _window(window, sequence_length, "float64") if isinstance(window, str) else _np.asarray(
            tensor(window).numpy(), "float64")
        if w.ndim != 1 or w.shape[-1] != sequence_length:
            raise ValueError(f"The shape of `window` must be equal to [sequence_length]. Received: window shape={w.shape}")
        w = _inverse_window(_np.pad(w, [l_pad, r_pad]), sequence_stride)
        frames = frames * _ef.constant(w.astype(npdt))
    frames = _ef.cast(frames, fdt)
    n_frames = frames.shape[-2]
    out_len = fft_length + sequence_stride * (n_frames - 1)
    # overlap-add: every sample of frame i lands at i * stride + j, summed
    rank = frames.shape.rank
    moved = _ef.transpose(frames, [rank - 2, rank - 1] + list(range(rank - 2)))
    flat = _ef.reshape(moved, [n_frames * fft_length] + list(moved.shape[2:]))
    ids = (_np.arange(n_frames)[:, None] * sequence_stride + _np.arange(fft_length)[None, :]).reshape(-1)
    summed = _ef.math.unsorted_segment_sum(flat, _ef.constant(ids.astype(_np.int32)), out_len)
    y = _ef.transpose(summed, list(range(1, rank - 1)) + [0])
    start = fft_length // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = out_len - fft_length // 2
    else:
        end = out_len
    return y[..., start:end]
