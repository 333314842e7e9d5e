"""tf.nn's 3-D convolutions and pools, CTC, the window maxima (dilation2d, erosion2d,
max_pool_with_argmax), space_to_batch, the depthwise backprops, the sparse embedding lookups,
isotonic_regression, approx_max_k/min_k and batch_norm_with_global_normalization: against
float64 NumPy references (and TF 2.21's numbers where no short reference exists), gradients by
central differences, eager == traced, and TF's exception classes for bad input."""
import itertools

import numpy as np
import pytest

import eagerflow as tf

rng = np.random.default_rng(11)


def _plan(size, k, s, d, padding):
    eff = (k - 1) * d + 1
    if padding == "SAME":
        out = -(-size // s)
        return max((out - 1) * s + eff - size, 0) // 2, out
    return 0, (size - eff) // s + 1


def np_conv3d(x, w, strides, padding, dil=(1, 1, 1)):
    n, D, H, W, _ = x.shape
    kd, kh, kw, _, O = w.shape
    plans = [_plan(sz, k, s, d, padding) for sz, k, s, d in zip((D, H, W), (kd, kh, kw), strides, dil)]
    out = np.zeros((n, plans[0][1], plans[1][1], plans[2][1], O))
    for od, oh, ow in itertools.product(*(range(p[1]) for p in plans)):
        for a, b, c in itertools.product(range(kd), range(kh), range(kw)):
            i = od * strides[0] - plans[0][0] + a * dil[0]
            j = oh * strides[1] - plans[1][0] + b * dil[1]
            m = ow * strides[2] - plans[2][0] + c * dil[2]
            if 0 <= i < D and 0 <= j < H and 0 <= m < W:
                out[:, od, oh, ow] += x[:, i, j, m].astype(np.float64) @ w[a, b, c].astype(np.float64)
    return out


def np_pool3d(x, k, strides, padding, fn):
    n, D, H, W, C = x.shape
    plans = [_plan(sz, kk, s, 1, padding) for sz, kk, s in zip((D, H, W), k, strides)]
    out = np.zeros((n, plans[0][1], plans[1][1], plans[2][1], C))
    for od, oh, ow in itertools.product(*(range(p[1]) for p in plans)):
        i, j, m = (o * s - p[0] for o, s, p in zip((od, oh, ow), strides, plans))
        win = x[:, max(i, 0):i + k[0], max(j, 0):j + k[1], max(m, 0):m + k[2]].astype(np.float64)
        out[:, od, oh, ow] = fn(win.reshape(n, -1, C), axis=1)
    return out


def check_grad(f, x, eps=1e-2, rtol=2e-2, atol=2e-3):
    """<grad of sum(f(x) * r), v> against the central difference along a random direction v."""
    x = np.asarray(x)
    r = rng.normal(size=f(x).shape).astype(x.dtype)
    v = rng.normal(size=x.shape).astype(x.dtype)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(f(xt) * r)
    g = tape.gradient(loss, xt).numpy().astype(np.float64)
    num = (np.sum(f(x + eps * v).numpy() * r, dtype=np.float64) - np.sum(f(x - eps * v).numpy() * r, dtype=np.float64)) / (2 * eps)
    np.testing.assert_allclose(np.sum(g * v), num, rtol=rtol, atol=atol)


X5 = rng.normal(size=(2, 5, 6, 7, 3)).astype(np.float32)
W5 = rng.normal(size=(3, 2, 3, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("strides,padding,dil", [((1, 1, 1), "SAME", (1, 1, 1)), ((2, 1, 2), "SAME", (1, 1, 1)),
                                                 ((1, 2, 1), "VALID", (1, 1, 1)), ((1, 1, 1), "SAME", (2, 1, 2)),
                                                 ((2, 2, 2), "VALID", (1, 1, 1))])
def test_conv3d_as_numpy(strides, padding, dil):
    f = lambda x, w: tf.nn.conv3d(x, w, [1, *strides, 1], padding, dilations=[1, *dil, 1])  # noqa: E731
    got = f(X5, W5).numpy()
    np.testing.assert_allclose(got, np_conv3d(X5, W5, strides, padding, dil), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(tf.function(f)(X5, W5).numpy(), got)


def test_conv3d_ncdhw_gradient_and_errors():
    got = tf.nn.conv3d(np.transpose(X5, [0, 4, 1, 2, 3]), W5, [1, 1, 2, 1, 1], "SAME", data_format="NCDHW").numpy()
    np.testing.assert_allclose(np.transpose(got, [0, 2, 3, 4, 1]), np_conv3d(X5, W5, (2, 1, 1), "SAME"), rtol=1e-4, atol=1e-4)
    check_grad(lambda x: tf.nn.conv3d(x, W5, [1, 2, 1, 1, 1], "SAME"), X5)
    check_grad(lambda w: tf.nn.conv3d(X5, w, [1, 1, 1, 2, 1], "VALID"), W5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same depth"):
        tf.nn.conv3d(X5, W5[:, :, :, :2], [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        tf.nn.conv3d(X5, np.zeros((9, 1, 1, 3, 2), np.float32), [1, 1, 1, 1, 1], "VALID")
    with pytest.raises(tf.errors.UnimplementedError):
        tf.nn.conv3d(X5, W5, [2, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError):
        tf.nn.conv3d(X5, W5, [1, 1, 1, 1, 1], "FULL")
    with pytest.raises(tf.errors.UnimplementedError, match="float32"):
        tf.nn.conv3d(X5.astype(np.float64), W5, [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(TypeError):
        tf.nn.max_pool3d(X5.astype(np.int32), 2, 2, "SAME")


def test_conv3d_transpose_is_the_adjoint_of_conv3d():
    wt = rng.normal(size=(3, 2, 2, 3, 4)).astype(np.float32)
    for strides, padding in [([1, 2, 2, 2, 1], "SAME"), ([1, 1, 2, 1, 1], "VALID")]:
        y = tf.nn.conv3d(X5, wt, strides, padding)
        u = rng.normal(size=y.shape).astype(np.float32)
        z = tf.nn.conv3d_transpose(u, wt, X5.shape, strides, padding)
        assert z.shape == X5.shape
        np.testing.assert_allclose(np.sum(z.numpy() * X5, dtype=np.float64), np.sum(y.numpy() * u, dtype=np.float64), rtol=1e-4)
    with pytest.raises(ValueError):
        tf.nn.conv3d_transpose(u, wt, [2, 9, 9, 9, 3], [1, 1, 2, 1, 1], "VALID")


@pytest.mark.parametrize("ksize,strides,padding", [((2, 2, 2), (2, 2, 2), "SAME"), ((3, 2, 3), (1, 2, 2), "SAME"),
                                                   ((3, 3, 2), (2, 1, 1), "VALID")])
def test_pool3d_as_numpy(ksize, strides, padding):
    for name, fn in [("max_pool3d", np.max), ("avg_pool3d", np.mean)]:
        f = lambda x: getattr(tf.nn, name)(x, list(ksize), [1, *strides, 1], padding)  # noqa: E731
        got = f(X5).numpy()
        np.testing.assert_allclose(got, np_pool3d(X5, ksize, strides, padding, fn), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(tf.function(f)(X5).numpy(), got)
        check_grad(f, X5, eps=1e-3)


def test_pool3d_ncdhw_and_errors():
    x = np.transpose(X5, [0, 4, 1, 2, 3])
    got = tf.nn.max_pool3d(x, [1, 1, 2, 2, 2], [1, 1, 2, 2, 2], "SAME", data_format="NCDHW").numpy()
    np.testing.assert_allclose(np.transpose(got, [0, 2, 3, 4, 1]), np_pool3d(X5, (2, 2, 2), (2, 2, 2), "SAME", np.max))
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        tf.nn.max_pool3d(X5, 9, 1, "VALID")
    with pytest.raises(ValueError):
        tf.nn.avg_pool3d(X5[0], 2, 1, "VALID")


# --- CTC -------------------------------------------------------------------------------------

# TF 2.21's numbers for these inputs (logits from default_rng(0), time major [6, 3, 5]).
CTC_LOGITS = np.random.default_rng(0).standard_normal((6, 3, 5)).astype(np.float32)
CTC_LABELS = np.array([[1, 2, 2, 0], [3, 3, 1, 4], [2, 0, 0, 0]], np.int32)
CTC_LABEL_LEN = np.array([3, 2, 1], np.int32)
CTC_LOGIT_LEN = np.array([6, 5, 4], np.int32)
TF_CTC_LOSS = [8.255633354187012, 6.457296371459961, 4.165147304534912]
TF_CTC_LOSS_BLANK_LAST = [5.507014274597168, 6.57817268371582, 4.82530403137207]
TF_CTC_GRAD_EXAMPLE1 = [[-0.4803, 0.4347, 0.3042, -0.2919, 0.0333], [-0.1849, 0.426, 0.0559, -0.5651, 0.2681],
                        [-0.3945, 0.0549, 0.0928, -0.2235, 0.4703], [-0.2775, 0.0606, 0.202, -0.0411, 0.056],
                        [-0.074, 0.428, 0.329, -0.6926, 0.0097], [0.0, 0.0, 0.0, 0.0, 0.0]]


def np_ctc_loss(logits, label, blank):
    """-log of the summed probability of every frame-by-frame path that collapses to label."""
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(logits.shape[-1]), repeat=logits.shape[0]):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or path[i - 1] != c)]
        if collapsed == list(label):
            total += np.prod(p[np.arange(len(path)), path])
    return -np.log(total)


def test_ctc_loss_against_all_paths_and_tf():
    logits = rng.normal(size=(5, 2, 4))
    labels = np.array([[1, 1, 0], [2, 3, 1]])
    label_len, logit_len = np.array([2, 3]), np.array([5, 4])
    got = tf.nn.ctc_loss(labels, logits, label_len, logit_len).numpy()
    want = [np_ctc_loss(logits[:5, 0], [1, 1], 0), np_ctc_loss(logits[:4, 1], [2, 3, 1], 0)]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    got3 = tf.nn.ctc_loss(labels[:1], logits[:, :1], label_len[:1], logit_len[:1], blank_index=-1).numpy()
    np.testing.assert_allclose(got3[0], np_ctc_loss(logits[:, 0], [1, 1], 3), rtol=1e-10)

    np.testing.assert_allclose(tf.nn.ctc_loss(CTC_LABELS, CTC_LOGITS, CTC_LABEL_LEN, CTC_LOGIT_LEN).numpy(), TF_CTC_LOSS, rtol=1e-5)
    for blank in (-1, 4):
        np.testing.assert_allclose(tf.nn.ctc_loss(CTC_LABELS, CTC_LOGITS, CTC_LABEL_LEN, CTC_LOGIT_LEN, blank_index=blank).numpy(),
                                   TF_CTC_LOSS_BLANK_LAST, rtol=1e-5)
    batch_major = tf.nn.ctc_loss(CTC_LABELS, np.transpose(CTC_LOGITS, (1, 0, 2)), CTC_LABEL_LEN, CTC_LOGIT_LEN,
                                 logits_time_major=False)
    np.testing.assert_allclose(batch_major.numpy(), TF_CTC_LOSS, rtol=1e-5)


def test_ctc_loss_gradient_traced_and_sparse_labels():
    x = tf.constant(CTC_LOGITS)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.nn.ctc_loss(CTC_LABELS, x, CTC_LABEL_LEN, CTC_LOGIT_LEN)
    grad = tape.gradient(loss, x).numpy()
    np.testing.assert_allclose(grad[:, 1], TF_CTC_GRAD_EXAMPLE1, atol=1e-4)
    check_grad(lambda v: tf.nn.ctc_loss(CTC_LABELS, v, CTC_LABEL_LEN, CTC_LOGIT_LEN), CTC_LOGITS.astype(np.float64),
               eps=1e-5, rtol=1e-6, atol=1e-8)

    f = tf.function(lambda v, n: tf.nn.ctc_loss(CTC_LABELS, v, CTC_LABEL_LEN, n))
    np.testing.assert_array_equal(f(CTC_LOGITS, CTC_LOGIT_LEN).numpy(),
                                  tf.nn.ctc_loss(CTC_LABELS, CTC_LOGITS, CTC_LABEL_LEN, CTC_LOGIT_LEN).numpy())
    g = tf.function(lambda v, y, m, n: tf.nn.ctc_loss(y, v, m, n), reduce_retracing=True)
    for batch in (2, 3, 4):  # the later calls run a trace whose batch is dynamic
        v, y = rng.normal(size=(5, batch, 4)).astype(np.float32), rng.integers(1, 4, (batch, 2)).astype(np.int32)
        m, n = np.full(batch, 2, np.int32), np.full(batch, 5, np.int32)
        np.testing.assert_allclose(g(v, y, m, n).numpy(), tf.nn.ctc_loss(y, v, m, n).numpy(), rtol=1e-6)
    empty = rng.normal(size=(3, 2, 4))  # no labels: every frame blank
    p = np.exp(empty) / np.exp(empty).sum(-1, keepdims=True)
    np.testing.assert_allclose(tf.nn.ctc_loss(np.zeros((2, 0), np.int32), empty, [0, 0], [3, 2]).numpy(),
                               [-np.log(p[:, 0, 0]).sum(), -np.log(p[:2, 1, 0]).sum()], rtol=1e-10)
    one = rng.normal(size=(1, 2, 3))  # a single frame: no recursion step
    np.testing.assert_allclose(tf.nn.ctc_loss(np.array([[1], [2]]), one, [1, 0], [1, 1]).numpy(),
                               [np_ctc_loss(one[:, 0], [1], 0), np_ctc_loss(one[:, 1], [], 0)], rtol=1e-10)

    sp = tf.sparse.from_dense(CTC_LABELS)  # all of a row's nonzero labels count
    np.testing.assert_allclose(tf.nn.ctc_loss(sp, CTC_LOGITS, None, CTC_LOGIT_LEN, blank_index=0).numpy(),
                               [8.255633354187012, 14.091737747192383, 4.165147304534912], rtol=1e-5)
    with pytest.raises(ValueError, match="blank_index"):
        tf.nn.ctc_loss(sp, CTC_LOGITS, None, CTC_LOGIT_LEN)
    with pytest.raises(tf.errors.InvalidArgumentError, match="blank"):
        tf.nn.ctc_loss(np.array([[0, 1]]), CTC_LOGITS[:, :1], [2], [6])
    with pytest.raises(ValueError):
        tf.nn.ctc_loss(CTC_LABELS, CTC_LOGITS[0], CTC_LABEL_LEN, CTC_LOGIT_LEN)


def _sparse_rows(sp):
    dense = tf.sparse.to_dense(sp).numpy()
    idx = sp.indices.numpy()
    return [dense[b, :idx[idx[:, 0] == b, 1].max() + 1].tolist() if (idx[:, 0] == b).any() else [] for b in range(dense.shape[0])]


def test_ctc_greedy_decoder_as_tf():
    (decoded,), neg_sum = tf.nn.ctc_greedy_decoder(CTC_LOGITS, CTC_LOGIT_LEN)
    assert _sparse_rows(decoded) == [[2, 3, 2], [1, 3, 1], [1, 1, 2]]
    assert decoded.dense_shape.numpy().tolist() == [3, 3] and decoded.values.dtype == tf.int64
    np.testing.assert_allclose(neg_sum.numpy(), [[-7.9258003], [-6.4038424], [-2.4714875]], rtol=1e-6)
    (decoded,), _ = tf.nn.ctc_greedy_decoder(CTC_LOGITS, CTC_LOGIT_LEN, merge_repeated=False, blank_index=0)
    assert _sparse_rows(decoded) == [[2, 4, 3, 2, 2, 4], [1, 1, 4, 3, 1], [1, 4, 1, 2]]
    with pytest.raises(ValueError):
        tf.nn.ctc_greedy_decoder(CTC_LOGITS, [6, 5])
    # The decoded shape depends on the values: a trace gets a clear error, not a wrong graph.
    with pytest.raises(tf.errors.InvalidArgumentError, match="eagerly"):
        tf.function(lambda v: tf.nn.ctc_greedy_decoder(v, CTC_LOGIT_LEN)[1])(CTC_LOGITS)


def test_ctc_beam_search_decoder_as_tf():
    decoded, log_probs = tf.nn.ctc_beam_search_decoder(CTC_LOGITS, CTC_LOGIT_LEN, beam_width=3, top_paths=2)
    assert _sparse_rows(decoded[0]) == [[2, 3, 2], [1, 3, 1], [1, 2]]
    assert _sparse_rows(decoded[1]) == [[3, 2], [1, 3, 2], [3, 1]]
    np.testing.assert_allclose(log_probs.numpy(), [[-3.1716266, -4.50948], [-3.2485652, -3.5116768],
                                                   [-3.7749214, -3.98523]], rtol=1e-5)
    # A wide beam finds the most probable labelling: check it against every path's sum.
    logits = rng.normal(size=(4, 1, 3))
    decoded, log_probs = tf.nn.ctc_beam_search_decoder(logits, [4], beam_width=50)
    best = _sparse_rows(decoded[0])[0]
    labellings = {tuple(l) for n in range(5) for l in itertools.product(range(2), repeat=n)}
    with np.errstate(divide="ignore"):  # labellings that cannot fit 4 frames score -inf
        scores = {l: -np_ctc_loss(logits[:, 0], l, 2) for l in labellings}
    assert tuple(best) == max(scores, key=scores.get)
    np.testing.assert_allclose(log_probs.numpy()[0, 0], scores[tuple(best)], rtol=1e-6)
    with pytest.raises(ValueError):
        tf.nn.ctc_beam_search_decoder(CTC_LOGITS, CTC_LOGIT_LEN, beam_width=2, top_paths=3)


def test_collapse_repeated_and_unique_labels_as_tf():
    labels, lengths = tf.nn.collapse_repeated(np.array([[1, 1, 2, 2, 3, 0], [4, 4, 4, 0, 0, 0], [5, 6, 5, 5, 5, 7]]), [5, 3, 6])
    assert labels.numpy().tolist() == [[1, 2, 3, 0], [4, 0, 0, 0], [5, 6, 5, 7]]
    assert lengths.numpy().tolist() == [3, 1, 4] and lengths.dtype == tf.int32
    y, idx = tf.nn.ctc_unique_labels(np.array([[3, 1, 3, 2, 0], [4, 4, 4, 0, 0]]))
    assert y.numpy().tolist() == [[3, 1, 2, 0, 0], [4, 0, 0, 0, 0]]
    assert idx.numpy().tolist() == [[0, 1, 0, 2, 3], [0, 0, 0, 1, 1]]


# --- window maxima -----------------------------------------------------------------------------

def np_dilation2d(x, f, strides, padding, rates):
    n, H, W, C = x.shape
    kh, kw, _ = f.shape
    (ph, oh), (pw, ow) = _plan(H, kh, strides[0], rates[0], padding), _plan(W, kw, strides[1], rates[1], padding)
    out = np.full((n, oh, ow, C), -np.inf)
    for i, j, a, b in itertools.product(range(oh), range(ow), range(kh), range(kw)):
        y, z = i * strides[0] + a * rates[0] - ph, j * strides[1] + b * rates[1] - pw
        if 0 <= y < H and 0 <= z < W:
            out[:, i, j] = np.maximum(out[:, i, j], x[:, y, z] + f[a, b])
    return out


XI = np.random.default_rng(1).integers(0, 4, (2, 5, 6, 2)).astype(np.float32)  # ties on purpose
FI = np.random.default_rng(2).integers(0, 3, (2, 3, 2)).astype(np.float32)


@pytest.mark.parametrize("strides,padding,rates", [((1, 1), "SAME", (1, 1)), ((2, 1), "VALID", (1, 2)), ((2, 2), "SAME", (2, 1))])
def test_dilation_and_erosion_as_numpy(strides, padding, rates):
    s4, r4 = [1, *strides, 1], [1, *rates, 1]
    got = tf.nn.dilation2d(XI, FI, s4, padding, "NHWC", r4).numpy()
    np.testing.assert_array_equal(got, np_dilation2d(XI, FI, strides, padding, rates))
    ero = tf.nn.erosion2d(XI, FI, s4, padding, "NHWC", r4).numpy()
    np.testing.assert_array_equal(ero, -np_dilation2d(-XI, FI[::-1, ::-1], strides, padding, rates))
    f = tf.function(lambda x: tf.nn.dilation2d(x, FI, s4, padding, "NHWC", r4))
    np.testing.assert_array_equal(f(XI).numpy(), got)


def test_dilation_gradient_goes_to_the_first_maximum():
    # TF 2.21's gradient of sum(dilation2d * arange) at a tie-heavy input: the first maximum gets it.
    x = np.array([[[[1.], [3.], [3.]], [[3.], [2.], [0.]], [[1.], [1.], [3.]]]], np.float32)
    f = np.zeros((2, 2, 1), np.float32)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.dilation2d(xt, f, [1, 1, 1, 1], "SAME", "NHWC", [1, 1, 1, 1])
        loss = tf.reduce_sum(y * np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1))
    assert tape.gradient(loss, xt).numpy().ravel().tolist() == [0, 1, 2, 3, 0, 0, 6, 0, 24]
    xs = np.random.default_rng(3).normal(size=(1, 5, 4, 2))
    check_grad(lambda v: tf.nn.dilation2d(v, FI, [1, 1, 1, 1], "SAME", "NHWC", [1, 1, 1, 1]), xs, eps=1e-6, rtol=1e-6,
               atol=1e-8)


def test_max_pool_with_argmax_as_tf():
    x = np.array([[[1, 3, 3], [3, 2, 0], [1, 1, 3]]], np.float32)[..., None]
    x2 = np.concatenate([x, x + 1], 0)
    out, arg = tf.nn.max_pool_with_argmax(x2, 2, 1, "SAME", include_batch_in_index=True)
    assert arg.numpy()[..., 0].tolist() == [[[1, 1, 2], [3, 8, 8], [6, 8, 8]], [[10, 10, 11], [12, 17, 17], [15, 17, 17]]]
    assert out.numpy()[0, ..., 0].tolist() == [[3, 3, 3], [3, 3, 3], [1, 3, 3]] and arg.dtype == tf.int64
    out, arg = tf.nn.max_pool_with_argmax(x2, 2, 1, "SAME", output_dtype=tf.int32)
    assert arg.dtype == tf.int32 and arg.numpy()[1, ..., 0].tolist() == [[1, 1, 2], [3, 8, 8], [6, 8, 8]]
    xs = np.random.default_rng(4).normal(size=(2, 5, 6, 3)).astype(np.float32)
    out, arg = tf.nn.max_pool_with_argmax(xs, [1, 2, 3, 1], [1, 2, 2, 1], "VALID", include_batch_in_index=True)
    np.testing.assert_array_equal(out.numpy(), xs.ravel()[arg.numpy()])
    np.testing.assert_array_equal(out.numpy(), tf.nn.max_pool2d(xs, [2, 3], 2, "VALID").numpy())
    check_grad(lambda v: tf.nn.max_pool_with_argmax(v, 2, 2, "SAME")[0], xs.astype(np.float64), eps=1e-6, rtol=1e-6,
               atol=1e-8)
    with pytest.raises(ValueError):
        tf.nn.max_pool_with_argmax(xs, 2, 2, "SAME", data_format="NCHW")


# --- space_to_batch ------------------------------------------------------------------------

def np_space_to_batch(x, block, pads):
    x = np.pad(x, [(0, 0)] + [tuple(p) for p in pads] + [(0, 0)] * (x.ndim - 1 - len(block)))
    out = []
    for offs in itertools.product(*(range(b) for b in block)):
        out.append(x[(slice(None),) + tuple(slice(o, None, b) for o, b in zip(offs, block))])
    return np.concatenate(out, 0)


def test_space_to_batch_as_numpy():
    x = np.arange(2 * 5 * 6 * 3, dtype=np.float32).reshape(2, 5, 6, 3)
    for block, pads in [([2, 3], [[1, 0], [0, 0]]), ([2], [[0, 1]]), ([1, 2], [[0, 0], [1, 1]])]:
        np.testing.assert_array_equal(tf.nn.space_to_batch(x, block, pads).numpy(), np_space_to_batch(x, block, pads))
    with pytest.raises(tf.errors.InvalidArgumentError, match="divisible"):
        tf.nn.space_to_batch(x, [2, 2], [[0, 0], [0, 0]])


def test_with_space_to_batch_is_a_dilated_convolution():
    x = rng.normal(size=(2, 7, 6, 3)).astype(np.float32)
    w = rng.normal(size=(3, 2, 3, 4)).astype(np.float32)
    for padding, rate in [("SAME", [2, 3]), ("VALID", [2, 2]), ("SAME", [1, 1])]:
        got = tf.nn.with_space_to_batch(x, rate, padding, lambda inp, n, p: tf.nn.conv2d(inp, w, 1, p), filter_shape=[3, 2])
        want = tf.nn.conv2d(x, w, 1, padding, dilations=[1, *rate, 1])
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="filter_shape"):
        tf.nn.with_space_to_batch(x, [2, 2], "SAME", lambda inp, n, p: inp)
    # Channels-first and chosen spatial dims: an elementwise op comes back where it started.
    z = np.arange(2 * 3 * 5 * 7, dtype=np.float32).reshape(2, 3, 5, 7)
    for kw in ({"data_format": "NCHW"}, {"spatial_dims": [2]}):
        rate = [2, 3] if "data_format" in kw else [2]
        np.testing.assert_array_equal(tf.nn.with_space_to_batch(z, rate, "VALID", lambda i, n, p: i * 2.0, **kw).numpy(), 2 * z)


# --- the convolutions defined as gradients -----------------------------------------------------

def test_depthwise_backprops_are_the_adjoints():
    x = rng.normal(size=(2, 7, 6, 3)).astype(np.float32)
    w = rng.normal(size=(3, 2, 3, 2)).astype(np.float32)
    for strides, padding in [([1, 1, 1, 1], "SAME"), ([1, 2, 2, 1], "VALID")]:
        y = tf.nn.depthwise_conv2d(x, w, strides, padding).numpy()
        g = rng.normal(size=y.shape).astype(np.float32)
        gi = tf.nn.depthwise_conv2d_backprop_input([2, 7, 6, 3], w, g, strides, padding).numpy()
        gf = tf.nn.depthwise_conv2d_backprop_filter(x, [3, 2, 3, 2], g, strides, padding).numpy()
        # depthwise_conv2d is bilinear: <d/dx, x> = <d/dw, w> = <y, g>.
        np.testing.assert_allclose(np.sum(gi * x, dtype=np.float64), np.sum(y * g, dtype=np.float64), rtol=1e-4)
        np.testing.assert_allclose(np.sum(gf * w, dtype=np.float64), np.sum(y * g, dtype=np.float64), rtol=1e-4)
    with pytest.raises(ValueError, match="out_backprop"):
        tf.nn.depthwise_conv2d_backprop_input([2, 7, 6, 3], w, g[:, :1], [1, 1, 1, 1], "SAME")


def test_atrous_conv2d_transpose_is_the_adjoint_of_atrous_conv2d():
    z = rng.normal(size=(2, 9, 8, 4)).astype(np.float32)
    w = rng.normal(size=(3, 3, 4, 3)).astype(np.float32)
    for padding in ("SAME", "VALID"):
        y = tf.nn.atrous_conv2d(z, w, 2, padding).numpy()
        u = rng.normal(size=y.shape).astype(np.float32)
        t = tf.nn.atrous_conv2d_transpose(u, w, z.shape, 2, padding).numpy()
        np.testing.assert_allclose(np.sum(t * z, dtype=np.float64), np.sum(y * u, dtype=np.float64), rtol=1e-4)


# --- sparse embedding lookups (TF 2.21's numbers) ------------------------------------------------

P = np.arange(15, dtype=np.float32).reshape(5, 3)


def _sp(indices, values, shape):
    return tf.sparse.SparseTensor(indices, values, shape)


def test_embedding_lookup_sparse_as_tf():
    ids = _sp([[0, 0], [0, 1], [0, 2], [2, 0]], np.array([1, 3, 1, 0], np.int64), [5, 3])
    w = _sp([[0, 0], [0, 1], [0, 2], [2, 0]], np.array([1., 2., -0.5, 3.], np.float32), [5, 3])
    want = {"sum": [[19.5, 22.0, 24.5], [0, 0, 0], [0, 3, 6]], "mean": [[7.8, 8.8, 9.8], [0, 0, 0], [0, 1, 2]],
            "sqrtn": [[8.510497, 9.601587, 10.692677], [0, 0, 0], [0, 1, 2]]}
    for combiner, rows in want.items():
        np.testing.assert_allclose(tf.nn.embedding_lookup_sparse(P, ids, w, combiner=combiner).numpy(), rows, rtol=1e-5)
    np.testing.assert_allclose(tf.nn.embedding_lookup_sparse(P, ids, None).numpy(), [[5, 6, 7], [0, 0, 0], [0, 1, 2]])
    np.testing.assert_allclose(tf.nn.embedding_lookup_sparse([P[:3], P[3:]], ids, None, combiner="sqrtn").numpy(),
                               [[8.660254, 10.392304, 12.124355], [0, 0, 0], [0, 1, 2]], rtol=1e-5)
    np.testing.assert_allclose(tf.nn.embedding_lookup_sparse(P, ids, None, max_norm=3.0).numpy()[0],
                               [1.36642, 1.706806, 2.047193], rtol=1e-5)
    check_grad(lambda p: tf.nn.embedding_lookup_sparse(p, ids, w, combiner="sqrtn"), P, eps=1e-2)
    with pytest.raises(ValueError, match="combiner"):
        tf.nn.embedding_lookup_sparse(P, ids, None, combiner="max")
    with pytest.raises(TypeError):
        tf.nn.embedding_lookup_sparse(P, np.array([[1, 2]]), None)


def test_safe_embedding_lookup_sparse_as_tf():
    ids = _sp([[0, 0], [0, 1], [0, 2], [2, 0], [3, 1]], np.array([1, 3, 1, 0, -1], np.int64), [5, 3])
    w = _sp([[0, 0], [0, 1], [0, 2], [2, 0], [3, 1]], np.array([1., 2., 0.5, 3., 1.], np.float32), [5, 3])
    np.testing.assert_allclose(tf.nn.safe_embedding_lookup_sparse(P, ids, w).numpy(),
                               [[6.428571, 7.428571, 8.428572], [0, 0, 0], [0, 1, 2], [0, 0, 0], [0, 0, 0]], rtol=1e-5)
    np.testing.assert_allclose(tf.nn.safe_embedding_lookup_sparse(P, ids, None, combiner="sum", default_id=4).numpy(),
                               [[15, 18, 21], [12, 13, 14], [0, 1, 2], [12, 13, 14], [12, 13, 14]])
    ids3 = _sp([[0, 0, 0], [0, 1, 1], [1, 0, 0]], np.array([1, 2, 4], np.int64), [2, 2, 2])
    assert tf.nn.safe_embedding_lookup_sparse(P, ids3).numpy().tolist() == [[[3, 4, 5], [6, 7, 8]], [[12, 13, 14], [0, 0, 0]]]


# --- the rest ----------------------------------------------------------------------------------

def test_isotonic_regression_as_tf():
    x = np.array([[1., 3, 2, 4], [5, 1, 4, 2]], np.float32)
    out, seg = tf.nn.isotonic_regression(x)
    assert out.numpy().tolist() == [[2.5, 2.5, 2.5, 2.5], [5, 2.5, 2.5, 2]] and seg.numpy().tolist() == [[0, 0, 0, 0], [0, 1, 1, 2]]
    out, seg = tf.nn.isotonic_regression(x, decreasing=False)
    assert out.numpy().tolist() == [[1, 2.5, 2.5, 4], [3, 3, 3, 3]] and seg.numpy().tolist() == [[0, 1, 1, 2], [0, 0, 1, 1]]
    out, seg = tf.nn.isotonic_regression(np.array([[1., 3], [5, 1], [2, 2]], np.float32), axis=0)
    assert out.numpy().tolist() == [[3, 3], [3, 1.5], [2, 1.5]] and seg.numpy().tolist() == [[0, 0], [0, 1], [1, 1]]
    xs = np.random.default_rng(6).normal(size=(3, 7))
    out = tf.nn.isotonic_regression(xs).output.numpy()
    assert (np.diff(out, axis=-1) <= 1e-12).all()
    np.testing.assert_allclose(out.sum(-1), xs.sum(-1))  # each block keeps its sum
    check_grad(lambda v: tf.nn.isotonic_regression(v).output, xs, eps=1e-6, rtol=1e-6, atol=1e-9)


def test_approx_max_and_min_k_are_exact():
    x = rng.normal(size=(4, 9)).astype(np.float32)
    values, indices = tf.nn.approx_max_k(x, 3)
    np.testing.assert_array_equal(indices.numpy(), np.argsort(-x, -1, kind="stable")[:, :3])
    np.testing.assert_array_equal(values.numpy(), -np.sort(-x, -1)[:, :3])
    values, indices = tf.nn.approx_min_k(x, 2, reduction_dimension=0)
    np.testing.assert_array_equal(indices.numpy(), np.argsort(x, 0, kind="stable")[:2])
    np.testing.assert_array_equal(values.numpy(), np.sort(x, 0)[:2])
    assert indices.dtype == tf.int32
    with pytest.raises(ValueError):
        tf.nn.approx_max_k(x, 3, reduction_dimension=2)


def test_batch_norm_with_global_normalization():
    x = rng.normal(size=(3, 4)).astype(np.float32)
    m, v, b, g = (rng.uniform(0.5, 1.5, 4).astype(np.float32) for _ in range(4))
    for scale in (True, False):
        got = tf.nn.batch_norm_with_global_normalization(x, m, v, b, g, 1e-3, scale).numpy()
        want = (x - m) / np.sqrt(v + 1e-3) * (g if scale else 1) + b
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- fractional pools ----------------------------------------------------------------------------

# TF 2.21's pseudo-random row bands for 10 rows pooled to 6 (every one seen over 300 seeds).
TF_PSEUDO_RANDOM_10_TO_6 = {(0, 1, 3, 5, 6, 8, 10), (0, 2, 3, 5, 7, 8, 10), (0, 2, 4, 5, 7, 9, 10), (0, 2, 4, 6, 7, 9, 10)}


@pytest.mark.parametrize("pseudo_random,overlapping", [(False, False), (False, True), (True, False), (True, True)])
def test_fractional_pools_pool_their_bands(pseudo_random, overlapping):
    x = rng.normal(size=(2, 10, 7, 2)).astype(np.float32)
    for fn, reduce in [(tf.nn.fractional_max_pool, np.max), (tf.nn.fractional_avg_pool, np.mean)]:
        out, rows, cols = fn(x, [1, 1.44, 1.73, 1], pseudo_random=pseudo_random, overlapping=overlapping, seed=3)
        rs, cs = rows.numpy(), cols.numpy()
        assert out.shape == (2, 6, 4, 2) and rows.dtype == tf.int64
        for seq, n, k in ((rs, 10, 1), (cs, 7, 1)):
            assert seq[0] == 0 and seq[-1] == n and set(np.diff(seq)) <= {k, k + 1}
        want = np.zeros(out.shape)
        for i, j in itertools.product(range(len(rs) - 1), range(len(cs) - 1)):
            want[:, i, j] = reduce(x[:, rs[i]:min(rs[i + 1] + overlapping, 10), cs[j]:min(cs[j + 1] + overlapping, 7)], axis=(1, 2))
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
        again = fn(x, [1, 1.44, 1.73, 1], pseudo_random=pseudo_random, overlapping=overlapping, seed=3)
        np.testing.assert_array_equal(again.row_pooling_sequence.numpy(), rs)  # a seed fixes the bands
        np.testing.assert_array_equal(again.output.numpy(), out.numpy())
        # float64 and a small step: a float32 step of 1e-3 can cross a near-tie of two band maxima.
        check_grad(lambda v: fn(v, [1, 1.44, 1.73, 1], pseudo_random=pseudo_random, overlapping=overlapping, seed=3)[0],
                   x.astype(np.float64), eps=1e-6, rtol=1e-6, atol=1e-8)


def test_fractional_pool_bands_follow_tf():
    x = np.zeros((1, 10, 10, 1), np.float32)
    pseudo = {tuple(tf.nn.fractional_max_pool(x, 1.5, pseudo_random=True, seed=s)[1].numpy().tolist()) for s in range(1, 200)}
    assert pseudo == TF_PSEUDO_RANDOM_10_TO_6
    for s in range(1, 30):  # random bands: 10 % 6 = 4 of the 6 are one row wider
        rows = tf.nn.fractional_avg_pool(x, [1.5, 1.5], seed=s)[1].numpy()
        assert sorted(np.diff(rows).tolist()) == [1, 1, 2, 2, 2, 2]
    with pytest.raises(ValueError, match=">= 1.0"):
        tf.nn.fractional_max_pool(x, [1, 0.5, 1.5, 1])
    with pytest.raises(ValueError, match="first and last"):
        tf.nn.fractional_max_pool(x, [2, 1.5, 1.5, 1])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.nn.fractional_max_pool(x, 11.0)


def test_batch_to_space_and_required_paddings_as_tf():
    # TF's top-level tf.batch_to_space and tf.required_space_to_batch_paddings (wired by the lead).
    from eagerflow._nn_space_batch import batch_to_space, required_space_to_batch_paddings
    x = np.arange(8 * 2 * 3 * 1, dtype=np.float32).reshape(8, 2, 3, 1)
    assert batch_to_space(x, [2, 2], [[0, 1], [1, 0]]).numpy()[..., 0].tolist() == [
        [[12, 1, 13, 2, 14], [36, 25, 37, 26, 38], [15, 4, 16, 5, 17]],
        [[18, 7, 19, 8, 20], [42, 31, 43, 32, 44], [21, 10, 22, 11, 23]]]
    z = rng.normal(size=(2, 5, 6, 3)).astype(np.float32)
    np.testing.assert_array_equal(batch_to_space(tf.nn.space_to_batch(z, [2, 3], [[1, 0], [0, 0]]), [2, 3],
                                                 [[1, 0], [0, 0]]).numpy(), z)
    with pytest.raises(tf.errors.InvalidArgumentError, match="divisible"):
        batch_to_space(x, [3, 2], [[0, 0], [0, 0]])
    paddings, crops = required_space_to_batch_paddings([5, 6], [2, 4], [[1, 0], [2, 2]])
    assert paddings.numpy().tolist() == [[1, 0], [2, 4]] and crops.numpy().tolist() == [[0, 0], [0, 2]]
    paddings, crops = required_space_to_batch_paddings([5, 6], [2, 4])
    assert paddings.numpy().tolist() == [[0, 1], [0, 2]] and crops.numpy().tolist() == [[0, 1], [0, 2]]
    assert paddings.dtype == tf.int32
