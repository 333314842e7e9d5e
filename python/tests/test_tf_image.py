"""tf.image as ef.image (issue 31): TF's names, argument names and results against NumPy
references written here (half-pixel bilinear and nearest resizes, area averages, a Gaussian-window
SSIM, Sobel with reflected borders), eager == traced, gradients, and TF's error classes."""
import numpy as np
import pytest

import eagerflow as tf

RNG = np.random.default_rng(31)
X = RNG.standard_normal((2, 6, 7, 3)).astype(np.float32)
U = RNG.uniform(0, 1, (2, 14, 13, 3)).astype(np.float32)
U2 = np.clip(U + 0.1 * RNG.standard_normal(U.shape), 0, 1).astype(np.float32)


def both_ways(fn, *args):
    """fn's result eagerly and inside tf.function, which must agree."""
    eager = fn(*args)
    traced = tf.function(fn)(*args)
    if isinstance(eager, tuple):
        for e, t in zip(eager, traced):
            np.testing.assert_array_equal(np.asarray(e), np.asarray(t))
        return tuple(np.asarray(e) for e in eager)
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(traced))
    return np.asarray(eager)


# ---- NumPy references ----

def bilinear_matrix(n_in, n_out):
    """[n_out, n_in]: half-pixel centers, the two neighbours clamped to the image."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        x = (o + 0.5) * n_in / n_out - 0.5
        lo = np.floor(x)
        f = x - lo
        m[o, min(max(int(lo), 0), n_in - 1)] += 1 - f
        m[o, min(int(np.ceil(x)), n_in - 1)] += f
    return m


def nearest_index(n_in, n_out):
    return np.minimum(np.floor((np.arange(n_out) + 0.5) * n_in / n_out).astype(int), n_in - 1)


def separable(x, mh, mw):
    return np.einsum("oh,nhwc,pw->nopc", mh, x.astype(np.float64), mw)


def gaussian(size, sigma):
    c = np.arange(size) - (size - 1) / 2
    g = np.exp(-0.5 * c**2 / sigma**2)
    return g / g.sum()


def valid_filter(x, g):
    """Valid 2-D correlation of [..., H, W, C] with the window outer(g, g), one window at a time."""
    k = len(g)
    w2 = np.outer(g, g)
    h, w = x.shape[-3] - k + 1, x.shape[-2] - k + 1
    out = np.zeros(x.shape[:-3] + (h, w, x.shape[-1]))
    for i in range(h):
        for j in range(w):
            out[..., i, j, :] = np.einsum("...abc,ab->...c", x[..., i:i + k, j:j + k, :], w2)
    return out


def ssim_reference(a, b, max_val, size=11, sigma=1.5, k1=0.01, k2=0.03):
    a, b = a.astype(np.float64), b.astype(np.float64)
    g = gaussian(size, sigma)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    ma, mb = valid_filter(a, g), valid_filter(b, g)
    va = valid_filter(a * a, g) - ma**2
    vb = valid_filter(b * b, g) - mb**2
    cov = valid_filter(a * b, g) - ma * mb
    s = (2 * ma * mb + c1) * (2 * cov + c2) / ((ma**2 + mb**2 + c1) * (va + vb + c2))
    return s.mean(axis=(-3, -2, -1))


# ---- geometry ----

@pytest.mark.parametrize("name,ref", [
    ("flip_left_right", lambda a: a[:, :, ::-1]),
    ("flip_up_down", lambda a: a[:, ::-1]),
    ("transpose", lambda a: a.transpose(0, 2, 1, 3)),
])
def test_flips_and_transpose(name, ref):
    got = both_ways(getattr(tf.image, name), X)
    np.testing.assert_array_equal(got, ref(X))
    # One HWC image is treated as a batch of one.
    np.testing.assert_array_equal(np.asarray(getattr(tf.image, name)(X[1])), ref(X[1:])[0])


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 6])
def test_rot90_as_numpy(k):
    got = both_ways(lambda a: tf.image.rot90(a, k=k, name="r"), X)
    np.testing.assert_array_equal(got, np.rot90(X, k, axes=(1, 2)))


def test_random_flips_flip_whole_images_and_repeat_with_a_seed():
    x = RNG.standard_normal((40, 3, 4, 2)).astype(np.float32)
    got = np.asarray(tf.image.random_flip_left_right(x, seed=5))
    flipped = [np.array_equal(g, a[:, ::-1]) for g, a in zip(got, x)]
    kept = [np.array_equal(g, a) for g, a in zip(got, x)]
    assert all(f or k for f, k in zip(flipped, kept))
    assert 5 < sum(flipped) < 35
    tf.random.set_seed(4)
    first = np.asarray(tf.image.random_flip_up_down(x, seed=2))
    tf.random.set_seed(4)
    np.testing.assert_array_equal(np.asarray(tf.image.random_flip_up_down(x, seed=2)), first)
    one = np.asarray(tf.image.random_flip_up_down(x[0]))
    assert np.array_equal(one, x[0]) or np.array_equal(one, x[0][::-1])


def test_crop_pad_and_central_crop():
    got = both_ways(lambda a: tf.image.crop_to_bounding_box(a, 1, 2, 4, 3), X)
    np.testing.assert_array_equal(got, X[:, 1:5, 2:5])
    padded = both_ways(lambda a: tf.image.pad_to_bounding_box(a, 2, 1, 9, 10), X)
    want = np.zeros((2, 9, 10, 3), np.float32)
    want[:, 2:8, 1:8] = X
    np.testing.assert_array_equal(padded, want)
    # TF's rounding: margins int((n - n * f) / 2).
    for f in (0.5, 0.37, 0.9, 1.0):
        mh, mw = int((6 - 6 * f) / 2), int((7 - 7 * f) / 2)
        np.testing.assert_array_equal(np.asarray(tf.image.central_crop(X, f)), X[:, mh:6 - mh, mw:7 - mw])
    # Cropping a surplus of 3 leaves the odd row at the bottom; padding by 5 puts 2 before.
    got = np.asarray(tf.image.resize_with_crop_or_pad(X, 3, 12))
    want = np.zeros((2, 3, 12, 3), np.float32)
    want[:, :, 2:9] = X[:, 1:4]
    np.testing.assert_array_equal(got, want)


def test_shape_errors_are_value_errors():
    with pytest.raises(ValueError, match="3 or 4"):
        tf.image.flip_left_right(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="target"):
        tf.image.crop_to_bounding_box(X, 3, 0, 4, 2)
    with pytest.raises(ValueError, match="target - offset"):
        tf.image.pad_to_bounding_box(X, 0, 2, 6, 8)
    with pytest.raises(ValueError, match="central_fraction"):
        tf.image.central_crop(X, 1.5)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.image.resize_with_crop_or_pad(X, 0, 3)
    with pytest.raises(ValueError, match="2 elements"):
        tf.image.resize(X, [3, 4, 5])
    with pytest.raises(ValueError, match="method 'cubic'"):
        tf.image.resize(X, [3, 4], method="cubic")
    with pytest.raises(ValueError, match="positive"):
        tf.image.resize(X, [0, 4])
    with pytest.raises(ValueError, match="4-D"):
        tf.image.image_gradients(X[0])
    with pytest.raises(ValueError, match="filter_size"):
        tf.image.ssim(X, X, 1.0)
    with pytest.raises(ValueError):
        tf.image.psnr(X, X[:, :5], 1.0)
    with pytest.raises(AttributeError, match="floating point or integer"):  # TF's class here
        tf.image.convert_image_dtype(X, tf.bool)


# ---- resizing ----

@pytest.mark.parametrize("size", [(11, 4), (3, 13), (6, 7), (1, 1)])
def test_bilinear_resize_matches_half_pixel_reference(size):
    got = both_ways(lambda a: tf.image.resize(a, size, name="r"), X)
    want = separable(X, bilinear_matrix(6, size[0]), bilinear_matrix(7, size[1]))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [(11, 4), (3, 13), (2, 2)])
def test_nearest_resize_picks_half_pixel_neighbours_and_keeps_dtype(size):
    xi = (X * 100).astype(np.int32)
    got = both_ways(lambda a: tf.image.resize(a, size, method="nearest"), xi)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, xi[:, nearest_index(6, size[0])][:, :, nearest_index(7, size[1])])


def test_area_resize_averages_blocks_and_bicubic_keeps_constants():
    x = RNG.standard_normal((2, 8, 6, 2)).astype(np.float32)
    got = both_ways(lambda a: tf.image.resize(a, [4, 3], method=tf.image.ResizeMethod.AREA), x)
    np.testing.assert_allclose(got, x.reshape(2, 4, 2, 3, 2, 2).mean(axis=(2, 4)), rtol=1e-5, atol=1e-6)
    const = np.full((5, 4, 1), 1.75, np.float32)
    np.testing.assert_allclose(np.asarray(tf.image.resize(const, [9, 7], method="bicubic")), 1.75, rtol=1e-6)
    # Upsampling a linear ramp by bicubic keeps it linear away from the borders.
    ramp = np.tile(np.arange(10, dtype=np.float32)[None, :, None], (3, 1, 1))
    up = np.asarray(tf.image.resize(ramp, [3, 20], method="bicubic"))[0, 4:16, 0]
    np.testing.assert_allclose(np.diff(up), 0.5, atol=2e-3)


def keys(d, a=-0.5):
    d = abs(d)
    if d <= 1:
        return ((a + 2) * d - (a + 3)) * d * d + 1
    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a if d < 2 else 0.0


def bicubic_matrix(n_in, n_out):
    """Half-pixel Keys cubic (a = -0.5) with TF's rules: the fraction on a 1/1024 grid, taps
    outside the image dropped and the rest renormalized."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        x = (o + 0.5) * n_in / n_out - 0.5
        base = int(np.floor(x))
        t = np.round((x - base) * 1024) / 1024
        taps = {base - 1 + k: keys(k - 1 - t) for k in range(4) if 0 <= base - 1 + k < n_in}
        total = sum(taps.values())
        for i, w in taps.items():
            m[o, i] = w / total
    return m


