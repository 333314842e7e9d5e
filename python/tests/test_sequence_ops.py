"""Issue 18's ops from Python: NumPy-like signatures, values against NumPy (the reference for
pad/tile/repeat/cumsum/einsum/sort/tril/round/clip/any/all), TF semantics where NumPy has none
(top_k, exclusive/reverse cumsum: numbers printed by TensorFlow 2.x in the peer virtualenv),
gradients, tracing, saving and ONNX export."""
import numpy as np
import pytest

import eagerflow as ef

RNG = np.random.default_rng(0)


def x34():
    return (np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 2).astype(np.float32)


def test_tril_triu_like_numpy():
    x = RNG.standard_normal((2, 4, 5)).astype(np.float32)
    for k in (-2, 0, 1, 6):
        np.testing.assert_array_equal(ef.tril(x, k).numpy(), np.tril(x, k))
        np.testing.assert_array_equal(ef.triu(x, k=k).numpy(), np.triu(x, k))
    mask = ef.tril(np.ones((3, 3), dtype=bool))
    assert mask.dtype == ef.bool
    with pytest.raises(ef.Error, match="tril.*rank >= 2"):
        ef.tril(np.ones(3, np.float32))


def test_round_floor_ceil_clip():
    v = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4999, -0.7], np.float32)
    np.testing.assert_array_equal(ef.round(v).numpy(), np.round(v))  # half to even
    np.testing.assert_array_equal(ef.floor(v).numpy(), np.floor(v))
    np.testing.assert_array_equal(ef.ceil(v).numpy(), np.ceil(v))
    np.testing.assert_array_equal(ef.clip(v, -1, 1.5).numpy(), np.clip(v, -1, 1.5))
    np.testing.assert_array_equal(ef.clip_by_value(v, np.float32(-1), 2.0).numpy(), np.clip(v, -1, 2.0))
    lo = np.array([0, 1, 2, 3, 0, 0, 0, 0], np.float32)
    np.testing.assert_array_equal(ef.clip(v, lo, 2.0).numpy(), np.clip(v, lo, 2.0))
    with pytest.raises(ef.Error, match="floor.*bool"):
        ef.floor(np.array([True]))


def test_any_all_and_scalar_comparisons():
    b = RNG.standard_normal((3, 4, 2)) > 0.5
    for axis in (None, 0, (1, 2), -1):
        for keepdims in (False, True):
            np.testing.assert_array_equal(ef.any(b, axis=axis, keepdims=keepdims).numpy(), np.any(b, axis=axis, keepdims=keepdims))
            np.testing.assert_array_equal(ef.all(b, axis, keepdims).numpy(), np.all(b, axis=axis, keepdims=keepdims))
    assert ef.reduce_any(np.zeros((0,), np.float32)).numpy() == np.any(np.zeros(0))
    x = ef.cast(np.array([1, 2, 3, 2], np.int64), ef.int64)
    np.testing.assert_array_equal((x == 2).numpy(), [False, True, False, True])
    np.testing.assert_array_equal((x != 2).numpy(), [True, False, True, False])
    f = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(ef.where(f > 1.5, f, 0.0).numpy(), [0.0, 2.0])
    np.testing.assert_array_equal(ef.where(f > 1.5, -1.0, f).numpy(), [1.0, -1.0])


@pytest.mark.parametrize("mode", ["constant", "reflect", "symmetric"])
def test_pad_like_numpy(mode):
    x = x34()
    for pw in (1, (1, 2), ((2, 1), (0, 2))):
        want = np.pad(x, pw, mode=mode)
        np.testing.assert_array_equal(ef.pad(x, pw, mode=mode).numpy(), want)
    np.testing.assert_array_equal(ef.pad(x, ((1, 0), (0, 1)), constant_values=7.0).numpy(),
                                  np.pad(x, ((1, 0), (0, 1)), constant_values=7.0))
    # tf.pad's upper-case modes.
    np.testing.assert_array_equal(ef.pad(x, [[1, 1], [2, 2]], mode.upper()).numpy(), np.pad(x, ((1, 1), (2, 2)), mode=mode))


def test_pad_errors():
    with pytest.raises(ef.Error, match="reflect.*at most 2"):
        ef.pad(x34(), ((3, 0), (0, 0)), "reflect")
    with pytest.raises(ef.Error, match="mode"):
        ef.pad(x34(), 1, "wrap")


