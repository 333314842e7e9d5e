"""Keras 3's MelSpectrogram: |STFT|^mag_exp of raw audio on the mel scale (HTK's), in decibels
unless power_to_db=False; frames along the last axis, as Keras'."""
import math

import numpy as np

import eagerflow as _ef

from ._catalogue_base import CatalogueLayer, register

_MEL_BREAK_FREQUENCY_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def _hertz_to_mel(f):
    return _MEL_HIGH_FREQUENCY_Q * np.log(1.0 + f / _MEL_BREAK_FREQUENCY_HERTZ)


def mel_weight_matrix(num_mel_bins, num_spectrogram_bins, sampling_rate, lower_edge_hertz, upper_edge_hertz):
    """[num_spectrogram_bins, num_mel_bins] triangles of peak 1 (Keras' linear_to_mel_weight_matrix,
    in float32 as Keras computes it; the DC bin gets no weight)."""
    f32 = np.float32
    linear = np.linspace(f32(0), f32(sampling_rate) / f32(2), num_spectrogram_bins, dtype=f32)[1:]
    bins_mel = _hertz_to_mel(linear).astype(f32)[:, None]
    edges = np.linspace(_hertz_to_mel(f32(lower_edge_hertz)), _hertz_to_mel(f32(upper_edge_hertz)), num_mel_bins + 2,
                        dtype=f32)
    lower, center, upper = edges[:-2][None], edges[1:-1][None], edges[2:][None]
    lower_slopes = (bins_mel - lower) / (center - lower)
    upper_slopes = (upper - bins_mel) / (upper - center)
    weights = np.maximum(f32(0), np.minimum(lower_slopes, upper_slopes))
    return np.pad(weights, [[1, 0], [0, 0]]).astype(f32)


class MelSpectrogram(CatalogueLayer):
    """Keras' MelSpectrogram(fft_length=2048, sequence_stride=512, ...): [batch, samples] or
    [samples] audio to [batch, num_mel_bins, frames] (centred frames, `window` "hann", "hamming"
    or None)."""

    _config = ("fft_length", "sequence_stride", "sequence_length", "window", "sampling_rate", "num_mel_bins",
               "min_freq", "max_freq", "power_to_db", "top_db", "mag_exp", "min_power", "ref_power")

    def __init__(self, fft_length=2048, sequence_stride=512, sequence_length=None, window="hann", sampling_rate=16000,
                 num_mel_bins=128, min_freq=20.0, max_freq=None, power_to_db=True, top_db=80.0, mag_exp=2.0,
                 min_power=1e-10, ref_power=1.0, **kwargs):
        self.fft_length = fft_length
        self.sequence_stride = sequence_stride
        self.sequence_length = sequence_length or fft_length
        if self.fft_length < self.sequence_length:
            raise ValueError(f"`fft_length` must be greater than or equal to   `sequence_length`. Received: "
                             f"`sequence_length`={self.sequence_length}, `fft_length`={self.fft_length}.")
        self.window, self.sampling_rate, self.num_mel_bins = window, sampling_rate, num_mel_bins
        self.min_freq = min_freq
        self.max_freq = max_freq or int(sampling_rate / 2)
        self.power_to_db, self.top_db, self.mag_exp = power_to_db, top_db, mag_exp
        self.min_power, self.ref_power = min_power, ref_power
        super().__init__(**kwargs)

    def call(self, inputs):
        from .ops import stft
        x = inputs if isinstance(inputs, _ef.Tensor) else _ef.convert_to_tensor(inputs)
        if x.dtype not in (_ef.float32, _ef.float64):
            x = _ef.cast(x, _ef.float32)
        real, imag = stft(x, self.sequence_length, self.sequence_stride, self.fft_length, window=self.window,
                          center=True)
        spec = _ef.pow(_ef.sqrt(real * real + imag * imag), _ef.cast(self.mag_exp, real.dtype))
        matrix = mel_weight_matrix(self.num_mel_bins, self.fft_length // 2 + 1, self.sampling_rate, self.min_freq,
                                   self.max_freq)
        # spec [..., frames, bins] @ matrix, flattened so an unknown batch traces
        frames = spec.shape[-2]
        out = _ef.matmul(_ef.reshape(spec, [-1, spec.shape[-1]]), _ef.constant(matrix.astype(spec.dtype.as_numpy_dtype)))
        out = _ef.reshape(out, ([-1] if len(spec.shape) == 3 else []) + [frames, self.num_mel_bins])
        if self.power_to_db:
            log_spec = 10.0 * _ef.math.log(_ef.maximum(out, self.min_power)) / math.log(10.0)
            log_spec = log_spec - 10.0 * math.log10(max(abs(self.ref_power), self.min_power))
            out = _ef.maximum(log_spec, _ef.reduce_max(log_spec) - self.top_db)
        rank = len(out.shape)
        out = _ef.transpose(out, list(range(rank - 2)) + [rank - 1, rank - 2])
        dt = str(getattr(self.compute_dtype, "name", self.compute_dtype))
        return out if out.dtype.name == dt else _ef.cast(out, dt)

    def compute_output_shape(self, input_shape):
        def frames(n):
            return (n + self.sequence_stride + 1) // self.sequence_stride if n is not None else None
        if len(input_shape) == 1:
            return [self.num_mel_bins, frames(input_shape[0])]
        return [input_shape[0], self.num_mel_bins, frames(input_shape[1])]