def area_matrix(n_in, n_out):
    """Each output averages the input span [o, o + 1) * n_in / n_out it covers."""
    m = np.zeros((n_out, n_in))
    scale = n_in / n_out
    for o in range(n_out):
        lo, hi = o * scale, (o + 1) * scale
        for i in range(int(np.floor(lo)), int(np.ceil(hi))):
            m[o, min(i, n_in - 1)] += (min(i + 1, hi) - max(i, lo)) / scale
    return m


@pytest.mark.parametrize("size", [(11, 4), (3, 13), (4, 5)])
def test_bicubic_and_area_match_their_references(size):
    got = both_ways(lambda a: tf.image.resize(a, size, method="bicubic"), X)
    np.testing.assert_allclose(got, separable(X, bicubic_matrix(6, size[0]), bicubic_matrix(7, size[1])), rtol=1e-5, atol=2e-5)
    got = both_ways(lambda a: tf.image.resize(a, size, method=tf.image.ResizeMethod.AREA), X)
    np.testing.assert_allclose(got, separable(X, area_matrix(6, size[0]), area_matrix(7, size[1])), rtol=1e-5, atol=2e-5)


def test_resize_preserve_aspect_ratio_and_single_images():
    got = tf.image.resize(X, [20, 14], preserve_aspect_ratio=True)
    assert tuple(got.shape) == (2, 12, 14, 3)  # min(20 / 6, 14 / 7) = 2
    np.testing.assert_allclose(np.asarray(tf.image.resize(X[0], (9, 5))), np.asarray(tf.image.resize(X, (9, 5)))[0])


