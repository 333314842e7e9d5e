"""Keras' preprocessing layers called on plain Python lists (["a b", "c"]): one batch, as Keras
reads it, not one input per element."""
import numpy as np

import eagerflow as ef

layers = ef.keras.layers


def test_text_vectorization_on_a_list_of_strings_equals_on_a_tensor():
    data = ["the cat sat", "the dog", "a cat and a dog sat"]
    layer = layers.TextVectorization()
    layer.adapt(data)
    from_list = layer(data).numpy()
    from_tensor = layer(ef.constant(data)).numpy()
    np.testing.assert_array_equal(from_list, from_tensor)
    assert from_list.shape == (3, 6)  # padded to the longest: "a cat and a dog sat"
    vocab = layer.get_vocabulary()
    assert [vocab[i] for i in from_list[1][:2]] == ["the", "dog"]


def test_text_vectorization_multi_hot_on_a_list():
    layer = layers.TextVectorization(output_mode="multi_hot")
    layer.adapt(["x y", "y z"])
    out = layer(["x", "z z"]).numpy()
    vocab = layer.get_vocabulary()
    assert out.shape == (2, len(vocab))
    assert out[0][vocab.index("x")] == 1 and out[1][vocab.index("z")] == 1 and out[1].sum() == 1


def test_lookups_on_flat_and_nested_lists():
    s = layers.StringLookup(vocabulary=["a", "b"])
    np.testing.assert_array_equal(s(["a", "c", "b"]).numpy(), [1, 0, 2])
    np.testing.assert_array_equal(s([["a", "b"], ["b", "z"]]).numpy(), [[1, 2], [2, 0]])
    i = layers.IntegerLookup(vocabulary=[3, 5])
    np.testing.assert_array_equal(i([5, 3, 9]).numpy(), [2, 1, 0])