def test_tile_repeat_like_numpy():
    x = x34()
    np.testing.assert_array_equal(ef.tile(x, (2, 3)).numpy(), np.tile(x, (2, 3)))
    np.testing.assert_array_equal(ef.repeat(x, 2).numpy(), np.repeat(x, 2))
    np.testing.assert_array_equal(ef.repeat(x, 3, axis=1).numpy(), np.repeat(x, 3, axis=1))
    np.testing.assert_array_equal(ef.repeat(x, [2, 0, 1], axis=0).numpy(), np.repeat(x, [2, 0, 1], axis=0))
    with pytest.raises(ef.Error, match="repeat.*2 repeat counts"):
        ef.repeat(x, [1, 2], axis=0)
    with pytest.raises(ef.Error, match="tile.*one multiple per axis"):
        ef.tile(x, (2,))


def test_cumsum_cumprod():
    x = x34()
    np.testing.assert_allclose(ef.cumsum(x).numpy(), np.cumsum(x, axis=0))  # tf.cumsum: axis 0 by default
    np.testing.assert_allclose(ef.cumsum(x, axis=1).numpy(), np.cumsum(x, axis=1))
    np.testing.assert_allclose(ef.cumprod(x, axis=0).numpy(), np.cumprod(x, axis=0))
    # tf.math.cumsum(x, axis=1, exclusive=True, reverse=True)
    np.testing.assert_allclose(ef.cumsum(x, axis=1, exclusive=True, reverse=True).numpy(),
                               [[-3.0, -1.5, -0.5, 0.0], [3.0, 2.5, 1.5, 0.0], [9.0, 6.5, 3.5, 0.0]])
    # The gradient of cumsum is the reversed cumsum of the cotangent.
    v = ef.Variable(x)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    with ef.GradientTape() as tape:
        loss = ef.sum(ef.cumsum(v, axis=1) * w)
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), np.cumsum(w[:, ::-1], axis=1)[:, ::-1], rtol=1e-6)


def test_einsum_like_numpy():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((2, 4, 5)).astype(np.float32)
    for eq, ops in [("bij,bjk->bik", (a, b)), ("bij,bjk", (a, b)), ("bij->jb", (a,)), ("...ij,...jk->...ik", (a, b)),
                    ("bij,bik->jk", (a, a)), ("i,j->ij", (a[0, 0], b[0, 0]))]:
        np.testing.assert_allclose(ef.einsum(eq, *ops).numpy(), np.einsum(eq, *ops), rtol=1e-5, atol=1e-5, err_msg=eq)
    q = RNG.standard_normal((2, 3, 2, 4)).astype(np.float32)
    k = RNG.standard_normal((2, 5, 2, 4)).astype(np.float32)
    np.testing.assert_allclose(ef.einsum("aecd,abcd->acbe", k, q).numpy(), np.einsum("aecd,abcd->acbe", k, q), rtol=1e-5, atol=1e-5)
    # A repeated label is a diagonal, as TF's and NumPy's (tests/test_einsum_diagonal.py).
    d = RNG.standard_normal((3, 3)).astype(np.float32)
    np.testing.assert_allclose(ef.einsum("ii->i", d).numpy(), np.diag(d))


def test_sort_argsort_top_k():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    x[0, 1] = x[0, 4]  # a tie
    np.testing.assert_array_equal(ef.sort(x).numpy(), np.sort(x))
    np.testing.assert_array_equal(ef.sort(x, axis=0).numpy(), np.sort(x, axis=0))
    np.testing.assert_array_equal(ef.argsort(x).numpy(), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(ef.sort(x, descending=True).numpy(), -np.sort(-x))
    values, indices = ef.top_k(x, k=3)
    assert indices.dtype == ef.int32
    want = np.argsort(-x, axis=-1, kind="stable")[:, :3]
    np.testing.assert_array_equal(indices.numpy(), want)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, want, -1))
    np.testing.assert_array_equal(ef.take_along_axis(x, want, 1).numpy(), np.take_along_axis(x, want, 1))
    # tf.math.top_k([1, 3, 3, -1, 5, 3], 4): equal values keep the lower index first.
    r = ef.top_k(np.array([1, 3, 3, -1, 5, 3], np.float32), 4)
    np.testing.assert_array_equal(r.indices.numpy(), [4, 1, 2, 5])
    np.testing.assert_array_equal(r.values.numpy(), [5, 3, 3, 3])
    # top_k's gradient scatters the cotangent back to the chosen positions.
    var = ef.Variable(x)
    with ef.GradientTape() as tape:
        loss = ef.sum(ef.top_k(var, 2)[0] * np.array([1.0, 2.0], np.float32))
    g = np.zeros_like(x)
    top2 = np.argsort(-x, axis=-1, kind="stable")[:, :2]
    for r in range(4):
        g[r, top2[r, 0]] += 1.0
        g[r, top2[r, 1]] += 2.0
    np.testing.assert_array_equal(tape.gradient(loss, var).numpy(), g)
    with pytest.raises(ef.Error, match="top_k.*k = 7"):
        ef.top_k(x, 7)