def kernel_matrix(kernel, radius, n_in, n_out, antialias):
    """[n_out, n_in] for TF's scale_and_translate sampling: sample at (o + 0.5) * n_in / n_out,
    the kernel widened by the downsampling factor with antialias, weights normalized."""
    widen = max(n_in / n_out, 1.0) if antialias else 1.0
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        sample = (o + 0.5) * n_in / n_out
        for i in range(n_in):
            m[o, i] = kernel(abs(i + 0.5 - sample) / widen) if abs(i + 0.5 - sample) < radius * widen else 0.0
        m[o] /= m[o].sum()
    return m


def triangle(d):
    return max(0.0, 1.0 - d)


def lanczos3(d):
    return 1.0 if d < 1e-3 else 3 * np.sin(np.pi * d) * np.sin(np.pi * d / 3) / (np.pi * d) ** 2


@pytest.mark.parametrize("size", [(3, 2), (2, 13), (11, 5)])
def test_antialias_and_lanczos_follow_scale_and_translate_sampling(size):
    got = both_ways(lambda a: tf.image.resize(a, size, antialias=True), X)
    want = separable(X, kernel_matrix(triangle, 1, 6, size[0], True), kernel_matrix(triangle, 1, 7, size[1], True))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got = np.asarray(tf.image.resize(X, size, method=tf.image.ResizeMethod.LANCZOS3))
    want = separable(X, kernel_matrix(lanczos3, 3, 6, size[0], False), kernel_matrix(lanczos3, 3, 7, size[1], False))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_bilinear_resize_gradient_is_the_adjoint():
    mh, mw = bilinear_matrix(6, 9), bilinear_matrix(7, 4)
    w = RNG.standard_normal((2, 9, 4, 3)).astype(np.float32)
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.image.resize(x, [9, 4]) * w)
    got = np.asarray(tape.gradient(loss, x))
    np.testing.assert_allclose(got, np.einsum("oh,nopc,pw->nhwc", mh, w, mw), rtol=1e-5, atol=1e-5)


