"""tf.nn's convolutions and pools with TF's conventions (issue 31): strides and ksize forms,
"SAME"/"VALID", NCHW, 1-D forms, depthwise/separable, transposed convolutions, space_to_depth,
lrn, in_top_k and the moments helpers; against NumPy loops, eager == traced."""
import numpy as np
import pytest

import eagerflow as tf

rng = np.random.default_rng(5)
X = rng.normal(size=(2, 7, 6, 3)).astype(np.float32)
W = rng.normal(size=(3, 2, 3, 4)).astype(np.float32)


def np_conv2d(x, w, stride=(1, 1), padding="VALID", dilation=(1, 1)):
    kh, kw = (w.shape[0] - 1) * dilation[0] + 1, (w.shape[1] - 1) * dilation[1] + 1
    n, h, wd, _ = x.shape
    if padding == "SAME":
        oh, ow = -(-h // stride[0]), -(-wd // stride[1])
        ph, pw = max((oh - 1) * stride[0] + kh - h, 0), max((ow - 1) * stride[1] + kw - wd, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    oh, ow = (x.shape[1] - kh) // stride[0] + 1, (x.shape[2] - kw) // stride[1] + 1
    out = np.zeros((n, oh, ow, w.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride[0]:i * stride[0] + kh:dilation[0], j * stride[1]:j * stride[1] + kw:dilation[1], :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def np_pool(x, k, s, padding, fn):
    n, h, w, c = x.shape
    if padding == "SAME":
        oh, ow = -(-h // s[0]), -(-w // s[1])
        ph, pw = max((oh - 1) * s[0] + k[0] - h, 0), max((ow - 1) * s[1] + k[1] - w, 0)
        pad = [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)]
        x = np.pad(x, pad, constant_values=np.nan)
    oh, ow = (x.shape[1] - k[0]) // s[0] + 1, (x.shape[2] - k[1]) // s[1] + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            out[:, i, j, :] = fn(x[:, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1], :], axis=(1, 2))
    return out


@pytest.mark.parametrize("strides,padding,dilations", [(1, "VALID", None), ([1, 2, 2, 1], "SAME", None), ([2, 1], "same", None),
                                                       (1, "SAME", [1, 2, 1, 1])])
def test_conv2d_as_numpy(strides, padding, dilations):
    f = lambda x, w: tf.nn.conv2d(x, w, strides, padding, dilations=dilations)  # noqa: E731
    got = f(X, W).numpy()
    np.testing.assert_array_equal(tf.function(f)(X, W).numpy(), got)
    s = {1: (1, 1), 2: (2, 2)}.get(strides) if isinstance(strides, int) else (tuple(strides[1:3]) if len(strides) == 4 else tuple(strides))
    d = (1, 1) if dilations is None else (dilations[1], dilations[2])
    np.testing.assert_allclose(got, np_conv2d(X, W, s, padding.upper(), d), rtol=1e-4, atol=1e-4)


def test_conv2d_nchw_and_errors():
    got = tf.nn.conv2d(np.transpose(X, [0, 3, 1, 2]), W, [1, 1, 2, 2], "SAME", data_format="NCHW").numpy()
    np.testing.assert_allclose(np.transpose(got, [0, 2, 3, 1]), np_conv2d(X, W, (2, 2), "SAME"), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError):
        tf.nn.conv2d(X, W, 1, "FULL")
    with pytest.raises(ValueError):
        tf.nn.conv2d(X, W, [2, 1, 1, 1], "SAME")


def test_conv1d_convolution_and_pools_1d():
    x = rng.normal(size=(2, 9, 3)).astype(np.float32)
    w = rng.normal(size=(3, 3, 5)).astype(np.float32)
    got = tf.nn.conv1d(x, w, 2, "SAME").numpy()
    np.testing.assert_allclose(got, np_conv2d(x[:, None], w[None], (1, 2), "SAME")[:, 0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tf.nn.convolution(x, w, padding="VALID").numpy(), np_conv2d(x[:, None], w[None])[:, 0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tf.nn.max_pool1d(x, 2, 2, "VALID").numpy(), np_pool(x[:, None], (1, 2), (1, 2), "VALID", np.max)[:, 0])
    np.testing.assert_allclose(tf.nn.avg_pool(x, 3, 1, "VALID").numpy(), np_pool(x[:, None], (1, 3), (1, 1), "VALID", np.mean)[:, 0], rtol=1e-6)


@pytest.mark.parametrize("ksize,strides,padding", [(2, 2, "VALID"), ([1, 3, 3, 1], [1, 2, 2, 1], "SAME"), ([2, 3], 1, "VALID")])
def test_pools_2d_as_numpy(ksize, strides, padding):
    k = (ksize, ksize) if isinstance(ksize, int) else (tuple(ksize[1:3]) if len(ksize) == 4 else tuple(ksize))
    s = (strides, strides) if isinstance(strides, int) else tuple(strides[1:3])
    np.testing.assert_allclose(tf.nn.max_pool2d(X, ksize, strides, padding).numpy(), np_pool(X, k, s, padding, np.nanmax))
    np.testing.assert_allclose(tf.nn.avg_pool2d(X, ksize, strides, padding).numpy(), np_pool(X, k, s, padding, np.nanmean), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tf.nn.pool(X, k, "MAX", s, padding).numpy(), np_pool(X, k, s, padding, np.nanmax))


def test_depthwise_and_separable():
    dw = rng.normal(size=(3, 3, 3, 2)).astype(np.float32)
    got = tf.nn.depthwise_conv2d(X, dw, [1, 1, 1, 1], "SAME").numpy()
    want = np.concatenate([np_conv2d(X[..., c:c + 1], dw[:, :, c:c + 1, :], padding="SAME") for c in range(3)], -1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    pw = rng.normal(size=(1, 1, 6, 4)).astype(np.float32)
    sep = tf.nn.separable_conv2d(X, dw, pw, [1, 1, 1, 1], "SAME").numpy()
    np.testing.assert_allclose(sep, np.einsum("nhwc,co->nhwo", want, pw[0, 0]), rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    y = rng.normal(size=(2, 4, 3, 4)).astype(np.float32)
    out_shape = [2, 7, 6, 3]
    t = tf.nn.conv2d_transpose(y, W, out_shape, [1, 2, 2, 1], "SAME").numpy()
    assert t.shape == tuple(out_shape)
    # <conv2d(x), y> == <x, conv2d_transpose(y)> for every x.
    lhs = np.sum(np_conv2d(X, W, (2, 2), "SAME") * y)
    np.testing.assert_allclose(lhs, np.sum(X * t), rtol=1e-4)
    with pytest.raises(ValueError):
        tf.nn.conv2d_transpose(y, W, [2, 9, 9, 3], 2, "SAME")


def test_space_depth_lrn_in_top_k_and_moments():
    x = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)
    s = tf.nn.space_to_depth(x, 2)
    assert s.shape == (2, 2, 2, 12)
    np.testing.assert_array_equal(s.numpy()[0, 0, 0], np.concatenate([x[0, 0, 0], x[0, 0, 1], x[0, 1, 0], x[0, 1, 1]]))
    np.testing.assert_array_equal(tf.nn.depth_to_space(s, 2).numpy(), x)
    v = rng.normal(size=(1, 2, 2, 7)).astype(np.float32)
    got = tf.nn.local_response_normalization(v, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75).numpy()
    sq = v ** 2
    want = np.stack([v[..., c] / (1.5 + 0.3 * sq[..., max(0, c - 2):c + 3].sum(-1)) ** 0.75 for c in range(7)], -1)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    preds = np.array([[0.1, 0.8, 0.1], [0.5, 0.2, 0.3]], np.float32)
    np.testing.assert_array_equal(tf.nn.in_top_k([1, 1], preds, 1).numpy(), [True, False])
    np.testing.assert_array_equal(tf.nn.in_top_k([2, 2], preds, 2).numpy(), [True, True])
    np.testing.assert_allclose(float(tf.nn.compute_average_loss([1.0, 2.0, 3.0], global_batch_size=6)), 1.0)
    data = rng.normal(size=(4, 3))
    c, m, v2, _ = tf.nn.sufficient_statistics(data, [0])
    mean, var = tf.nn.normalize_moments(c, m, v2, None)
    np.testing.assert_allclose(mean.numpy(), data.mean(0), rtol=1e-10)
    np.testing.assert_allclose(var.numpy(), data.var(0), rtol=1e-10)
    wm, wv = tf.nn.weighted_moments(data, [0], np.ones((4, 1)))
    np.testing.assert_allclose(wm.numpy(), data.mean(0), rtol=1e-10)
    np.testing.assert_allclose(tf.nn.crelu(np.array([1.0, -2.0])).numpy(), [1, 0, 0, 2])
    np.testing.assert_allclose(float(tf.nn.zero_fraction(np.array([0.0, 1.0, 0.0, 3.0]))), 0.5)
