"""Every C++ layer from Python, with Keras' argument names: shapes, weights, training."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


def test_conv_pool_batchnorm_cnn_trains_and_traces_once():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8, 8, 1)).astype(np.float32)
    y = (x.mean(axis=(1, 2, 3)) > 0).astype(np.int64)
    model = keras.Sequential([
        keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
        keras.layers.BatchNormalization(),
        keras.layers.MaxPooling2D(2),
        keras.layers.AveragePooling2D(pool_size=(2, 2), strides=1),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(2),
    ])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    assert len(history.history["loss"]) == 3
    assert all(np.isfinite(history.history["loss"]))
    assert model.tracing_count() == 1
    assert model.predict(x[:5]).shape == (5, 2)
    conv, bn = model.layers[0], model.layers[1]
    assert tuple(conv.kernel.shape) == (3, 3, 1, 4)
    assert not np.allclose(bn.moving_mean.numpy(), 0.0)  # trained in training mode


def test_frozen_batchnorm_keeps_its_statistics_from_python():
    x = (np.random.default_rng(1).normal(size=(32, 3)) * 3 + 2).astype(np.float32)
    y = np.zeros((32,), np.int64)
    bn = keras.layers.BatchNormalization()
    model = keras.Sequential([bn, keras.layers.Dense(2)])
    model(x)
    bn.trainable = False
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert np.array_equal(bn.moving_mean.numpy(), np.zeros(3, np.float32))
    assert np.array_equal(bn.moving_variance.numpy(), np.ones(3, np.float32))


def test_embedding_layernorm_add_concatenate():
    emb = keras.layers.Embedding(10, 4)
    out = emb(np.array([[1, 2, 3]], np.int64))
    assert tuple(out.shape) == (1, 3, 4)
    assert tuple(emb.embeddings.shape) == (10, 4)
    ln = keras.layers.LayerNormalization()
    normed = ln(out).numpy()
    np.testing.assert_allclose(normed.mean(axis=-1), 0.0, atol=1e-5)
    a = np.ones((2, 3), np.float32)
    b = np.full((2, 3), 2.0, np.float32)
    np.testing.assert_array_equal(keras.layers.Add()([a, b]).numpy(), np.full((2, 3), 3.0, np.float32))
    assert tuple(keras.layers.Concatenate(axis=-1)([a, b]).shape) == (2, 6)
    with pytest.raises(ef.Error, match="out of range"):
        emb(np.array([[10]], np.int64))


def test_bad_layer_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="kernel_size"):
        keras.layers.Conv2D(4, (3, 3, 3))
    with pytest.raises(ef.Error):
        keras.layers.Conv2D(4, 3, padding="sideways")(np.zeros((1, 5, 5, 1), np.float32))
    with pytest.raises(ef.Error):
        keras.layers.BatchNormalization(momentum=float("nan"))


def test_seeded_dropout_draws_one_sequence_eagerly_and_traced():
    x = np.ones((16,), np.float32)

    def masks(traced):
        ef.random.set_seed(9)
        drop = keras.layers.Dropout(0.5, seed=123)
        step = ef.function(lambda t: drop(t, training=True)) if traced else (lambda t: drop(t, training=True))
        return [step(x).numpy() for _ in range(3)]

    eager, traced = masks(False), masks(True)
    assert not np.array_equal(eager[0], eager[1])  # a fresh mask every call
    for e, t in zip(eager, traced):
        np.testing.assert_array_equal(e, t)


def test_check_numerics_eagerly_and_traced():
    np.testing.assert_array_equal(ef.check_numerics(np.ones(2, np.float32), "ok").numpy(), np.ones(2, np.float32))
    with pytest.raises(ef.Error, match=r"\[activations\] found NaN at position \(1,\)"):
        ef.check_numerics(np.array([1.0, np.nan], np.float32), "activations")
    f = ef.function(lambda t: ef.check_numerics(t * 2.0, "doubled"))
    f(np.ones(2, np.float32))
    with pytest.raises(ef.Error, match="doubled.*Inf"):
        f(np.full(2, 3e38, np.float32))
    assert f.experimental_get_tracing_count() == 1
