"""keras.layers.Embedding's keyword arguments: input_dim is its vocabulary size (not the base
layer's Keras 2 input_dim), and Keras 2's input_length is accepted with Keras 3's warning."""
import warnings

import numpy as np
import pytest

import eagerflow as ef

layers = ef.keras.layers


def test_input_dim_and_output_dim_by_keyword():
    e = layers.Embedding(input_dim=50, output_dim=4, mask_zero=True)
    out = e(np.array([[1, 2, 0]], np.int32))
    assert out.shape.as_list() == [1, 3, 4]
    assert e.embeddings.shape.as_list() == [50, 4]
    assert e.mask_zero


def test_keyword_and_positional_give_the_same_table_shape():
    a = layers.Embedding(20, 3)
    b = layers.Embedding(input_dim=20, output_dim=3)
    a(np.zeros((1, 2), np.int32))
    b(np.zeros((1, 2), np.int32))
    assert a.embeddings.shape.as_list() == b.embeddings.shape.as_list() == [20, 3]


def test_input_length_warns_and_is_ignored():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = layers.Embedding(10, 2, input_length=5)
    assert any("input_length" in str(w.message) for w in caught)
    assert e(np.zeros((2, 7), np.int32)).shape.as_list() == [2, 7, 2]


def test_base_layer_input_dim_still_declares_the_input_of_dense():
    model = ef.keras.Sequential([layers.Dense(3, input_dim=4), layers.Dense(1)])
    assert len(model.weights) == 4  # built at once from input_dim: both kernels and biases exist


def test_unknown_keyword_is_still_an_error():
    with pytest.raises(TypeError):
        layers.Embedding(10, 2, not_an_argument=1)


def test_embedding_in_a_model_by_keyword_trains():
    model = ef.keras.Sequential([ef.keras.Input((4,), dtype="int32"), layers.Embedding(input_dim=8, output_dim=2),
                                 layers.GlobalAveragePooling1D(), layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.random.RandomState(0).randint(0, 8, (16, 4)).astype("int32")
    h = model.fit(x, np.ones((16, 1), np.float32), epochs=2, verbose=0)
    assert len(h.history["loss"]) == 2


def test_floating_ids_are_cast_to_int32_as_keras():
    table = layers.Embedding(10, 2)
    ids = np.array([[1, 7]], np.int32)
    expected = table(ids).numpy()
    np.testing.assert_array_equal(table(ids.astype(np.float32)).numpy(), expected)
    np.testing.assert_array_equal(table(ef.constant(ids, ef.float64)).numpy(), expected)


def test_float_input_of_a_functional_model_feeds_an_embedding():
    inputs = ef.keras.Input(shape=(None,))  # float32 by default, as in Keras' RNN guide
    model = ef.keras.Model(inputs, layers.Embedding(input_dim=10, output_dim=3)(inputs))
    out = model(np.array([[1.0, 2.0, 0.0]], np.float32))
    assert out.shape.as_list() == [1, 3, 3]
    np.testing.assert_array_equal(out.numpy()[0, 0], model.layers[-1].embeddings.numpy()[1])
