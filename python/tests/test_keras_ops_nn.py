"""ef.keras.ops.nn and ef.keras.ops.image against NumPy references (Keras 3's formulas and
conventions: channels_last kernels (spatial..., in, out), NumPy-style broadcasting), eager and traced."""
import math

import numpy as np
import pytest

import eagerflow as ef

ops = ef.keras.ops
nn = ops.nn
rng = np.random.default_rng(1)
X = rng.normal(size=(3, 5)).astype("float32")


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _sparsemax(x):
    out = np.zeros_like(x)
    for r, row in enumerate(x):
        z = np.sort(row)[::-1]
        k = np.arange(1, len(z) + 1)
        cs = np.cumsum(z)
        kz = k[1 + k * z > cs].max()
        tau = (cs[kz - 1] - 1) / kz
        out[r] = np.maximum(row - tau, 0)
    return out


ACTIVATIONS = [
    ("relu", {}, lambda x: np.maximum(x, 0)),
    ("relu6", {}, lambda x: np.clip(x, 0, 6)),
    ("sigmoid", {}, _sigmoid),
    ("softplus", {}, lambda x: np.log1p(np.exp(x))),
    ("softsign", {}, lambda x: x / (1 + np.abs(x))),
    ("silu", {}, lambda x: x * _sigmoid(x)),
    ("swish", {}, lambda x: x * _sigmoid(x)),
    ("log_sigmoid", {}, lambda x: np.log(_sigmoid(x))),
    ("leaky_relu", {"negative_slope": 0.1}, lambda x: np.where(x > 0, x, 0.1 * x)),
    ("hard_sigmoid", {}, lambda x: np.clip(x + 3, 0, 6) / 6),
    ("hard_silu", {}, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hard_swish", {}, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hard_tanh", {}, lambda x: np.clip(x, -1, 1)),
    ("elu", {"alpha": 0.5}, lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    ("selu", {}, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("celu", {"alpha": 2.0}, lambda x: np.maximum(x, 0) + 2.0 * np.expm1(np.minimum(x, 0) / 2.0)),
    ("gelu", {}, lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    ("gelu", {"approximate": False}, lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    ("soft_shrink", {"threshold": 0.5}, lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0))),
    ("hard_shrink", {}, lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    ("tanh_shrink", {}, lambda x: x - np.tanh(x)),
    ("sparse_plus", {}, lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4))),
    ("sparse_sigmoid", {}, lambda x: np.where(x <= -1, 0, np.where(x >= 1, 1, 0.5 * (x + 1)))),
    ("squareplus", {"b": 4}, lambda x: (x + np.sqrt(x * x + 4)) / 2),
    ("threshold", {"threshold": 0.2, "default_value": -3.0}, lambda x: np.where(x > 0.2, x, -3.0)),
    ("softmax", {}, _softmax),
    ("softmax", {"axis": 0}, lambda x: _softmax(x, 0)),
    ("log_softmax", {}, lambda x: np.log(_softmax(x))),
    ("glu", {}, None),
    ("sparsemax", {}, _sparsemax),
]


@pytest.mark.parametrize("name,kwargs,ref", ACTIVATIONS, ids=[f"{a[0]}{'_' + '_'.join(a[1]) if a[1] else ''}" for a in ACTIVATIONS])
def test_activation(name, kwargs, ref):
    x = X if name != "glu" else rng.normal(size=(3, 6)).astype("float32")
    if ref is None:
        ref = lambda v: v[:, :3] * _sigmoid(v[:, 3:])  # noqa: E731 - glu
    fn = getattr(nn, name)
    want = ref(x.astype("float64")).astype("float32")
    np.testing.assert_allclose(fn(x, **kwargs).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ef.function(lambda v: fn(v, **kwargs))(ef.constant(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    assert getattr(ops, name) is fn  # keras.ops.<name> is keras.ops.nn.<name>
    assert ops.dtype(fn(x.astype("float16"), **kwargs)) == "float16"
    assert ops.dtype(fn(np.arange(8).reshape(2, 4) - 2, **kwargs)) in ("float32", "int64")


def _conv_ref(x, k, stride, padding, dilation=1):
    """Direct N-D cross-correlation, NHWC / (spatial..., in, out), as Keras' conv."""
    n = x.ndim - 2
    ke = [(k.shape[i] - 1) * dilation + 1 for i in range(n)]
    if padding == "same":
        outs = [-(-x.shape[1 + i] // stride) for i in range(n)]
        pads = [max((outs[i] - 1) * stride + ke[i] - x.shape[1 + i], 0) for i in range(n)]
        x = np.pad(x, [(0, 0)] + [(p // 2, p - p // 2) for p in pads] + [(0, 0)])
    outs = [(x.shape[1 + i] - ke[i]) // stride + 1 for i in range(n)]
    out = np.zeros([x.shape[0]] + outs + [k.shape[-1]], "float64")
    for idx in np.ndindex(*outs):
        sl = tuple(slice(idx[i] * stride, idx[i] * stride + ke[i], dilation) for i in range(n))
        patch = x[(slice(None),) + sl]
        out[(slice(None),) + idx] = np.tensordot(patch, k, axes=(list(range(1, n + 2)), list(range(n + 1))))
    return out.astype("float32")


@pytest.mark.parametrize("padding", ["valid", "same"])
@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (1, 2)])
def test_conv_2d_and_1d(padding, stride, dilation):
    x = rng.normal(size=(2, 7, 6, 3)).astype("float32")
    k = rng.normal(size=(3, 2, 3, 4)).astype("float32")
    out = nn.conv(x, k, strides=stride, padding=padding, dilation_rate=dilation)
    np.testing.assert_allclose(out.numpy(), _conv_ref(x, k, stride, padding, dilation), rtol=1e-4, atol=1e-4)
    cf = nn.conv(np.transpose(x, (0, 3, 1, 2)), k, strides=stride, padding=padding, dilation_rate=dilation,
                 data_format="channels_first")
    np.testing.assert_allclose(np.transpose(cf.numpy(), (0, 2, 3, 1)), out.numpy(), rtol=1e-5, atol=1e-5)
    x1, k1 = x[:, :, 0], rng.normal(size=(3, 3, 2)).astype("float32")
    np.testing.assert_allclose(nn.conv(x1, k1, strides=stride, padding=padding, dilation_rate=dilation).numpy(),
                               _conv_ref(x1, k1, stride, padding, dilation), rtol=1e-4, atol=1e-4)


def test_depthwise_separable_and_grouped_conv():
    x = rng.normal(size=(2, 6, 6, 3)).astype("float32")
    dk = rng.normal(size=(3, 3, 3, 2)).astype("float32")
    want = np.concatenate([_conv_ref(x[..., c:c + 1], dk[:, :, c:c + 1, :], 1, "same") for c in range(3)], -1)
    # outputs channel-major, as Keras (TF): (c0m0, c0m1, c1m0, ...)
    np.testing.assert_allclose(nn.depthwise_conv(x, dk, padding="same").numpy(), want, rtol=1e-4, atol=1e-4)
    pk = rng.normal(size=(1, 1, 6, 4)).astype("float32")
    np.testing.assert_allclose(nn.separable_conv(x, dk, pk, padding="same").numpy(), _conv_ref(want, pk, 1, "valid"),
                               rtol=1e-4, atol=1e-4)
    gx = rng.normal(size=(1, 5, 5, 4)).astype("float32")
    gk = rng.normal(size=(3, 3, 2, 6)).astype("float32")  # 2 groups of 2 input channels
    want = np.concatenate([_conv_ref(gx[..., :2], gk[..., :3], 1, "valid"), _conv_ref(gx[..., 2:], gk[..., 3:], 1, "valid")], -1)
    np.testing.assert_allclose(nn.conv(gx, gk).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_conv_transpose_is_the_adjoint_of_conv(padding):
    x = rng.normal(size=(1, 4, 5, 3)).astype("float32")
    k = rng.normal(size=(3, 3, 2, 3)).astype("float32")  # (h, w, out, in) as Keras' transposed kernels
    y = nn.conv_transpose(x, k, strides=2, padding=padding)
    assert y.shape == ((1, 8, 10, 2) if padding == "same" else (1, 9, 11, 2))
    # <conv_transpose(x), z> == <x, conv(z)> for the same kernel and strides
    z = rng.normal(size=y.shape).astype("float32")
    cz = nn.conv(z, k, strides=2, padding=padding).numpy()
    np.testing.assert_allclose(np.sum(y.numpy() * z), np.sum(x * cz), rtol=1e-4)


def test_pools():
    x = rng.normal(size=(2, 6, 4, 3)).astype("float32")
    want = x.reshape(2, 3, 2, 2, 2, 3).max((2, 4))
    np.testing.assert_allclose(nn.max_pool(x, 2).numpy(), want)
    np.testing.assert_allclose(ops.max_pool(x, 2).numpy(), want)
    np.testing.assert_allclose(nn.average_pool(x, (2, 2)).numpy(), x.reshape(2, 3, 2, 2, 2, 3).mean((2, 4)), rtol=1e-5,
                               atol=1e-6)
    assert nn.average_pool(x, 3, strides=1, padding="same").shape == (2, 6, 4, 3)
    np.testing.assert_allclose(nn.adaptive_average_pool(x, (3, 2)).numpy(), x.reshape(2, 3, 2, 2, 2, 3).mean((2, 4)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nn.adaptive_max_pool(x, (2, 1)).numpy(), x.reshape(2, 2, 3, 1, 4, 3).max((2, 4)))


def test_normalizations_and_moments():
    x = rng.normal(size=(4, 3, 5)).astype("float32")
    m, v = nn.moments(x, (0, 1))
    np.testing.assert_allclose(m.numpy(), x.mean((0, 1)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(v.numpy(), x.var((0, 1)), rtol=1e-4, atol=1e-6)
    g, b = np.full(5, 2.0, "float32"), np.ones(5, "float32")
    ln = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-7) * g + b
    np.testing.assert_allclose(nn.layer_normalization(x, g, b).numpy(), ln, rtol=1e-4, atol=1e-5)
    rms = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-7) * g
    np.testing.assert_allclose(nn.rms_normalization(x, g).numpy(), rms, rtol=1e-4, atol=1e-5)
    mean, var = x.mean((0, 1)), x.var((0, 1))
    bn = (x - mean) / np.sqrt(var + 1e-3) * g + b
    np.testing.assert_allclose(nn.batch_normalization(x, mean, var, axis=-1, offset=b, scale=g).numpy(), bn, rtol=1e-4)
    np.testing.assert_allclose(nn.normalize(x).numpy(), x / np.linalg.norm(x, axis=-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(nn.normalize(x, axis=0, order=1).numpy(), x / np.abs(x).sum(0, keepdims=True), rtol=1e-5)


def test_one_hot_multi_hot():
    idx = np.array([[0, 2], [1, 3]])
    np.testing.assert_array_equal(nn.one_hot(idx, 4).numpy(), np.eye(4, dtype="float32")[idx])
    oh = nn.one_hot(idx, 4, axis=1, dtype="int32")
    assert ops.dtype(oh) == "int32" and oh.shape == (2, 4, 2)
    np.testing.assert_array_equal(oh.numpy(), np.moveaxis(np.eye(4, dtype="int32")[idx], -1, 1))
    np.testing.assert_array_equal(nn.multi_hot(idx, 4).numpy(), [[1, 0, 1, 0], [0, 1, 0, 1]])
    np.testing.assert_array_equal(nn.multi_hot(np.array([0, 3]), 5).numpy(), [1, 0, 0, 1, 0])


def test_losses():
    p = rng.uniform(0.05, 0.95, (3, 4)).astype("float32")
    t = (rng.uniform(size=(3, 4)) > 0.5).astype("float32")
    want = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    np.testing.assert_allclose(nn.binary_crossentropy(t, p).numpy(), want, rtol=1e-5)
    logits = rng.normal(size=(3, 4)).astype("float32")
    np.testing.assert_allclose(nn.binary_crossentropy(t, logits, from_logits=True).numpy(),
                               -(t * np.log(_sigmoid(logits)) + (1 - t) * np.log(1 - _sigmoid(logits))), rtol=1e-5)
    labels = np.array([0, 3, 1])
    want = -np.log(_softmax(logits))[np.arange(3), labels]
    np.testing.assert_allclose(nn.sparse_categorical_crossentropy(labels, logits, from_logits=True).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(nn.categorical_crossentropy(np.eye(4, dtype="float32")[labels], _softmax(logits)).numpy(),
                               want, rtol=1e-5)
    with pytest.raises(ValueError):
        nn.binary_crossentropy(t, p[:, :2])


def _attention_ref(q, k, v, mask=None, causal=False, scale=None):
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    logits = np.einsum("btnh,bsnh->bnts", q, k) * s
    if causal:
        logits = np.where(np.tril(np.ones(logits.shape[-2:], bool)), logits, -np.inf)
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    return np.einsum("bnts,bsnh->btnh", _softmax(logits), v)


def test_dot_product_attention():
    q = rng.normal(size=(2, 5, 4, 8)).astype("float32")
    k = rng.normal(size=(2, 5, 4, 8)).astype("float32")
    v = rng.normal(size=(2, 5, 4, 8)).astype("float32")
    np.testing.assert_allclose(nn.dot_product_attention(q, k, v).numpy(), _attention_ref(q, k, v), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(nn.dot_product_attention(q, k, v, is_causal=True, scale=0.2).numpy(),
                               _attention_ref(q, k, v, causal=True, scale=0.2), rtol=1e-4, atol=1e-5)
    mask = rng.integers(0, 2, (2, 4, 5, 5)).astype(bool)
    mask[..., 0] = True
    np.testing.assert_allclose(nn.dot_product_attention(q, k, v, mask=mask).numpy(), _attention_ref(q, k, v, mask=mask),
                               rtol=1e-4, atol=1e-5)
    # grouped-query attention: 2 key/value heads serve 4 query heads
    kg, vg = k[:, :, :2], v[:, :, :2]
    np.testing.assert_allclose(nn.dot_product_attention(q, kg, vg).numpy(),
                               _attention_ref(q, np.repeat(kg, 2, 2), np.repeat(vg, 2, 2)), rtol=1e-4, atol=1e-5)


def test_space_depth_fold_unfold_psnr():
    x = rng.normal(size=(1, 4, 6, 2)).astype("float32")
    d = nn.space_to_depth(x, 2)
    assert d.shape == (1, 2, 3, 8)
    np.testing.assert_array_equal(nn.depth_to_space(d, 2).numpy(), x)
    img = rng.normal(size=(2, 3, 5, 6)).astype("float32")
    cols = nn.unfold(img, (2, 3), stride=1)
    assert cols.shape == (2, 3 * 6, 4 * 4)
    # column j of the first patch is the image window at (0, 0)
    np.testing.assert_allclose(cols.numpy()[0, :, 0], img[0, :, :2, :3].reshape(-1))
    # fold sums the patches back: with non-overlapping windows it inverts unfold
    np.testing.assert_allclose(nn.fold(nn.unfold(img[:, :, :4, :6], 2, stride=2), (4, 6), 2, stride=2).numpy(),
                               img[:, :, :4, :6], rtol=1e-6)
    a = rng.uniform(size=(4, 4)).astype("float32")
    b = np.clip(a + 0.1, 0, 1)
    np.testing.assert_allclose(float(nn.psnr(a, b, 1.0)), 10 * np.log10(1 / np.mean((a - b) ** 2)), rtol=1e-5)


def test_ctc_loss_and_decode():
    logits = rng.normal(size=(2, 6, 5)).astype("float32")
    loss = nn.ctc_loss(np.array([[1, 2, 0], [3, 3, 1]]), logits, np.array([2, 3]), np.array([6, 5]))
    assert loss.shape == (2,) and np.all(np.isfinite(loss.numpy())) and np.all(loss.numpy() > 0)
    decoded, _ = nn.ctc_decode(logits, np.array([6, 5]), mask_index=0)
    best = logits.argmax(-1)
    for b, length in enumerate([6, 5]):
        path = [c for i, c in enumerate(best[b, :length]) if c != 0 and (i == 0 or c != best[b, i - 1])]
        got = [c for c in decoded.numpy()[0, b] if c != -1]
        assert got == path


IMG = rng.uniform(size=(2, 8, 10, 3)).astype("float32")


def test_image_color_and_geometry():
    im = ops.image
    np.testing.assert_allclose(im.rgb_to_grayscale(IMG).numpy(), (IMG @ np.array([0.2989, 0.5870, 0.1140], "float32"))[..., None],
                               rtol=1e-5)
    np.testing.assert_allclose(im.hsv_to_rgb(im.rgb_to_hsv(IMG)).numpy(), IMG, atol=1e-5)
    cf = im.rgb_to_grayscale(np.transpose(IMG, (0, 3, 1, 2)), data_format="channels_first")
    np.testing.assert_allclose(np.transpose(cf.numpy(), (0, 2, 3, 1)), im.rgb_to_grayscale(IMG).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(im.pad_images(IMG, 1, 2, target_height=12, target_width=14).numpy(),
                                  np.pad(IMG, ((0, 0), (1, 3), (2, 2), (0, 0))))
    np.testing.assert_array_equal(im.crop_images(IMG, 1, 2, 3, 4).numpy(), IMG[:, 1:5, 2:6])
    with pytest.raises(ValueError):
        im.pad_images(IMG, 1, 2)
    # nearest resize by an integer factor repeats pixels
    np.testing.assert_array_equal(im.resize(IMG, (16, 20), interpolation="nearest").numpy(),
                                  IMG.repeat(2, 1).repeat(2, 2))
    np.testing.assert_allclose(im.resize(IMG, (4, 5), interpolation="area").numpy(),
                               IMG.reshape(2, 4, 2, 5, 2, 3).mean((2, 4)), rtol=1e-5)
    assert im.resize(IMG, (6, 6), crop_to_aspect_ratio=True).shape == (2, 6, 6, 3)
    assert im.resize(IMG[0], (4, 4)).shape == (4, 4, 3)
    p = im.extract_patches(IMG, 2)
    assert p.shape == (2, 4, 5, 12)
    np.testing.assert_array_equal(p.numpy()[0, 1, 2], IMG[0, 2:4, 4:6].reshape(-1))
    e = im.sobel_edges(IMG)
    assert e.shape == (2, 8, 10, 3, 2)
    blur = im.gaussian_blur(np.ones((1, 5, 5, 1), "float32"))
    np.testing.assert_allclose(blur.numpy()[0, 2, 2, 0], 1.0, rtol=1e-6)  # a normalized kernel keeps a constant
    same = im.ssim(IMG, IMG, filter_size=3)
    assert same.shape == (2,) and ops.dtype(same) == "float32"
    np.testing.assert_allclose(same.numpy(), 1.0, atol=1e-5)
    assert np.all(im.ssim(IMG, IMG * 0.5, filter_size=3).numpy() < 0.99)


def test_affine_transform():
    im = ops.image
    identity = np.array([1, 0, 0, 0, 1, 0, 0, 0], "float32")
    np.testing.assert_allclose(im.affine_transform(IMG, identity).numpy(), IMG, atol=1e-6)
    shift = np.array([1, 0, 2, 0, 1, 1, 0, 0], "float32")  # output (y, x) reads input (y + 1, x + 2)
    out = im.affine_transform(IMG, shift, interpolation="nearest", fill_value=-1.0).numpy()
    np.testing.assert_array_equal(out[:, :7, :8], IMG[:, 1:, 2:])
    assert np.all(out[:, 7] == -1.0) and np.all(out[:, :, 8:] == -1.0)


def test_perspective_transform():
    im = ops.image
    corners = np.array([[0, 0], [9, 0], [0, 7], [9, 7]], "float32")
    np.testing.assert_allclose(im.perspective_transform(IMG, corners, corners).numpy(), IMG, atol=1e-5)
    # end points shifted by (-2, -1): output (x, y) reads input (x + 2, y + 1), a translation
    out = im.perspective_transform(IMG, corners, corners - [2, 1], interpolation="nearest", fill_value=-1.0).numpy()
    np.testing.assert_allclose(out[:, :7, :8], IMG[:, 1:, 2:], atol=1e-6)
    assert np.all(out[:, 7] == -1.0)
    with pytest.raises(ValueError):
        im.perspective_transform(IMG, corners[:3], corners[:3])


def test_extract_patches_3d():
    vol = rng.normal(size=(2, 4, 6, 6, 2)).astype("float32")
    p = ops.image.extract_patches_3d(vol, (2, 3, 2))
    assert p.shape == (2, 2, 2, 3, 24)
    np.testing.assert_array_equal(p.numpy()[1, 1, 0, 2], vol[1, 2:4, 0:3, 4:6].reshape(-1))
    assert ops.image.extract_patches_3d(vol[0], 2, strides=1, padding="same").shape == (4, 6, 6, 16)


def _map_coordinates_ref(a, coords, order, mode, cval):
    def fix(i, n):
        if mode == "constant":
            return min(max(i, 0), n - 1), 0 <= i < n
        if mode == "nearest":
            return min(max(i, 0), n - 1), True
        if mode == "wrap":
            return i % n, True
        if mode == "reflect":
            m = i % (2 * n)  # SciPy's reflect: (d c b a | a b c d | d c b a)
            return (m if m < n else 2 * n - 1 - m), True
        m = i % (2 * n - 2)  # SciPy's mirror: (d c b | a b c d | c b a)
        return (m if m < n else 2 * n - 2 - m), True
    out = np.zeros(coords.shape[1:], "float64")
    for pos in np.ndindex(*coords.shape[1:]):
        c = coords[(slice(None),) + pos]
        if order == 0:
            nodes = [[(int(np.round(v)), 1.0)] for v in c]
        else:
            nodes = [[(int(np.floor(v)), 1 - (v - np.floor(v))), (int(np.floor(v)) + 1, v - np.floor(v))] for v in c]
        total = 0.0
        for combo in np.ndindex(*[len(nd) for nd in nodes]):
            idx, ok, w = [], True, 1.0
            for d, k in enumerate(combo):
                i, wk = nodes[d][k]
                j, valid = fix(i, a.shape[d])
                idx.append(j)
                ok &= valid
                w *= wk
            total += w * (a[tuple(idx)] if ok else cval)
        out[pos] = total
    return out


@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates(mode, order):
    a = rng.normal(size=(5, 6)).astype("float32")
    coords = rng.uniform(-2, 7, size=(2, 3, 4)).astype("float32")
    coords[:, 0, 0] = [-1.0, 6.0]  # just outside: the folds differ between modes here
    got = ops.image.map_coordinates(a, coords, order, fill_mode=mode, fill_value=-1.0)
    np.testing.assert_allclose(got.numpy(), _map_coordinates_ref(a, coords, order, mode, -1.0), rtol=1e-5, atol=1e-5)
    traced = ef.function(lambda x, c: ops.image.map_coordinates(x, c, order, fill_mode=mode, fill_value=-1.0))
    np.testing.assert_allclose(traced(ef.constant(a), ef.constant(coords)).numpy(), got.numpy(), rtol=1e-6)


def test_elastic_transform():
    im = ops.image
    img = rng.uniform(size=(2, 12, 14, 3)).astype("float32")
    np.testing.assert_allclose(im.elastic_transform(img, alpha=0.0, seed=1).numpy(), img, atol=1e-6)
    a = im.elastic_transform(img, seed=4).numpy()
    np.testing.assert_array_equal(im.elastic_transform(img, seed=4).numpy(), a)  # an int seed repeats
    assert a.shape == img.shape and not np.allclose(a, img)
    assert a.min() >= img.min() - 1e-6 and a.max() <= img.max() + 1e-6  # bilinear resampling stays in range
    cf = im.elastic_transform(np.transpose(img, (0, 3, 1, 2)), seed=4, data_format="channels_first").numpy()
    np.testing.assert_allclose(np.transpose(cf, (0, 2, 3, 1)), a, rtol=1e-5, atol=1e-6)
    g = ef.keras.random.SeedGenerator(2)
    assert not np.array_equal(im.elastic_transform(img, seed=g).numpy(), im.elastic_transform(img, seed=g).numpy())
    with pytest.raises(ValueError):
        im.elastic_transform(img, fill_mode="bad")


def test_resize_integer_images_saturate():
    u = rng.integers(0, 255, (1, 8, 10, 3)).astype("uint8")
    u[0, 0, 0] = 255
    u[0, 0, 1] = 0
    out = ops.image.resize(u, (16, 20), interpolation="bicubic")
    assert ops.dtype(out) == "uint8"
    f = ops.image.resize(u.astype("float32"), (16, 20), interpolation="bicubic").numpy()
    np.testing.assert_array_equal(out.numpy(), np.clip(np.round(f), 0, 255).astype("uint8"))  # clipped, never wrapped
