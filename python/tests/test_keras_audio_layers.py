"""Keras 3's STFTSpectrogram (against NumPy's rfft) and MelSpectrogram (against Keras 3.15's values)."""
import numpy as np
import pytest

import eagerflow as ef

L = ef.keras.layers
X = np.random.RandomState(0).randn(2, 300, 2).astype(np.float32)


def _frames(sig, length, step):
    n = (len(sig) - length) // step + 1
    return np.stack([sig[i * step:i * step + length] for i in range(n)])


def _numpy_stft(x, length, step, fft, window):
    """[batch, frames, bins, channels] complex: rfft of each (windowed, scaled) frame."""
    out = []
    for b in range(x.shape[0]):
        chans = []
        for c in range(x.shape[2]):
            f = _frames(x[b, :, c].astype(np.float64), length, step)
            if window is not None:
                f = f * window / np.sqrt((window ** 2).sum())
            chans.append(np.fft.rfft(f, n=fft, axis=-1))
        out.append(np.stack(chans, -1))
    return np.stack(out)


@pytest.mark.parametrize("mode", ["log", "magnitude", "psd", "real", "imag", "angle", "stft"])
def test_stft_spectrogram_modes(mode):
    s = _numpy_stft(X, 32, 8, 32, None)  # [b, frames, 17, ch]
    want = {"real": s.real, "imag": s.imag, "magnitude": np.sqrt(np.maximum(np.abs(s) ** 2, 1e-7)),
            "angle": np.angle(s), "stft": None, "psd": None}.get(mode)
    if mode == "log":
        want = np.log(np.maximum(np.sqrt(np.maximum(np.abs(s) ** 2, 1e-7)), 1e-7))
    if mode == "psd":
        p = np.abs(s) ** 2
        want = p.copy()
        want[:, :, 1:-1] += p[:, :, 1:-1]
    if mode == "stft":
        want = np.concatenate([s.real, s.imag], 2)
    # channels_last without expand_dims: [b, frames, channel-major bins]
    want = np.transpose(want, [0, 1, 3, 2]).reshape(2, want.shape[1], -1)
    got = L.STFTSpectrogram(mode=mode, frame_length=32, frame_step=8, window=None, scaling=None)(X).numpy()
    assert got.shape == want.shape
    if mode == "angle":  # +-pi where the imaginary part is a signed zero
        diff = np.abs(np.angle(np.exp(1j * (got - want))))
        assert diff.max() < 1e-3
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_stft_spectrogram_hann_window_same_padding_expand_dims_and_channels_first():
    n = 30
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / (n - 1))
    layer = L.STFTSpectrogram(mode="real", frame_length=n, frame_step=10, fft_length=64, padding="valid",
                              expand_dims=True)
    got = layer(X).numpy()  # [b, frames, bins, channels]
    want = _numpy_stft(X, n, 10, 64, hann).real
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    same = L.STFTSpectrogram(mode="magnitude", frame_length=30, frame_step=10, padding="same")
    assert same(X).shape == same.compute_output_shape((2, 300, 2)) == (2, 30, 17 * 2)
    first = L.STFTSpectrogram(frame_length=16, data_format="channels_first")
    y = first(np.transpose(X, [0, 2, 1])).numpy()
    np.testing.assert_allclose(y, np.transpose(L.STFTSpectrogram(frame_length=16)(X).numpy(), [0, 2, 1]),
                               rtol=1e-5, atol=1e-5)


def test_stft_spectrogram_weights_config_errors_and_fit():
    layer = L.STFTSpectrogram(mode="log", frame_length=16)
    layer(X)
    assert sorted(w.name.split("/")[-1].split(":")[0] for w in layer.weights) == ["imag_kernel", "real_kernel"]
    assert tuple(layer.real_kernel.shape) == (16, 1, 9)
    config = layer.get_config()
    assert {k: config[k] for k in ("mode", "frame_length", "frame_step", "fft_length", "window", "padding")} == \
        {"mode": "log", "frame_length": 16, "frame_step": None, "fft_length": None, "window": "hann", "padding": "valid"}
    np.testing.assert_allclose(L.STFTSpectrogram.from_config(config)(X).numpy(), layer(X).numpy(), rtol=1e-6)
    with pytest.raises(ValueError):
        L.STFTSpectrogram(mode="power")
    with pytest.raises(ValueError):
        L.STFTSpectrogram(frame_length=16, frame_step=20)
    with pytest.raises(ValueError):
        L.STFTSpectrogram(frame_length=16, fft_length=8)
    with pytest.raises(TypeError):
        L.STFTSpectrogram(frame_length=16)(X.astype(np.int32))
    model = ef.keras.Sequential([ef.keras.Input((300, 2)), L.STFTSpectrogram(frame_length=32, frame_step=16),
                                 L.Flatten(), L.Dense(1)])
    model.compile("sgd", "mse")
    h = model.fit(X, np.ones((2, 1), np.float32), epochs=2, verbose=0)
    assert np.isfinite(h.history["loss"]).all()
    traced = ef.function(lambda t: layer(t))
    np.testing.assert_allclose(traced(ef.constant(X)).numpy(), layer(X).numpy(), rtol=1e-6)


