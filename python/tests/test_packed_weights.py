"""Weights packed once for repeated products (src/kernels/cpu/packed_b_cache.cpp): predictions
by the same weights keep their bits, and every way a user changes weights between predictions
is seen: a fit step, set_weights, Variable.assign / assign_sub, a restored checkpoint, a new
model at the old one's address."""
import numpy as np
import pytest

import eagerflow as ef


def mlp(seed):
    ef.keras.utils.set_random_seed(seed)
    return ef.keras.Sequential([ef.keras.Input((40,)), ef.keras.layers.Dense(64, activation="relu"),
                                ef.keras.layers.Dense(32, activation="relu"), ef.keras.layers.Dense(3)])


def numpy_forward(weights, x):
    h = x.astype(np.float64)
    for i in range(0, len(weights), 2):
        h = h @ weights[i].astype(np.float64) + weights[i + 1]
        if i + 2 < len(weights):
            h = np.maximum(h, 0)
    return h


def data(n=96, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 40)).astype(np.float32), rng.standard_normal((n, 3)).astype(np.float32)


def test_repeated_predictions_keep_their_bits():
    model = mlp(0)
    x, _ = data()
    first = model.predict_on_batch(x)
    for _ in range(4):
        np.testing.assert_array_equal(model.predict_on_batch(x), first)
    np.testing.assert_allclose(first, numpy_forward(model.get_weights(), x), rtol=1e-5, atol=1e-5)


def test_fit_between_predictions_is_seen():
    model = mlp(1)
    model.compile(optimizer=ef.keras.optimizers.Adam(0.05), loss="mse")
    x, y = data(seed=1)
    for epoch in range(3):  # Adam writes the kernels in place from its second step on
        for _ in range(3):
            model.predict_on_batch(x)
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        got = model.predict_on_batch(x)
        np.testing.assert_allclose(got, numpy_forward(model.get_weights(), x), rtol=1e-4, atol=1e-4,
                                   err_msg=f"after epoch {epoch}")


def test_set_weights_and_assign_are_seen():
    model = mlp(2)
    x, _ = data(seed=2)
    for _ in range(3):
        model.predict_on_batch(x)
    rng = np.random.default_rng(5)
    new = [rng.standard_normal(w.shape).astype(np.float32) * 0.1 for w in model.get_weights()]
    model.set_weights(new)
    np.testing.assert_allclose(model.predict_on_batch(x), numpy_forward(new, x), rtol=1e-4, atol=1e-4)
    for _ in range(3):
        model.predict_on_batch(x)
    kernel = model.layers[0].kernel
    kernel.assign_sub(ef.ones_like(kernel) * 0.25)
    np.testing.assert_allclose(model.predict_on_batch(x), numpy_forward(model.get_weights(), x), rtol=1e-4,
                               atol=1e-4)


def test_traced_function_sees_assignments_between_calls():
    w = ef.Variable(np.random.default_rng(3).standard_normal((50, 20)).astype(np.float32))
    x = ef.constant(np.random.default_rng(4).standard_normal((64, 50)).astype(np.float32))
    f = ef.function(lambda a: ef.matmul(a, w))
    for step in range(4):
        for _ in range(3):
            got = f(x).numpy()
        np.testing.assert_allclose(got, x.numpy().astype(np.float64) @ w.numpy(), rtol=1e-4, atol=1e-4)
        w.assign(w * -0.5 + float(step))


def test_checkpoint_restore_is_seen(tmp_path):
    model = mlp(3)
    x, _ = data(seed=3)
    saved = model.get_weights()
    ckpt = ef.train.Checkpoint(model=model)
    path = ckpt.save(str(tmp_path / "ckpt"))
    model.set_weights([w * 2 for w in saved])
    for _ in range(3):
        model.predict_on_batch(x)
    ckpt.restore(path)
    np.testing.assert_allclose(model.predict_on_batch(x), numpy_forward(saved, x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("seed", range(4))
def test_new_models_in_turn_are_not_confused(seed):
    # Each model dies before the next is built: its weights' bytes go to the next one.
    x, _ = data(seed=seed)
    model = mlp(10 + seed)
    for _ in range(3):
        got = model.predict_on_batch(x)
    np.testing.assert_allclose(got, numpy_forward(model.get_weights(), x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows", [2, 3, 5, 8])
def test_a_small_batch_by_kept_weights_keeps_each_rows_bits(rows):
    # A served model at a small batch: from the second call its products read kept panels (the
    # blocked GEMM) instead of streaming the weights; a row's bits stay those it has alone.
    ef.keras.utils.set_random_seed(5)
    model = ef.keras.Sequential([ef.keras.Input((100,)), ef.keras.layers.Dense(128, activation="relu"),
                                 ef.keras.layers.Dense(64)])
    x = np.random.default_rng(rows).standard_normal((rows, 100)).astype(np.float32)
    alone = np.concatenate([model.predict_on_batch(x[i:i + 1]) for i in range(rows)])
    for _ in range(4):
        np.testing.assert_array_equal(model.predict_on_batch(x), alone)
    kernel = model.layers[0].kernel
    kernel.assign_add(np.full(kernel.shape, 0.01, np.float32))
    alone = np.concatenate([model.predict_on_batch(x[i:i + 1]) for i in range(rows)])
    for _ in range(3):
        np.testing.assert_array_equal(model.predict_on_batch(x), alone)
    np.testing.assert_allclose(alone, numpy_forward(model.get_weights(), x), rtol=1e-5, atol=1e-5)
