"""Keras 3's colour / mixing augmentation layers, RandomShear and Pipeline: values against NumPy
(Keras 3.15's formulas), inference identity, configs, models, fit, ef.function and Dataset.map."""
import colorsys

import numpy as np
import pytest

import eagerflow as ef

L = ef.keras.layers
X = np.random.RandomState(0).uniform(0, 255, (2, 4, 5, 3)).astype(np.float32)
GRAY = np.array([0.2989, 0.5870, 0.1140], np.float32)


def _conv_same(img, k):
    """'same' zero-padded 2-D correlation of every channel of img [H, W, C] with k [kh, kw]."""
    kh, kw = k.shape
    p = np.pad(img, ((kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    out = np.zeros_like(img)
    for i in range(img.shape[0]):
        for j in range(img.shape[1]):
            out[i, j] = np.tensordot(k, p[i:i + kh, j:j + kw], axes=([0, 1], [0, 1]))
    return out


def _hsv_map(x, fn):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        h, s, v = colorsys.rgb_to_hsv(*x[idx])
        out[idx] = colorsys.hsv_to_rgb(*fn(h, s, v))
    return out


def test_auto_contrast():
    lo, hi = X.min((1, 2), keepdims=True), X.max((1, 2), keepdims=True)
    np.testing.assert_allclose(L.AutoContrast()(X).numpy(), (X - lo) * 255 / (hi - lo), rtol=1e-5, atol=1e-3)
    x01 = X / 255
    np.testing.assert_allclose(L.AutoContrast(value_range=(0, 1))(x01).numpy(),
                               (x01 - x01.min((1, 2), keepdims=True)) /
                               (x01.max((1, 2), keepdims=True) - x01.min((1, 2), keepdims=True)), atol=1e-5)
    # not random: inference transforms too
    np.testing.assert_allclose(L.AutoContrast()(X, training=False).numpy(), L.AutoContrast()(X).numpy())


def test_solarization_inverts_by_default_and_inference_is_identity():
    np.testing.assert_allclose(L.Solarization()(X).numpy(), 255 - X, atol=1e-4)
    np.testing.assert_array_equal(L.Solarization()(X, training=False).numpy(), X)
    assert L.Solarization(0.3).addition_factor == (0, 0.3)
    with pytest.raises(ValueError):
        L.Solarization(addition_factor=1.5)


def test_random_invert_grayscale_posterization_degeneration():
    np.testing.assert_allclose(L.RandomInvert((1, 1))(X).numpy(), 255 - X, atol=1e-4)
    np.testing.assert_array_equal(L.RandomInvert((0, 0))(X).numpy(), X)
    gray = (X @ GRAY)[..., None] * np.ones(3, np.float32)
    np.testing.assert_allclose(L.RandomGrayscale(1.0)(X).numpy(), gray, rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(L.RandomGrayscale(0.0)(X).numpy(), X)
    np.testing.assert_allclose(L.RandomPosterization((4, 4))(X).numpy(), np.floor(X) // 16 * 16)
    x01 = X / 255
    np.testing.assert_allclose(L.RandomPosterization((3, 3), value_range=(0, 1))(x01).numpy(),
                               np.floor(x01 * 255) // 32 * 32 / 255, atol=1e-6)
    deg = X + 0.3 * ((X @ GRAY)[..., None] - X)
    np.testing.assert_allclose(L.RandomColorDegeneration((0.3, 0.3))(X).numpy(), deg, rtol=1e-5, atol=1e-3)
    with pytest.raises(ValueError):
        L.RandomPosterization(9)
    with pytest.raises(ValueError):
        L.RandomGrayscale(1.5)


def test_random_saturation_and_hue():
    f = 0.3 / (1 - 0.3 + 1e-7)
    want = _hsv_map(X.astype(np.float64), lambda h, s, v: (h, min(max(s * f, 0), 255), v))
    np.testing.assert_allclose(L.RandomSaturation((0.3, 0.3))(X).numpy(), want, rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(L.RandomSaturation((0.5, 0.5))(X).numpy(), X, rtol=1e-4, atol=2e-3)
    # the hue turns by +-0.1 (a coin per image): each image is one of the two
    x01 = X.astype(np.float64) / 255
    plus = _hsv_map(x01, lambda h, s, v: ((h + 0.1) % 1.0, s, v)) * 255
    minus = _hsv_map(x01, lambda h, s, v: ((h - 0.1) % 1.0, s, v)) * 255
    got = L.RandomHue((0.2, 0.2), seed=3)(X).numpy()
    for i in range(2):
        assert min(np.abs(got[i] - plus[i]).max(), np.abs(got[i] - minus[i]).max()) < 0.05


def test_random_sharpness_and_gaussian_blur():
    a, b = 1 / 13, 5 / 13
    smooth = np.stack([_conv_same(img, np.array([[a, a, a], [a, b, a], [a, a, a]])) for img in X])
    want = np.clip(X + (1 - 0.4) * (smooth - X), 0, 255)
    np.testing.assert_allclose(L.RandomSharpness((0.2, 0.2))(X).numpy(), want, rtol=1e-5, atol=1e-3)

    def k1(n, s):
        t = np.arange(n) - (n - 1) / 2
        g = np.exp(-t ** 2 / (2 * s * s))
        return g / g.sum()
    s = 0.7 + 1e-6
    k = np.outer(k1(3, s), k1(3, s))
    blurred = np.stack([_conv_same(img, k) for img in X])
    got = L.RandomGaussianBlur(factor=(1, 1), sigma=(0.7, 0.7))(X).numpy()
    np.testing.assert_allclose(got, blurred, rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(L.RandomGaussianBlur(factor=(0, 0))(X).numpy(), X)
    with pytest.raises(ValueError, match="odd"):
        L.RandomGaussianBlur(kernel_size=4)


def _shear_nearest_constant(img, sx):
    h, w, _ = img.shape
    out = np.zeros_like(img)
    for y in range(h):
        for x in range(w):
            xi = x + sx * y
            xr = int(np.sign(xi) * np.floor(abs(xi) + 0.5))
            if 0 <= xr < w:
                out[y, x] = img[y, xr]
    return out


def test_random_shear_matches_the_affine_map():
    layer = L.RandomShear(x_factor=(0.5, 0.5), fill_mode="constant", interpolation="nearest", seed=2)
    got = layer(X).numpy()
    for i in range(2):
        candidates = [_shear_nearest_constant(X[i], s) for s in (0.5, -0.5)]
        assert min(np.abs(got[i] - c).max() for c in candidates) < 1e-4
    assert L.RandomShear(0.2).x_factor == (-0.2, 0.2)
    with pytest.raises(ValueError):
        L.RandomShear(x_factor=1.5)


def test_mixup_images_and_labels():
    layer = L.MixUp(alpha=0.4, seed=1)
    labels = np.eye(2, dtype=np.float32)
    out = layer({"images": X, "labels": labels})
    mixed, lab = out["images"].numpy(), out["labels"].numpy()
    np.testing.assert_allclose(lab.sum(1), [1, 1], rtol=1e-5)
    # each image is w * itself + (1 - w) * its partner (itself or the other), w its label's own weight
    for i in range(2):
        w = lab[i, i]
        candidates = [w * X[i] + (1 - w) * X[1 - i], X[i]]
        assert min(np.abs(mixed[i] - c).max() for c in candidates) < 1e-2
    np.testing.assert_array_equal(layer(X, training=False).numpy(), X)


def test_mixup_weights_are_beta_distributed():
    w = L.MixUp(alpha=2.0, seed=0)._draw(ef.constant(np.zeros((20000, 1, 1, 1), np.float32)))[1].numpy()
    assert abs(w.mean() - 0.5) < 0.01 and abs(w.var() - 0.05) < 0.005  # Beta(2, 2): mean 1/2, variance 1/20


ALL = [lambda: L.AutoContrast(), lambda: L.Solarization(0.2, 0.5, seed=1), lambda: L.RandomInvert(0.5, seed=1),
       lambda: L.RandomGrayscale(0.5, seed=1), lambda: L.RandomPosterization(6, seed=1),
       lambda: L.RandomColorDegeneration(0.5, seed=1), lambda: L.RandomSaturation(0.5, seed=1),
       lambda: L.RandomHue(0.3, seed=1), lambda: L.RandomSharpness(0.4, seed=1),
       lambda: L.RandomGaussianBlur(0.8, 5, 0.9, seed=1), lambda: L.RandomShear(0.2, 0.1, seed=1),
       lambda: L.MixUp(0.3, seed=1),
       lambda: L.RandomColorJitter(brightness_factor=0.2, contrast_factor=0.3, saturation_factor=0.4,
                                   hue_factor=0.1, seed=1)]


@pytest.mark.parametrize("make", ALL)
def test_config_round_trip_inference_and_function(make):
    layer = make()
    config = layer.get_config()
    again = type(layer).from_config(config)
    assert again.get_config() == config
    assert ef.keras.layers.deserialize(ef.keras.layers.serialize(layer)).get_config() == config
    y = layer(X)
    assert y.shape == X.shape and y.dtype == ef.float32 and np.isfinite(y.numpy()).all()
    if not isinstance(layer, L.AutoContrast):
        np.testing.assert_array_equal(layer(X, training=False).numpy(), X)
    traced = ef.function(lambda t: layer(t, training=True))
    assert traced(ef.constant(X)).shape == X.shape
    single = layer(X[0])
    assert single.shape == X[0].shape


def test_in_a_model_fit_and_predict():
    ef.random.set_seed(0)
    model = ef.keras.Sequential([ef.keras.Input((4, 5, 3)), L.RandomShear(0.1, seed=1),
                                 L.RandomColorJitter(brightness_factor=0.1, seed=2), L.RandomSharpness(0.3, seed=3),
                                 L.Rescaling(1 / 255.0), L.Flatten(), L.Dense(1)])
    model.compile("adam", "mse")
    y = np.ones((2, 1), np.float32)
    h = model.fit(X, y, epochs=2, verbose=0)
    assert np.isfinite(h.history["loss"]).all()
    # predict: the augmentations are identity, so two predictions agree
    np.testing.assert_allclose(model.predict(X, verbose=0), model.predict(X, verbose=0))


def test_pipeline_chain_config_and_dataset_map():
    pipe = L.Pipeline([L.RandomInvert((1, 1)), L.RandomGrayscale(1.0)], name="aug")
    want = ((255 - X) @ GRAY)[..., None] * np.ones(3, np.float32)
    np.testing.assert_allclose(pipe(X).numpy(), want, rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(pipe(X, training=False).numpy(), X)
    assert len(pipe.layers) == 2
    config = pipe.get_config()
    assert config["name"] == "aug" and [c["class_name"] for c in config["layers"]] == ["RandomInvert",
                                                                                     "RandomGrayscale"]
    again = L.Pipeline.from_config(config)
    np.testing.assert_allclose(again(X).numpy(), want, rtol=1e-5, atol=1e-3)
    with pytest.raises(ValueError):
        L.Pipeline.from_config({"name": "p"})
    ds = ef.data.Dataset.from_tensor_slices(X).batch(2).map(lambda t: pipe(t))
    np.testing.assert_allclose(next(iter(ds)).numpy(), want, rtol=1e-5, atol=1e-3)
    mix = L.Pipeline([L.MixUp(seed=1)])
    out = mix({"images": X, "labels": np.eye(2, dtype=np.float32)})
    np.testing.assert_allclose(out["labels"].numpy().sum(1), [1, 1], rtol=1e-5)


def test_saved_and_loaded_in_a_model(tmp_path):
    model = ef.keras.Sequential([ef.keras.Input((4, 5, 3)), L.RandomHue(0.2, seed=1), L.Solarization(0.1),
                                 L.Flatten(), L.Dense(2)])
    path = str(tmp_path / "m.keras")
    model.save(path)
    back = ef.keras.models.load_model(path)
    assert [type(l).__name__ for l in back.layers][:2] == ["RandomHue", "Solarization"]
    np.testing.assert_allclose(back.predict(X, verbose=0), model.predict(X, verbose=0), rtol=1e-5)


def test_rand_augment_applies_one_of_keras_ops_per_step():
    # factor 0 makes every op deterministic: identity for the geometric / brightness / contrast /
    # degeneration ones, smoothing for RandomSharpness, 1 bit for RandomPosterization, inversion
    # for Solarization, and AutoContrast / Equalization themselves
    x = X
    candidates = [x, L.RandomSharpness((0, 0))(x).numpy(), L.RandomPosterization((1, 1))(x).numpy(), 255 - x,
                  L.AutoContrast()(x).numpy(), L.Equalization()(x).numpy()]
    layer = L.RandAugment(num_ops=1, factor=(0, 0), seed=5)
    seen = set()
    for _ in range(12):
        y = layer(x).numpy()
        match = [i for i, c in enumerate(candidates) if np.allclose(y, c, atol=1e-3)]
        assert match, "the output is none of RandAugment's operations"
        seen.add(match[0])
    assert len(seen) >= 2  # the op is drawn anew on every call
    np.testing.assert_array_equal(L.RandAugment(num_ops=0)(x).numpy(), x)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    two = L.RandAugment(seed=1)
    assert ef.function(lambda t: two(t))(ef.constant(x)).shape == x.shape
    config = two.get_config()
    assert config["factor"] == (0, 0.5) and config["num_ops"] == 2
    assert L.RandAugment.from_config(config).get_config() == config


def test_aug_mix_mixes_the_image_with_its_chains():
    x = X
    np.testing.assert_allclose(L.AugMix(chain_depth=0, seed=1)(x).numpy(), x, rtol=1e-5, atol=1e-3)
    # one chain of one deterministic operation (factor 0): y = w x + (1 - w) op(x), w in [0, 1]
    candidates = [L.RandomSharpness((0, 0))(x).numpy(), L.RandomPosterization((1, 1))(x).numpy(), 255 - x,
                  L.AutoContrast()(x).numpy(), L.Equalization()(x).numpy()]
    layer = L.AugMix(num_chains=1, chain_depth=1, factor=(0, 0), seed=2)
    for _ in range(6):
        y = layer(x).numpy().ravel().astype(np.float64)
        fits = []
        for c in candidates:
            d = (x - c).ravel().astype(np.float64)
            w = float(np.dot(y - c.ravel(), d) / max(np.dot(d, d), 1e-9))
            fits.append((np.abs(w * d + c.ravel() - y).max(), w))
        best = min(fits)
        if np.abs(y - x.ravel()).max() > 1e-3:  # not the skipped step or an identity op
            assert best[0] < 1e-2 and -1e-4 <= best[1] <= 1 + 1e-4
    out = L.AugMix(value_range=(0, 1), seed=3)(x / 255).numpy()
    assert out.min() >= 0 and out.max() <= 1
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    config = L.AugMix(all_ops=False, alpha=0.5).get_config()
    assert config["factor"] == (0, 0.3) and not config["all_ops"] and config["alpha"] == 0.5
    assert L.AugMix.from_config(config).get_config() == config
    assert ef.function(lambda t: layer(t))(ef.constant(x)).shape == x.shape