# ---- color and values ----

def test_grayscale_brightness_contrast_and_standardization():
    gray = both_ways(tf.image.rgb_to_grayscale, X)
    np.testing.assert_allclose(gray, X @ np.array([[0.2989], [0.5870], [0.1140]]), rtol=1e-5, atol=1e-6)
    rgb = both_ways(tf.image.grayscale_to_rgb, gray)
    np.testing.assert_array_equal(rgb, np.repeat(gray, 3, axis=-1))
    with pytest.raises(ValueError):
        tf.image.grayscale_to_rgb(X)
    bright = tf.image.adjust_brightness(X.astype(np.float64), delta=0.25)
    assert bright.dtype == tf.float64
    np.testing.assert_allclose(np.asarray(bright), X + 0.25, rtol=1e-6, atol=1e-6)
    m = X.mean(axis=(1, 2), keepdims=True, dtype=np.float64)
    np.testing.assert_allclose(both_ways(lambda a: tf.image.adjust_contrast(a, 0.4), X), (X - m) * 0.4 + m, rtol=1e-5, atol=1e-5)
    sd = np.maximum(X.std(axis=(1, 2, 3), keepdims=True, dtype=np.float64), 1 / np.sqrt(6 * 7 * 3))
    np.testing.assert_allclose(both_ways(tf.image.per_image_standardization, X),
                               (X - X.mean(axis=(1, 2, 3), keepdims=True, dtype=np.float64)) / sd, rtol=1e-5, atol=1e-5)
    # A uniform image: the floor keeps it finite.
    np.testing.assert_array_equal(np.asarray(tf.image.per_image_standardization(np.ones((2, 2, 1), np.float32))), 0)


def test_convert_image_dtype():
    ints = np.asarray(tf.image.convert_image_dtype(U, tf.int32))
    assert ints.dtype == np.int32
    np.testing.assert_allclose(ints, U.astype(np.float64) * (2**31 - 1), rtol=1e-6, atol=256)
    back = np.asarray(tf.image.convert_image_dtype(ints, tf.float32))
    np.testing.assert_allclose(back, U, atol=1e-6)
    assert tf.image.convert_image_dtype(U, tf.float64).dtype == tf.float64


# ---- differences and quality ----

def test_image_gradients_and_total_variation():
    dy, dx = both_ways(tf.image.image_gradients, X)
    np.testing.assert_allclose(dy, np.concatenate([np.diff(X, axis=1), np.zeros((2, 1, 7, 3), np.float32)], 1), atol=1e-6)
    np.testing.assert_allclose(dx, np.concatenate([np.diff(X, axis=2), np.zeros((2, 6, 1, 3), np.float32)], 2), atol=1e-6)
    tv = both_ways(tf.image.total_variation, X)
    want = np.abs(np.diff(X, axis=1)).sum(axis=(1, 2, 3)) + np.abs(np.diff(X, axis=2)).sum(axis=(1, 2, 3))
    np.testing.assert_allclose(tv, want, rtol=1e-5)
    assert np.asarray(tf.image.total_variation(X[0])).shape == ()


def test_psnr_and_ssim_against_numpy():
    mse = ((U.astype(np.float64) - U2) ** 2).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(both_ways(lambda a, b: tf.image.psnr(a, b, max_val=1.0), U, U2), -10 * np.log10(mse), rtol=1e-5)
    got = both_ways(lambda a, b: tf.image.ssim(a, b, max_val=1.0), U, U2)
    np.testing.assert_allclose(got, ssim_reference(U, U2, 1.0), rtol=1e-5, atol=1e-5)
    got = tf.image.ssim(U, U2, 2.0, filter_size=5, filter_sigma=0.8, k1=0.02, k2=0.05)
    np.testing.assert_allclose(np.asarray(got), ssim_reference(U, U2, 2.0, 5, 0.8, 0.02, 0.05), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(tf.image.ssim(U, U, 1.0)), 1.0, rtol=1e-6)
    assert tuple(tf.image.ssim(U, U2, 1.0, return_index_map=True).shape) == (2, 4, 3)
    # ssim differentiates (a training loss): its gradient at identical images is zero.
    a = tf.constant(U)
    with tf.GradientTape() as tape:
        tape.watch(a)
        s = tf.reduce_sum(tf.image.ssim(a, U, 1.0))
    np.testing.assert_allclose(np.asarray(tape.gradient(s, a)), 0, atol=1e-5)


