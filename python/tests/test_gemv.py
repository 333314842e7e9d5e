"""Batch-1 (few-rows) inference from Python: the products with up to 8 rows run on their own
kernel (src/kernels/cpu/gemv.cpp). Checked against NumPy in float64, eager against traced,
and the same rows inside a larger batch (oneDNN's GEMM) within float rounding."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


def mlp():
    return keras.Sequential([keras.Input(shape=(784,)), keras.layers.Dense(512, activation="relu"),
                             keras.layers.Dense(512, activation="relu"), keras.layers.Dense(10)])


def numpy_forward(model, x):
    w = [a.astype(np.float64) for a in model.get_weights()]
    h = x.astype(np.float64)
    for i in range(0, len(w), 2):
        h = h @ w[i] + w[i + 1]
        if i + 2 < len(w):
            h = np.maximum(h, 0.0)
    return h


@pytest.mark.parametrize("rows", [1, 2, 5, 8])
def test_few_rows_mlp_inference_matches_numpy_eager_and_traced(rows):
    model = mlp()
    x = np.random.default_rng(rows).uniform(size=(rows, 784)).astype(np.float32)
    eager = model(x).numpy()
    traced = ef.function(lambda t: model(t))(x).numpy()
    want = numpy_forward(model, x)
    np.testing.assert_allclose(eager, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(eager, traced)


def test_a_row_gives_the_same_bits_alone_or_among_few_and_close_to_a_large_batch():
    model = mlp()
    x = np.random.default_rng(3).normal(size=(32, 784)).astype(np.float32)
    one = model(x[:1]).numpy()
    eight = model(x[:8]).numpy()
    big = model(x).numpy()  # 32 rows: oneDNN's GEMM
    np.testing.assert_array_equal(one[0], eight[0])
    np.testing.assert_allclose(eight, big[:8], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_few_rows_with_transposes_and_odd_sizes(ta, tb):
    rng = np.random.default_rng(7)
    for m, k, n in [(1, 1, 1), (3, 37, 19), (8, 100, 129), (1, 785, 9)]:
        a = rng.normal(size=(k, m) if ta else (m, k)).astype(np.float32)
        b = rng.normal(size=(n, k) if tb else (k, n)).astype(np.float32)
        got = ef.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy()
        want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.sqrt(k))


def test_nan_and_inf_propagate_like_numpy():
    a = np.ones((1, 16), np.float32)
    b = np.ones((16, 9), np.float32)
    a[0, 3] = np.nan
    got = ef.matmul(a, b).numpy()
    assert np.isnan(got).all()
    a[0, 3] = 0.0
    b[3, 2] = np.inf
    b[5, 4] = np.inf
    got = ef.matmul(a, b).numpy()
    assert np.isnan(got[0, 2])  # 0 * inf
    assert got[0, 4] == np.inf
    assert np.isfinite(np.delete(got[0], [2, 4])).all()
