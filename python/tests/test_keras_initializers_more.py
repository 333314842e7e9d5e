"""keras.initializers' Keras 3 additions: Orthogonal, STFT, IdentityInitializer, VarianceScaling's
input_axes / output_axes, variance_scaling, serialize / deserialize."""
import numpy as np
import pytest

import eagerflow as ef

I = ef.keras.initializers


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 3, 4), (4, 4)])
def test_orthogonal_is_orthonormal_times_gain(shape):
    w = np.asarray(I.Orthogonal(gain=2.0, seed=3)(shape))
    assert w.shape == shape
    m = w.reshape(-1, shape[-1]) / 2.0
    small = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(small, np.eye(small.shape[0]), atol=1e-5)


def test_orthogonal_seeded_repeats_and_aliases():
    a = np.asarray(I.Orthogonal(seed=7)((4, 6)))
    np.testing.assert_array_equal(a, np.asarray(I.Orthogonal(seed=7)((4, 6))))
    assert not np.allclose(a, np.asarray(I.Orthogonal(seed=8)((4, 6))))
    assert I.OrthogonalInitializer is I.Orthogonal and I.orthogonal is I.Orthogonal
    assert I.IdentityInitializer is I.Identity
    assert I.get("orthogonal").get_config() == {"seed": None, "gain": 1.0}  # Keras 3.15's keys


def test_orthogonal_rank_one_is_a_value_error():
    with pytest.raises(ValueError, match="at least two-dimensional"):
        I.Orthogonal()((3,))


def test_orthogonal_kernel_in_a_layer_and_fit():
    dense = ef.keras.layers.Dense(4, kernel_initializer=I.Orthogonal(seed=1))
    model = ef.keras.Sequential([ef.keras.Input((4,)), dense, ef.keras.layers.Dense(1)])
    k = dense.kernel.numpy()
    np.testing.assert_allclose(k @ k.T, np.eye(4), atol=1e-5)
    model.compile("sgd", "mse")
    h = model.fit(np.ones((8, 4), np.float32), np.zeros((8, 1), np.float32), epochs=2, verbose=0)
    assert np.isfinite(h.history["loss"]).all()
    conv = ef.keras.layers.Conv1DTranspose(2, 3, kernel_initializer="orthogonal")
    conv(np.ones((1, 5, 3), np.float32))
    kk = conv.kernel.numpy().reshape(-1, conv.kernel.shape[-1])
    np.testing.assert_allclose(kk.T @ kk, np.eye(kk.shape[1]), atol=1e-5)


def _hann(n, periodic):
    m = n + 1 if periodic else n
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(m) / (m - 1)))[:n]


@pytest.mark.parametrize("side,scaling,periodic", [("real", "density", False), ("imag", "spectrum", True),
                                                   ("real", None, True)])
def test_stft_kernel_is_a_windowed_dft(side, scaling, periodic):
    frames, bins = 8, 5
    k = np.asarray(I.STFT(side, "hann", scaling, periodic)((frames, 1, bins)))
    t = np.arange(frames)[:, None]
    f = np.arange(bins)[None, :] / ((bins - 1) * 2)
    base = np.cos(-2 * np.pi * t * f) if side == "real" else np.sin(-2 * np.pi * t * f)
    win = _hann(frames, periodic)
    scale = {"density": np.sqrt((win ** 2).sum()), "spectrum": np.abs(win).sum(), None: 1.0}[scaling]
    np.testing.assert_allclose(k[:, 0, :], base * win[:, None] / scale, atol=1e-6)