SIGNAL = (np.sin(np.arange(120) * 0.3) + 0.1 * np.cos(np.arange(120) * 1.7)).astype(np.float32)
# Recorded from keras 3.15.1 (TensorFlow backend): MelSpectrogram(fft_length=32, sequence_stride=16,
# num_mel_bins=4, sampling_rate=100, min_freq=5.0)(SIGNAL[None])
KERAS_MEL = [[9.8383, 9.0569, 8.9763, 9.0526, 8.9833, 9.0435, 8.9951, 9.541],
             [-2.6181, -3.0977, -3.0639, -3.1047, -3.061, -3.1071, -3.0757, -3.9547],
             [-6.8531, -3.2789, -3.2874, -3.2762, -3.2888, -3.2742, -3.2832, -3.4413],
             [-10.6429, -37.9414, -36.0687, -38.5037, -35.8737, -38.9866, -36.5461, -13.0185]]


def test_mel_spectrogram_matches_keras():
    layer = L.MelSpectrogram(fft_length=32, sequence_stride=16, num_mel_bins=4, sampling_rate=100, min_freq=5.0)
    got = layer(SIGNAL[None]).numpy()
    assert got.shape == (1, 4, 8) and list(layer.compute_output_shape((1, 120))) == [1, 4, 8]
    np.testing.assert_allclose(got[0, :3], np.array(KERAS_MEL)[:3], atol=2e-3)
    np.testing.assert_allclose(got[0, 3], KERAS_MEL[3], atol=0.2)  # log of a tiny power: float32 round-off
    one = layer(SIGNAL).numpy()  # one signal: [mel, frames]
    np.testing.assert_allclose(one, got[0], rtol=1e-5, atol=1e-4)


def test_mel_spectrogram_power_and_db_rules():
    x = np.random.RandomState(1).randn(2, 400).astype(np.float32)
    linear = L.MelSpectrogram(fft_length=64, sequence_stride=32, num_mel_bins=6, power_to_db=False)(x).numpy()
    assert (linear >= 0).all()
    db = L.MelSpectrogram(fft_length=64, sequence_stride=32, num_mel_bins=6, top_db=30.0, ref_power=2.0)(x).numpy()
    want = 10 * np.log10(np.maximum(linear, 1e-10)) - 10 * np.log10(2.0)
    want = np.maximum(want, want.max() - 30.0)  # top_db over the whole batch, as Keras
    np.testing.assert_allclose(db, want, rtol=1e-4, atol=1e-3)
    mag = L.MelSpectrogram(fft_length=64, sequence_stride=32, num_mel_bins=6, power_to_db=False, mag_exp=1.0)(x)
    assert mag.shape == linear.shape
    with pytest.raises(ValueError):
        L.MelSpectrogram(fft_length=64, sequence_length=128)


def test_mel_spectrogram_config_function_and_model():
    layer = L.MelSpectrogram(fft_length=64, sequence_stride=32, num_mel_bins=8, sampling_rate=8000)
    config = layer.get_config()
    assert config["max_freq"] == 4000 and config["sequence_length"] == 64
    again = L.deserialize(L.serialize(layer))
    x = np.random.RandomState(2).randn(3, 256).astype(np.float32)
    np.testing.assert_allclose(again(x).numpy(), layer(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(ef.function(lambda t: layer(t))(ef.constant(x)).numpy(), layer(x).numpy(), rtol=1e-5)
    model = ef.keras.Sequential([ef.keras.Input((256,)), layer, L.Flatten(), L.Dense(1)])
    model.compile("sgd", "mse")
    assert np.isfinite(model.fit(x, np.zeros((3, 1), np.float32), epochs=1, verbose=0).history["loss"]).all()