def ssim_terms(a, b, max_val, size, sigma, k1=0.01, k2=0.03):
    """Per-channel means over the window positions of SSIM and of its contrast-structure term."""
    g = gaussian(size, sigma)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    ma, mb = valid_filter(a, g), valid_filter(b, g)
    va, vb = valid_filter(a * a, g) - ma**2, valid_filter(b * b, g) - mb**2
    cov = valid_filter(a * b, g) - ma * mb
    cs = (2 * cov + c2) / (va + vb + c2)
    return ((2 * ma * mb + c1) / (ma**2 + mb**2 + c1) * cs).mean(axis=(-3, -2)), cs.mean(axis=(-3, -2))


def halve(x):
    """2x2 block means, an odd last row / column first repeated."""
    x = np.pad(x, [(0, 0), (0, x.shape[1] % 2), (0, x.shape[2] % 2), (0, 0)], mode="symmetric")
    return 0.25 * (x[:, 0::2, 0::2] + x[:, 1::2, 0::2] + x[:, 0::2, 1::2] + x[:, 1::2, 1::2])


def test_ssim_multiscale_against_numpy():
    a, b = U.astype(np.float64), U2.astype(np.float64)
    factors = (0.3, 0.5, 0.2)
    product = 1.0
    for k, p in enumerate(factors):
        if k:
            a, b = halve(a), halve(b)
        full, cs = ssim_terms(a, b, 1.0, 3, 0.8)
        product = product * np.maximum(full if k == len(factors) - 1 else cs, 0) ** p
    got = both_ways(lambda x, y: tf.image.ssim_multiscale(x, y, 1.0, power_factors=factors, filter_size=3,
                                                         filter_sigma=0.8), U, U2)
    np.testing.assert_allclose(got, product.mean(axis=-1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tf.image.ssim_multiscale(U, U, 1.0, factors, filter_size=3)), 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="filter_size"):
        tf.image.ssim_multiscale(U, U2, 1.0)  # 14 / 16 is too small for the default 11 at the fifth scale


def test_sobel_edges_with_reflected_borders():
    p = np.pad(X.astype(np.float64), [(0, 0), (1, 1), (1, 1), (0, 0)], mode="reflect")
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
    want = np.zeros(X.shape + (2,))
    for i in range(3):
        for j in range(3):
            window = p[:, i:i + 6, j:j + 7]
            want[..., 0] += ky[i, j] * window
            want[..., 1] += ky.T[i, j] * window
    np.testing.assert_allclose(both_ways(tf.image.sobel_edges, X), want, rtol=1e-5, atol=1e-5)


# ---- HSV, hue, saturation, gamma, the random adjustments, resize_with_pad ----

def hsv_reference(rgb):
    import colorsys
    flat = rgb.reshape(-1, 3).astype(np.float64)
    return np.array([colorsys.rgb_to_hsv(*p) for p in flat]).reshape(rgb.shape)


def rgb_reference(hsv):
    import colorsys
    flat = hsv.reshape(-1, 3).astype(np.float64)
    return np.array([colorsys.hsv_to_rgb(*p) for p in flat]).reshape(hsv.shape)


def test_hsv_conversions_against_colorsys():
    colors = np.concatenate([U[0, :4, :4], np.array([[[0, 0, 0], [0.5, 0.5, 0.5], [1, 0, 0], [0, 0, 1]]], np.float32)], 0)
    np.testing.assert_allclose(both_ways(tf.image.rgb_to_hsv, colors), hsv_reference(colors), atol=1e-6)
    np.testing.assert_allclose(both_ways(tf.image.hsv_to_rgb, U), rgb_reference(U), atol=1e-6)
    with pytest.raises(ValueError, match="3 channels"):
        tf.image.rgb_to_hsv(X[..., :2])