def test_random_sampling():
    ef.random.set_seed(1)
    p = np.array([0.1, 0.2, 0.7, 0.0], np.float32)
    with np.errstate(divide="ignore"):
        logits = np.log(np.stack([p, np.full(4, 0.25, np.float32)]))
    n = 20000
    s = ef.random.categorical(logits, n).numpy()
    assert s.shape == (2, n) and s.dtype == np.int64
    counts = np.bincount(s[0], minlength=4)
    assert counts[3] == 0
    np.testing.assert_allclose(counts / n, p, atol=4.5 * np.sqrt(0.25 / n))
    np.testing.assert_allclose(np.bincount(s[1], minlength=4) / n, 0.25, atol=4.5 * np.sqrt(0.25 / n))
    a = ef.random.stateless_categorical(logits, 10, seed=3).numpy()
    np.testing.assert_array_equal(a, ef.random.stateless_categorical(logits, 10, seed=3).numpy())
    assert ef.random.categorical(logits, 2, dtype="int32").dtype == ef.int32
    r = ef.random.randint((3000,), -2, 3).numpy()
    assert r.dtype == np.int32 and r.min() == -2 and r.max() == 2
    perm = ef.random.permutation(50).numpy()
    np.testing.assert_array_equal(np.sort(perm), np.arange(50))
    rows = ef.random.permutation(np.arange(10, dtype=np.float32).reshape(5, 2)).numpy()
    np.testing.assert_array_equal(np.sort(rows[:, 0]), np.arange(0, 10, 2))
    with pytest.raises(ef.Error, match="random.randint.*minval < maxval"):
        ef.random.randint((2,), 3, 3)
    with pytest.raises(ef.Error, match="random.categorical"):
        ef.random.categorical(np.ones(3, np.float32), 1)


def test_traced_once_and_sampling_step():
    # A generation step as the demo runs it: top-k filtering, temperature, a draw; traced once.
    @ef.function
    def step(logits):
        v, _ = ef.top_k(logits, 3)
        kth = ef.reduce_min(v, axis=-1, keepdims=True)
        masked = ef.where(logits < kth, -1e9, logits)
        return ef.random.categorical(masked / 0.8, 1)

    logits = RNG.standard_normal((4, 10)).astype(np.float32)
    allowed = np.argsort(-logits, axis=-1)[:, :3]
    for _ in range(5):
        got = step(logits).numpy()
        for r in range(4):
            assert got[r, 0] in allowed[r]
    assert step.experimental_get_tracing_count() == 1


def test_save_and_onnx_export(tmp_path):
    def fn(x):
        y = ef.pad(ef.pad(x, ((0, 0), (1, 2)), "reflect"), ((0, 0), (2, 1)), "symmetric")
        y = ef.clip(ef.round(y * 2.0) + ef.floor(y), -3.0, 3.0)
        y = ef.cumsum(ef.tile(y, (1, 2)), axis=1, exclusive=True)
        v, _ = ef.top_k(y, 3)
        return ef.sort(v, axis=-1) + ef.einsum("bi,bi->b", x, x)[:, None] * ef.cast(ef.any(x > 0.0, axis=1, keepdims=True), ef.float32)

    model = ef.keras.Sequential([ef.keras.layers.Lambda(fn)])
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    want = model(x).numpy()
    ef.saved_model.save(model, str(tmp_path / "sm"))
    loaded = ef.saved_model.load(str(tmp_path / "sm"))
    np.testing.assert_allclose(loaded(x).numpy(), want, rtol=1e-6)
    path = tmp_path / "seq.onnx"
    ef.onnx.export_model(model, str(path))
    assert path.stat().st_size > 100
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(path))
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