def test_stft_windows_and_errors():
    n = 6
    ham = np.asarray(I.STFT(window="hamming", scaling=None)((n, 1, 2)))[:, 0, 0]
    np.testing.assert_allclose(ham, 0.54 - 0.46 * np.cos(2 * np.pi * np.arange(n) / (n - 1)), atol=1e-6)
    custom = np.linspace(0.1, 1.0, n)
    got = np.asarray(I.STFT(window=custom, scaling=None)((n, 1, 2)))[:, 0, 0]
    np.testing.assert_allclose(got, custom, atol=1e-6)
    plain = np.asarray(I.STFT(window=None, scaling=None)((4, 1, 3)))[:, 0, :]
    np.testing.assert_allclose(plain, [[1, 1, 1], [1, 0, -1], [1, -1, 1], [1, 0, -1]], atol=1e-6)
    with pytest.raises(ValueError):
        I.STFT(side="both")
    with pytest.raises(ValueError):
        I.STFT(scaling="l3")
    with pytest.raises(ValueError):
        I.STFT(window=np.ones(3), scaling=None)((4, 1, 3))
    assert I.STFT().get_config() == {"side": "real", "window": "hann", "periodic": False, "scaling": "density"}
    assert I.stft is I.STFT and I.STFTInitializer is I.STFT


def test_variance_scaling_axes_set_the_fans():
    # fan_in from input_axes=[0] (400), fan_out from output_axes=[1, 2] (150), as Keras' compute_fans
    shape = (400, 3, 50)
    w = np.asarray(I.VarianceScaling(2.0, "fan_in", "untruncated_normal", seed=0, input_axes=[0],
                                     output_axes=[1, 2])(shape))
    assert abs(w.std() - np.sqrt(2 / 400)) < 0.02 * np.sqrt(2 / 400)
    w = np.asarray(I.VarianceScaling(2.0, "fan_out", "uniform", seed=0, input_axes=[0], output_axes=[1, 2])(shape))
    assert abs(w.std() - np.sqrt(2 / 150)) < 0.02 * np.sqrt(2 / 150)
    # without both axes Keras' default layout rule: fan_in = 3 * 400 * ... (conv kernel)
    w = np.asarray(I.VarianceScaling(1.0, "fan_in", "untruncated_normal", seed=0, input_axes=[0])(shape))
    assert abs(w.std() - np.sqrt(1 / (400 * 3))) < 0.03 * np.sqrt(1 / 1200)
    assert I.variance_scaling is I.VarianceScaling
    with pytest.raises(ValueError):
        I.VarianceScaling(scale=0.0)
    with pytest.raises(ValueError):
        I.VarianceScaling(mode="fan_max")


def test_configs_are_keras_3_15s():
    assert I.VarianceScaling().get_config() == {"seed": None, "scale": 1.0, "mode": "fan_in",
                                                "distribution": "truncated_normal", "input_axes": None,
                                                "output_axes": None}
    assert I.GlorotUniform().get_config() == {"seed": None, "input_axes": None, "output_axes": None}


@pytest.mark.parametrize("init", [I.Orthogonal(gain=0.5, seed=2), I.STFT("imag", "hamming", None, True),
                                  I.HeNormal(seed=4), I.VarianceScaling(3.0, "fan_avg", "uniform", 1, [0], [1]),
                                  I.Constant(2.0), I.Identity(gain=3.0)])
def test_serialize_round_trip(init):
    s = I.serialize(init)
    assert s["module"] == "keras.initializers" and s["class_name"] == type(init).__name__
    back = I.deserialize(s)
    assert type(back) is type(init) and back.get_config() == init.get_config()
    assert I.get(s).get_config() == init.get_config()
    shape = (4, 1, 3) if isinstance(init, I.STFT) else (3, 3)
    np.testing.assert_allclose(np.asarray(back(shape)), np.asarray(init(shape)))


def test_get_by_name_and_unknown():
    for name, cls in [("stft", I.STFT), ("orthogonal", I.Orthogonal), ("variance_scaling", I.VarianceScaling),
                      ("constant", I.Constant), ("IdentityInitializer", I.Identity), ("HeNormal", I.HeNormal)]:
        assert type(I.get(name)) is cls
    assert type(I.deserialize("he_normal")) is I.HeNormal
    with pytest.raises(ValueError):
        I.get("not_an_initializer")
    with pytest.raises(ValueError):
        I.deserialize({"class_name": "Nope", "config": {}})