@pytest.mark.parametrize("delta", [-0.7, 0.05, 0.5])
def test_adjust_hue_rotates_the_hue(delta):
    hsv = hsv_reference(U)
    hsv[..., 0] = np.mod(hsv[..., 0] + delta, 1.0)
    got = both_ways(lambda a: tf.image.adjust_hue(a, delta), U)
    np.testing.assert_allclose(got, rgb_reference(hsv), atol=2e-6)


@pytest.mark.parametrize("factor", [0.0, 0.4, 1.7])
def test_adjust_saturation_scales_and_clips_saturation(factor):
    hsv = hsv_reference(U)
    hsv[..., 1] = np.clip(hsv[..., 1] * factor, 0, 1)
    got = both_ways(lambda a: tf.image.adjust_saturation(a, factor), U)
    np.testing.assert_allclose(got, rgb_reference(hsv), atol=2e-6)


def test_adjust_gamma_and_random_adjustments():
    np.testing.assert_allclose(both_ways(lambda a: tf.image.adjust_gamma(a, 2.2, 1.3), U), 1.3 * U.astype(np.float64) ** 2.2,
                               rtol=1e-5)
    assert tf.image.adjust_gamma(U.astype(np.float64), 0.5).dtype == tf.float64
    with pytest.raises(ValueError):
        tf.image.adjust_gamma(U, -0.5)
    # One delta for the whole batch, within [-max_delta, max_delta).
    delta = np.asarray(tf.image.random_brightness(U, 0.3)) - U
    assert abs(delta.flat[0]) <= 0.3
    np.testing.assert_allclose(delta, delta.flat[0], atol=1e-6)
    # random_contrast scales every image's deviations from its channel means by one factor.
    m = U.mean(axis=(1, 2), keepdims=True)
    ratio = (np.asarray(tf.image.random_contrast(U, 0.2, 0.6, seed=3)) - m) / (U - m)
    assert 0.2 - 1e-3 <= np.median(ratio) <= 0.6 + 1e-3
    tf.random.set_seed(9)
    first = np.asarray(tf.image.random_hue(U, 0.2, seed=1))
    tf.random.set_seed(9)
    np.testing.assert_array_equal(np.asarray(tf.image.random_hue(U, 0.2, seed=1)), first)
    assert tuple(tf.image.random_saturation(U, 0.5, 1.5).shape) == U.shape
    with pytest.raises(ValueError, match="upper must be > lower"):
        tf.image.random_contrast(U, 0.5, 0.2)
    with pytest.raises(ValueError, match="max_delta"):
        tf.image.random_hue(U, 0.7)
    with pytest.raises(ValueError, match="max_delta"):
        tf.image.random_brightness(U, -0.1)


def test_resize_with_pad_fits_then_centers():
    # 6x7 into 10x10: ratio max(7/10, 6/10) -> 8x10 (floor of 8.57), padded floor(0.71) = 0 above.
    got = both_ways(lambda a: tf.image.resize_with_pad(a, 10, 10), X)
    resized = np.asarray(tf.image.resize(X, [8, 10]))
    want = np.zeros((2, 10, 10, 3), np.float32)
    want[:, 0:8] = resized
    np.testing.assert_allclose(got, want, atol=1e-6)
    # 6x7 into 20x7: ratio 1 -> 6x7 centered with 7 rows above.
    got = np.asarray(tf.image.resize_with_pad(X, 20, 7, method="nearest"))
    np.testing.assert_array_equal(got[:, 7:13], X)
    assert not got[:, :7].any() and not got[:, 13:].any()


# ---- tracing with a dynamic batch, saving ----

def test_dynamic_batch_traces_and_saved_layers_reload(tmp_path):
    f = tf.function(lambda a: tf.image.per_image_standardization(tf.image.resize(tf.image.random_flip_up_down(a), [5, 4])),
                    input_signature=[tf.TensorSpec([None, 6, 7, 3], tf.float32)])
    assert tuple(f(X).shape) == (2, 5, 4, 3)
    assert tuple(f(np.concatenate([X, X])).shape) == (4, 5, 4, 3)

    class Augment(tf.keras.layers.Layer):
        def call(self, x):
            y = tf.image.resize(tf.image.flip_left_right(x), [8, 9], method="bicubic")
            return tf.image.adjust_contrast(tf.image.central_crop(y, 0.5), 2.0) + tf.image.rgb_to_grayscale(y)[:, 2:6, 2:7]

    layer = Augment()
    want = np.asarray(layer(X))
    tf.saved_model.save(layer, str(tmp_path / "augment"))
    loaded = tf.saved_model.load(str(tmp_path / "augment"))
    np.testing.assert_array_equal(np.asarray(loaded(X)), want)
    np.testing.assert_array_equal(np.asarray(loaded(np.concatenate([X, X])))[2:], want)


