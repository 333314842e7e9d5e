"""A row's bits do not depend on the batch it is computed in: every row of ef.matmul(a, b) for
M = 1..300 has the bits of ef.matmul(a[i:i+1], b) (the few-rows kernel and the blocked GEMM
compute the same chain of multiply-adds), and so do a Dense layer with bias and relu, a model's
predict at batch sizes 1, 16 and 300 against model(x[i:i+1]), and a saved-then-loaded model
at batch 100 against the model."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras
ROWS = 300


def start_for(m):  # the window moves with m, so a row meets every position in a tile
    return (m * 37) % (ROWS - m + 1)


def bits(x):
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def assert_rows_equal(got, single, s, what):  # bit for bit: -0 differs from +0
    np.testing.assert_array_equal(bits(got), bits(np.stack(single[s:s + got.shape[0]])),
                                  err_msg=f"{what}: rows {s}..{s + got.shape[0] - 1} of a product of {got.shape[0]}")


@pytest.mark.parametrize("k,n", [(1, 129), (7, 10), (97, 64), (784, 10), (1000, 1), (1000, 129)])
def test_matmul_rows_for_every_m(k, n):
    rng = np.random.default_rng(k * 1000 + n)
    a = rng.standard_normal((ROWS, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    single = [ef.matmul(a[i:i + 1], b).numpy()[0] for i in range(ROWS)]
    for m in range(1, ROWS + 1):
        s = start_for(m)
        assert_rows_equal(ef.matmul(a[s:s + m], b).numpy(), single, s, f"k={k} n={n}")


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
def test_matmul_rows_with_transposed_operands(ta, tb):
    rng = np.random.default_rng(5)
    k, n = 784, 129
    a = rng.standard_normal((ROWS, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    a_stored = np.ascontiguousarray(a.T) if ta else a
    b_stored = np.ascontiguousarray(b.T) if tb else b

    def rows(s, m):
        part = np.ascontiguousarray(a_stored[:, s:s + m]) if ta else a_stored[s:s + m]
        return ef.matmul(part, b_stored, transpose_a=ta, transpose_b=tb).numpy()

    single = [rows(i, 1)[0] for i in range(ROWS)]
    for m in range(1, ROWS + 1):
        s = start_for(m)
        assert_rows_equal(rows(s, m), single, s, f"ta={ta} tb={tb}")


def test_matmul_rows_in_bfloat16():
    rng = np.random.default_rng(6)
    a = ef.cast(rng.standard_normal((ROWS, 784)).astype(np.float32), ef.bfloat16)
    b = ef.cast(rng.standard_normal((784, 64)).astype(np.float32), ef.bfloat16)
    full = ef.cast(ef.matmul(a, b), ef.float32).numpy()
    for i in range(ROWS):
        one = ef.cast(ef.matmul(a[i:i + 1], b), ef.float32).numpy()[0]
        np.testing.assert_array_equal(bits(full[i]), bits(one), err_msg=f"row {i}")


def test_dense_with_bias_and_relu_rows():
    ef.random.set_seed(7)
    dense = keras.layers.Dense(129, activation="relu", bias_initializer="random_normal")
    x = np.random.default_rng(8).standard_normal((ROWS, 784)).astype(np.float32)
    single = [dense(x[i:i + 1]).numpy()[0] for i in range(ROWS)]
    for m in range(1, ROWS + 1):
        s = start_for(m)
        assert_rows_equal(dense(x[s:s + m]).numpy(), single, s, "Dense(129, relu)")


def mlp():
    return keras.Sequential([keras.Input(shape=(784,)), keras.layers.Dense(64, activation="relu"),
                             keras.layers.Dense(129, activation="relu"), keras.layers.Dense(10)])


def test_predict_at_any_batch_size_and_a_loaded_model(tmp_path):
    ef.random.set_seed(9)
    model = mlp()
    x = np.random.default_rng(10).standard_normal((ROWS, 784)).astype(np.float32)
    single = np.stack([model(x[i:i + 1]).numpy()[0] for i in range(ROWS)])
    for batch_size in (1, 16, 32, 300):
        np.testing.assert_array_equal(bits(model.predict(x, batch_size=batch_size, verbose=0)), bits(single),
                                      err_msg=f"predict batch_size={batch_size}")
    path = str(tmp_path / "mlp.efmodel")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(bits(loaded.predict(x, batch_size=100, verbose=0)), bits(single))
    np.testing.assert_array_equal(bits(loaded.predict(x, verbose=0)), bits(model.predict(x, verbose=0)))


def test_mixed_bfloat16_predict_at_any_batch_size():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        ef.random.set_seed(11)
        model = mlp()
        x = np.random.default_rng(12).standard_normal((ROWS, 784)).astype(np.float32)
        single = np.stack([model(x[i:i + 1]).numpy().astype(np.float32)[0] for i in range(ROWS)])
        for batch_size in (1, 16, 300):
            got = np.asarray(model.predict(x, batch_size=batch_size, verbose=0)).astype(np.float32)
            np.testing.assert_array_equal(bits(got), bits(single), err_msg=f"predict batch_size={batch_size}")
    finally:
        keras.mixed_precision.set_global_policy("float32")
