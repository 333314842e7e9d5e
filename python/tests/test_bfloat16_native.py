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