def test_random_crop_is_a_window_and_differentiates():
    x = np.arange(5 * 6 * 2, dtype=np.float32).reshape(5, 6, 2)
    for _ in range(5):
        got = np.asarray(tf.image.random_crop(x, [3, 4, 2]))
        y0, x0 = int(got[0, 0, 0]) // 12, int(got[0, 0, 0]) // 2 % 6
        np.testing.assert_array_equal(got, x[y0:y0 + 3, x0:x0 + 4])
    v = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(v)
        s = tf.reduce_sum(tf.image.random_crop(v, [3, 4, 2], seed=1))
    assert float(tf.reduce_sum(tape.gradient(s, v))) == 24.0
    with pytest.raises(ValueError, match="value.shape >= size"):
        tf.image.random_crop(x, [6, 4, 2])


def patches_reference(x, k, s, r, padding):
    """Window by window: the taps of each window, row by row, flattened with their channels."""
    n, h, w, c = x.shape
    reach = [k[i] + (k[i] - 1) * (r[i] - 1) for i in range(2)]
    if padding == "VALID":
        out = [(d - reach[i]) // s[i] + 1 for i, d in enumerate((h, w))]
        before = [0, 0]
    else:
        out = [-(-d // s[i]) for i, d in enumerate((h, w))]
        before = [max((out[i] - 1) * s[i] + reach[i] - d, 0) // 2 for i, d in enumerate((h, w))]
    res = np.zeros((n, out[0], out[1], k[0] * k[1] * c), x.dtype)
    for oy in range(out[0]):
        for ox in range(out[1]):
            taps = []
            for i in range(k[0]):
                for j in range(k[1]):
                    y, xx = oy * s[0] + i * r[0] - before[0], ox * s[1] + j * r[1] - before[1]
                    inside = 0 <= y < h and 0 <= xx < w
                    taps.append(x[:, y, xx] if inside else np.zeros((n, c), x.dtype))
            res[:, oy, ox] = np.concatenate(taps, axis=-1)
    return res


@pytest.mark.parametrize("k,s,r,padding", [
    ((3, 3), (1, 1), (1, 1), "VALID"), ((3, 2), (2, 3), (1, 1), "SAME"), ((2, 3), (2, 3), (1, 1), "VALID"),
    ((3, 3), (2, 2), (2, 1), "VALID"), ((4, 3), (3, 2), (2, 2), "SAME"),
])
def test_extract_patches_against_numpy(k, s, r, padding):
    got = both_ways(lambda a: tf.image.extract_patches(a, [1, *k, 1], [1, *s, 1], [1, *r, 1], padding), X)
    np.testing.assert_array_equal(got, patches_reference(X, k, s, r, padding))


def test_extract_patches_gradient_counts_windows_and_bad_arguments():
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        total = tf.reduce_sum(tf.image.extract_patches(x, [1, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID"))
    # Pixel (y, x) lies in as many 3x3 windows as fit around it.
    per_axis = lambda n: np.array([min(i, n - 3) - max(i - 2, 0) + 1 for i in range(n)])
    want = np.outer(per_axis(6), per_axis(7))[None, :, :, None] * np.ones((2, 1, 1, 3))
    np.testing.assert_array_equal(np.asarray(tape.gradient(total, x)), want)
    with pytest.raises(ValueError, match="sizes"):
        tf.image.extract_patches(X, [2, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="padding"):
        tf.image.extract_patches(X, [1, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL")


def test_stateless_forms_repeat_for_a_seed_whatever_else_drew():
    x = RNG.uniform(0, 1, (16, 4, 5, 3)).astype(np.float32)
    calls = {
        "flip_left_right": lambda s: tf.image.stateless_random_flip_left_right(x, s),
        "flip_up_down": lambda s: tf.image.stateless_random_flip_up_down(x, seed=s),
        "crop": lambda s: tf.image.stateless_random_crop(x, [16, 2, 3, 3], seed=s),
        "brightness": lambda s: tf.image.stateless_random_brightness(x, 0.3, s),
        "contrast": lambda s: tf.image.stateless_random_contrast(x, 0.2, 0.8, s),
        "saturation": lambda s: tf.image.stateless_random_saturation(x, 0.2, 0.8, s),
        "hue": lambda s: tf.image.stateless_random_hue(x, 0.3, s),
    }
    for name, call in calls.items():
        first = np.asarray(call((1, 2)))
        tf.random.uniform([3])  # another draw in between changes nothing
        np.testing.assert_array_equal(np.asarray(call(tf.constant([1, 2]))), first, err_msg=name)
        others = [np.asarray(call((1, k))) for k in range(3, 8)]
        assert any(not np.array_equal(o, first) for o in others), name
    flipped = np.asarray(tf.image.stateless_random_flip_left_right(x, (4, 5)))
    assert all(np.array_equal(f, a) or np.array_equal(f, a[:, ::-1]) for f, a in zip(flipped, x))
    with pytest.raises(ValueError, match="seed"):
        tf.image.stateless_random_brightness(x, 0.3, seed=(1, 2, 3))


def crop_and_resize_reference(img, boxes, box_indices, crop, method, extrapolation):
    n, h, w, c = img.shape
    out = np.full((len(boxes), crop[0], crop[1], c), extrapolation, np.float64)

    def positions(lo, hi, size, count):  # in float32, as TF's kernel: a position on .5 rounds alike
        f = np.float32
        if count == 1:
            return [f(0.5) * (lo + hi) * f(size - 1)]
        step = (hi - lo) * f(size - 1) / f(count - 1)
        return [lo * f(size - 1) + f(i) * step for i in range(count)]

    for k, ((y1, x1, y2, x2), b) in enumerate(zip(boxes, box_indices)):
        for i, y in enumerate(positions(y1, y2, h, crop[0])):
            for j, x in enumerate(positions(x1, x2, w, crop[1])):
                if not (0 <= y <= h - 1 and 0 <= x <= w - 1):
                    continue
                if method == "nearest":
                    out[k, i, j] = img[b, int(np.floor(y)) + (y % 1 >= 0.5), int(np.floor(x)) + (x % 1 >= 0.5)]
                    continue
                y0, x0, fy, fx = int(np.floor(y)), int(np.floor(x)), y - np.floor(y), x - np.floor(x)
                y1i, x1i = int(np.ceil(y)), int(np.ceil(x))
                top = img[b, y0, x0] * (1 - fx) + img[b, y0, x1i] * fx
                bottom = img[b, y1i, x0] * (1 - fx) + img[b, y1i, x1i] * fx
                out[k, i, j] = top * (1 - fy) + bottom * fy
    return out


BOXES = np.array([[0.1, 0.2, 0.8, 0.9], [0.0, 0.0, 1.0, 1.0], [-0.2, 0.3, 0.6, 1.3], [0.7, 0.9, 0.2, 0.1]], np.float32)


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("crop", [(5, 4), (1, 1), (3, 1)])
def test_crop_and_resize_against_numpy(method, crop):
    indices = np.array([0, 1, 1, 0], np.int32)
    got = both_ways(lambda a, b: tf.image.crop_and_resize(a, b, indices, crop, method=method, extrapolation_value=-2.0),
                    X, BOXES)
    np.testing.assert_allclose(got, crop_and_resize_reference(X, BOXES, indices, crop, method, -2.0), rtol=1e-5, atol=1e-5)


def test_crop_and_resize_differentiates_and_checks_shapes():
    x, b = tf.constant(X), tf.constant(BOXES[:2])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        tape.watch(b)
        total = tf.reduce_sum(tf.image.crop_and_resize(x, b, [1, 0], [4, 6]))
    # Each of the 2 * 4 * 6 * 3 samples (all inside) spreads weight 1 over its neighbours.
    assert abs(float(tf.reduce_sum(tape.gradient(total, x))) - 2 * 4 * 6 * 3) < 1e-3
    assert np.isfinite(np.asarray(tape.gradient(total, b))).all()
    with pytest.raises(ValueError, match="boxes"):
        tf.image.crop_and_resize(X, BOXES[:, :3], [0, 0, 0, 0], [2, 2])
    with pytest.raises(ValueError, match="crop_size"):
        tf.image.crop_and_resize(X, BOXES, [0, 0, 0, 0], [0, 2])
