"""bfloat16 matmuls under mixed_bfloat16: native where the CPU has AVX512_BF16/AMX (oneDNN's
bfloat16 kernels), else the float32 path; either way the result equals the float32 path's to
one bfloat16 rounding, and a mixed_bfloat16 model trains."""
import numpy as np

import eagerflow as tf
from eagerflow import keras


def test_bfloat16_matmul_equals_the_float32_path_to_one_rounding():
    rng = np.random.RandomState(0)
    a = tf.cast(tf.constant(rng.normal(size=(33, 70)).astype("float32")), tf.bfloat16)
    b = tf.cast(tf.constant(rng.normal(size=(70, 9)).astype("float32")), tf.bfloat16)
    got = tf.cast(tf.matmul(a, b), tf.float32).numpy()
    want = tf.cast(tf.cast(tf.matmul(tf.cast(a, tf.float32), tf.cast(b, tf.float32)), tf.bfloat16), tf.float32).numpy()
    assert tf.matmul(a, b).dtype == tf.bfloat16
    np.testing.assert_allclose(got, want, rtol=1 / 128, atol=1e-2)


def test_a_mixed_bfloat16_model_trains():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        keras.utils.set_random_seed(0)
        x = np.random.RandomState(1).normal(size=(128, 8)).astype("float32")
        y = (x[:, :1] - 2 * x[:, 1:2]).astype("float32")
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(32, activation="relu"),
                                  keras.layers.Dense(1, dtype="float32")])
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        first = model.evaluate(x, y, verbose=0)
        model.fit(x, y, epochs=20, batch_size=32, verbose=0)
        assert model.evaluate(x, y, verbose=0) < first * 0.1
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _bits(t):  # bfloat16 widens to float32 exactly: equal values, equal bits (NaN aside)
    return tf.cast(t, tf.float32).numpy()


def test_bfloat16_elementwise_ops_give_the_float32_bits_with_no_casts_in_the_graph():
    rng = np.random.RandomState(2)
    x = tf.cast(tf.constant(rng.normal(size=(6, 300)).astype("float32")), tf.bfloat16)
    bias = tf.cast(tf.constant(rng.normal(size=(300,)).astype("float32")), tf.bfloat16)

    def body(t, b):
        return tf.nn.gelu(tf.nn.relu(t + b) * 1.5) - tf.math.tanh(t)

    def via_float32(t, b):  # each op between casts: the path every other op takes
        r = lambda v: tf.cast(v, tf.bfloat16)
        f = lambda v: tf.cast(v, tf.float32)
        h = r(tf.nn.relu(f(r(f(t) + f(b)))))
        return r(f(r(tf.nn.gelu(f(r(f(h) * 1.5))))) - f(r(tf.math.tanh(f(t)))))

    got = body(x, bias)
    assert got.dtype == tf.bfloat16
    np.testing.assert_array_equal(_bits(got), _bits(via_float32(x, bias)))
    fn = tf.function(body)
    np.testing.assert_array_equal(_bits(fn(x, bias)), _bits(got))
    graph = str(fn.get_concrete_function(x, bias).graph)
    assert "= cast" not in graph, graph


def test_a_mixed_bfloat16_cnn_trains_close_to_float32():
    losses = {}
    for policy in ("float32", "mixed_bfloat16"):
        keras.mixed_precision.set_global_policy(policy)
        try:
            keras.utils.set_random_seed(0)
            rng = np.random.RandomState(3)
            x = rng.uniform(size=(64, 12, 12, 1)).astype("float32")
            y = (x[:, :6].mean(axis=(1, 2, 3)) > x[:, 6:].mean(axis=(1, 2, 3))).astype("int64")
            model = keras.Sequential([keras.Input((12, 12, 1)), keras.layers.Conv2D(8, 3, activation="relu"),
                                      keras.layers.MaxPooling2D(), keras.layers.Conv2D(8, 3, activation="relu"),
                                      keras.layers.Flatten(), keras.layers.Dense(2, dtype="float32")])
            model.compile(optimizer=keras.optimizers.Adam(0.01),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            first = float(model.train_on_batch(x, y))
            for _ in range(40):
                last = float(model.train_on_batch(x, y))
            losses[policy] = (first, last)
        finally:
            keras.mixed_precision.set_global_policy("float32")
    for first, last in losses.values():
        assert last < first * 0.5
    assert abs(losses["mixed_bfloat16"][0] - losses["float32"][0]) < 0.02  # same start, to bfloat16's rounding