register(MelSpectrogram)


class STFTSpectrogram(CatalogueLayer):
    """Keras' STFTSpectrogram: [batch, time, channels] signals (channels_first: [batch, channels,
    time]) to spectrograms through Conv1D kernels that compute the windowed DFT (initializers.STFT;
    trainable, as Keras'). mode: "log" (default), "magnitude", "psd", "real", "imag", "angle" or
    "stft" (real then imaginary bins); expand_dims keeps channels on an axis of their own."""

    _config = ("mode", "frame_length", "frame_step", "fft_length", "window", "periodic", "scaling", "padding",
               "data_format", "expand_dims")

    def __init__(self, mode="log", frame_length=256, frame_step=None, fft_length=None, window="hann",
                 periodic=False, scaling="density", padding="valid", expand_dims=False, data_format=None, **kwargs):
        import warnings
        from ._initializers_more import check_window
        if frame_step is not None and (frame_step > frame_length or frame_step < 1):
            raise ValueError(f"`frame_step` should be a positive integer not greater than `frame_length`. "
                             f"Received frame_step={frame_step}, frame_length={frame_length}")
        if fft_length is not None and fft_length < frame_length:
            raise ValueError(f"`fft_length` should be not less than `frame_length`. Received fft_length={fft_length}, "
                             f"frame_length={frame_length}")
        if fft_length is not None and (fft_length & -fft_length) != fft_length:
            warnings.warn(f"`fft_length` is recommended to be a power of two. Received fft_length={fft_length}")
        modes = ["log", "magnitude", "psd", "real", "imag", "angle", "stft"]
        if mode not in modes:
            raise ValueError(f"Output mode is invalid, it must be one of {', '.join(modes)}. Received: mode={mode}")
        if scaling is not None and scaling not in ("density", "spectrum"):
            raise ValueError(f"Scaling is invalid, it must be `None`, 'density' or 'spectrum'. "
                             f"Received scaling={scaling}")
        if padding not in ("valid", "same"):
            raise ValueError(f"Padding is invalid, it should be 'valid', 'same'. Received: padding={padding}")
        check_window(window)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                             f"Received: data_format={data_format}")
        super().__init__(**kwargs)
        self.mode, self.frame_length, self.frame_step, self.fft_length = mode, frame_length, frame_step, fft_length
        self._frame_step = frame_step or frame_length // 2
        self._fft_length = fft_length or 2 ** int(math.ceil(math.log2(frame_length)))
        self.window, self.periodic, self.scaling, self.padding = window, periodic, scaling, padding
        self.expand_dims = expand_dims
        self.data_format = data_format or "channels_last"

    def build(self, input_shape):
        from .initializers import STFT
        if len(input_shape) != 3:
            raise ValueError(f"Input 0 of layer \"{self.name}\" is incompatible with the layer: expected ndim=3, "
                             f"found ndim={len(input_shape)}. Full shape received: {tuple(input_shape)}")
        shape = (self.frame_length, 1, self._fft_length // 2 + 1)
        if self.mode != "imag":
            self.real_kernel = self.add_weight("real_kernel", shape=shape,
                                               initializer=STFT("real", self.window, self.scaling, self.periodic))
        if self.mode != "real":
            self.imag_kernel = self.add_weight("imag_kernel", shape=shape,
                                               initializer=STFT("imag", self.window, self.scaling, self.periodic))

    def _conv(self, x, kernel):
        """x [batch, time, channels] -> [batch, channels, bins, frames] (each channel on its own)."""
        time, channels = x.shape[1], x.shape[2]
        flat = _ef.reshape(_ef.transpose(x, [0, 2, 1]), [-1, time, 1])
        y = _ef.nn.conv1d(flat, _ef.cast(kernel, x.dtype), self._frame_step, self.padding.upper())
        return _ef.reshape(_ef.transpose(y, [0, 2, 1]), [-1, channels, y.shape[2], y.shape[1]])

    def _adjust(self, out):
        channels, bins, frames = out.shape[1], out.shape[2], out.shape[3]
        if self.data_format == "channels_last":
            if self.expand_dims:
                return _ef.transpose(out, [0, 3, 2, 1])
            return _ef.transpose(_ef.reshape(out, [-1, channels * bins, frames]), [0, 2, 1])
        if self.expand_dims:
            return _ef.transpose(out, [0, 1, 3, 2])
        return _ef.reshape(out, [-1, channels * bins, frames])

    def call(self, inputs):
        x = inputs if isinstance(inputs, _ef.Tensor) else _ef.convert_to_tensor(inputs)
        if x.dtype not in (_ef.float16, _ef.float32, _ef.float64):
            raise TypeError(f"Invalid input type. Expected `float16`, `float32` or `float64`. "
                            f"Received: input type={x.dtype.name}")
        if self.data_format == "channels_first":
            x = _ef.transpose(x, [0, 2, 1])
        real = self._conv(x, self.real_kernel) if self.mode != "imag" else None
        imag = self._conv(x, self.imag_kernel) if self.mode != "real" else None
        if self.mode == "real":
            return self._adjust(real)
        if self.mode == "imag":
            return self._adjust(imag)
        if self.mode == "angle":
            return self._adjust(_ef.math.atan2(imag, real))
        if self.mode == "stft":
            return self._adjust(_ef.concat([real, imag], 2))
        power = real * real + imag * imag
        if self.mode == "psd":
            return self._adjust(power + _ef.pad(power[:, :, 1:-1, :], [[0, 0], [0, 0], [1, 1], [0, 0]]))
        eps = 1e-7  # Keras' backend.epsilon()
        magnitude = self._adjust(_ef.sqrt(_ef.maximum(power, eps)))
        return magnitude if self.mode == "magnitude" else _ef.math.log(_ef.maximum(magnitude, eps))

    def compute_output_shape(self, input_shape):
        channels = input_shape[-1] if self.data_format == "channels_last" else input_shape[1]
        time = input_shape[1] if self.data_format == "channels_last" else input_shape[2]
        bins = self._fft_length // 2 + 1
        if self.mode == "stft":
            bins *= 2
        if time is None:
            frames = None
        elif self.padding == "same":
            frames = -(-time // self._frame_step)
        else:
            frames = (time - self.frame_length) // self._frame_step + 1
        if self.expand_dims:
            return (input_shape[0], frames, bins, channels) if self.data_format == "channels_last" else \
                (input_shape[0], channels, frames, bins)
        return (input_shape[0], frames, bins * channels) if self.data_format == "channels_last" else \
            (input_shape[0], bins * channels, frames)


register(STFTSpectrogram)
