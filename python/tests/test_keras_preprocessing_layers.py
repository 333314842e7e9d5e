"""Keras 3's preprocessing layers (issue 33): results as Keras 3.15 gives them (reference values
below were printed by Keras with the TensorFlow backend, or are computed here with NumPy), eager
and under ef.function, in fit and Dataset.map, with get_config round trips and model saving."""
import os

import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras
L = keras.layers


def _v(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


# ---------------------------------------------------------------- StringLookup / IntegerLookup
def test_string_lookup_int_mode_with_mask_and_oov():
    layer = L.StringLookup(vocabulary=["a", "b", "c"], mask_token="")
    out = layer(ef.constant([["a", ""], ["z", "c"]]))
    assert out.dtype == ef.int64
    np.testing.assert_array_equal(_v(out), [[2, 0], [1, 4]])
    assert layer.get_vocabulary() == ["", "[UNK]", "a", "b", "c"]
    assert layer.get_vocabulary(include_special_tokens=False) == ["a", "b", "c"]
    assert layer.vocabulary_size() == 5


def test_string_lookup_adapt_orders_by_count_then_token():
    layer = L.StringLookup()
    layer.adapt(np.array(["x", "y", "y", "z", "z", "z", "w"]))
    # Keras: by decreasing count, ties by the larger token first.
    assert layer.get_vocabulary() == ["[UNK]", "z", "y", "x", "w"]
    capped = L.StringLookup(max_tokens=3)
    capped.adapt(ef.data.Dataset.from_tensor_slices(["x", "y", "y", "z", "z", "z"]).batch(2))
    assert capped.get_vocabulary() == ["[UNK]", "z", "y"]


@pytest.mark.parametrize("mode, expected, dtype", [
    ("count", [[1, 2, 0, 0], [0, 0, 2, 1]], "int64"),
    ("multi_hot", [[1, 1, 0, 0], [0, 0, 1, 1]], "int64"),
])
def test_string_lookup_encodings(mode, expected, dtype):
    out = L.StringLookup(vocabulary=["a", "b", "c"], output_mode=mode)(ef.constant([["a", "a", "z"], ["c", "b", "b"]]))
    assert out.dtype.name == dtype
    np.testing.assert_array_equal(_v(out), expected)


def test_string_lookup_one_hot_padding_and_tf_idf():
    one_hot = L.StringLookup(vocabulary=["a", "b", "c"], output_mode="one_hot")(ef.constant(["a", "z", "c"]))
    np.testing.assert_array_equal(_v(one_hot), [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]])
    padded = L.StringLookup(vocabulary=["a", "b", "c"], output_mode="multi_hot", pad_to_max_tokens=True,
                            max_tokens=6)(ef.constant([["a", "b"]]))
    np.testing.assert_array_equal(_v(padded), [[0, 1, 1, 0, 0, 0]])
    idf = [0.5, 1.0, 2.0]
    tfidf = L.StringLookup(vocabulary=["a", "b", "c"], output_mode="tf_idf", idf_weights=idf)
    out = tfidf(ef.constant([["a", "a", "z"], ["c", "b", "b"]]))
    assert out.dtype == ef.float32
    # The OOV column weighs the mean of the given weights, as Keras pads it.
    np.testing.assert_allclose(_v(out), [[np.mean(idf), 2 * 0.5, 0, 0], [0, 0, 2 * 1.0, 1 * 2.0]], rtol=1e-6)


def test_string_lookup_invert_and_several_oov_buckets():
    inv = L.StringLookup(vocabulary=["a", "b"], invert=True)(ef.constant([[0, 1], [2, 5]]))
    assert inv.dtype.name == "string"
    assert inv.numpy().tolist() == [[b"[UNK]", b"a"], [b"b", b"[UNK]"]]
    # Two OOV buckets: TF's FarmHash Fingerprint64 of the string, as Keras.
    out = L.StringLookup(vocabulary=["a", "b"], num_oov_indices=2)(ef.constant([["a", "q"], ["b", "zz"]]))
    np.testing.assert_array_equal(_v(out), [[2, 1], [3, 0]])
    salted = L.StringLookup(vocabulary=["a"], num_oov_indices=3, salt=[5, 6])(ef.constant(["q", "r", "s", "t", "a"]))
    np.testing.assert_array_equal(_v(salted), [1, 0, 2, 1, 3])


def test_string_lookup_errors():
    with pytest.raises(ef.errors.InvalidArgumentError, match="num_oov_indices=0"):
        L.StringLookup(vocabulary=["a"], num_oov_indices=0)(ef.constant(["b"]))
    with pytest.raises(ValueError, match="repeated"):
        L.StringLookup(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="after setting a static vocabulary"):
        L.StringLookup(vocabulary=["a"]).adapt(["a"])
    with pytest.raises(ValueError, match="output_mode"):
        L.StringLookup(output_mode="bogus")
    with pytest.raises(ValueError, match="invert"):
        L.StringLookup(invert=True, output_mode="multi_hot")
    with pytest.raises(ValueError, match="string inputs"):
        L.StringLookup(vocabulary=["a"])(ef.constant([1.0]))


def test_integer_lookup():
    layer = L.IntegerLookup(mask_token=0)
    layer.adapt(np.array([[5, 7, 7], [9, 9, 9], [0, 3, 3]]))
    assert layer.get_vocabulary() == [0, -1, 9, 7, 3, 5]
    np.testing.assert_array_equal(_v(layer(ef.constant([[5, 0, 4], [9, 3, 7]]))), [[5, 0, 1], [2, 4, 3]])
    inv = L.IntegerLookup(vocabulary=[12, 36, 1138, 42], invert=True)(ef.constant([[1, 3, 4], [4, 0, 2]]))
    np.testing.assert_array_equal(_v(inv), [[12, 1138, 42], [42, -1, 36]])
    hot = L.IntegerLookup(vocabulary=[12, 36, 1138, 42], output_mode="multi_hot")(
        ef.constant([[12, 1138, 42, 42], [42, 7, 36, 7]]))
    np.testing.assert_array_equal(_v(hot), [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    # Several OOV buckets: floormod by default, FarmHash of the decimal text with oov_method="farmhash".
    two = L.IntegerLookup(vocabulary=[12, 36, 1138, 42], num_oov_indices=2)(
        ef.constant([[12, 1138, 42], [42, 1000, 36]]))
    np.testing.assert_array_equal(_v(two), [[2, 4, 5], [5, 0, 3]])
    x = ef.constant([7, 8, 9, 10, 1])
    np.testing.assert_array_equal(_v(L.IntegerLookup(vocabulary=[1, 2], num_oov_indices=3)(x)),
                                  [7 % 3, 8 % 3, 9 % 3, 10 % 3, 3])
    np.testing.assert_array_equal(_v(L.IntegerLookup(vocabulary=[1, 2], num_oov_indices=3, oov_method="farmhash")(x)),
                                  [1, 1, 2, 2, 3])


# ---------------------------------------------------------------- TextVectorization
def test_text_vectorization_int_mode():
    tv = L.TextVectorization(max_tokens=10, output_sequence_length=5)
    tv.adapt(["The cat sat.", "the dog, the cat!"])
    assert tv.get_vocabulary() == ["", "[UNK]", "the", "cat", "sat", "dog"]
    out = tv(ef.constant(["the cat ran", "dog"]))
    assert out.dtype == ef.int64
    np.testing.assert_array_equal(_v(out), [[2, 3, 1, 0, 0], [5, 0, 0, 0, 0]])
    traced = ef.function(lambda t: tv(t))(ef.constant(["the cat ran", "dog"]))
    np.testing.assert_array_equal(_v(traced), _v(out))
    # Without output_sequence_length: padded to the longest text of the batch; (batch, 1) input too.
    small = L.TextVectorization(max_tokens=4)
    small.adapt(["x y z z y z"])
    assert small.get_vocabulary() == ["", "[UNK]", "z", "y"]
    np.testing.assert_array_equal(_v(small(ef.constant([["z x q"], ["y"]]))), [[2, 1, 1], [3, 0, 0]])


def test_text_vectorization_encodings():
    hot = L.TextVectorization(output_mode="multi_hot")
    hot.adapt(["Hello, world! Hello.", "World peace"])
    assert hot.get_vocabulary() == ["[UNK]", "world", "hello", "peace"]
    np.testing.assert_array_equal(_v(hot(ef.constant(["hello peace", "nothing"]))), [[0, 0, 1, 1], [1, 0, 0, 0]])
    chars = L.TextVectorization(output_mode="count", standardize="lower", split="character")
    chars.adapt(["abca", "Bc"])
    assert chars.get_vocabulary() == ["[UNK]", "c", "b", "a"]
    np.testing.assert_array_equal(_v(chars(ef.constant(["aab", "xc"]))), [[0, 0, 1, 2], [1, 1, 0, 0]])
    grams = L.TextVectorization(ngrams=2, standardize=None, vocabulary=["a", "b", "a b"])
    assert grams.get_vocabulary() == ["", "[UNK]", "a", "b", "a b"]
    np.testing.assert_array_equal(_v(grams(ef.constant(["a b c", "b a"]))), [[2, 3, 1, 4, 1], [3, 2, 1, 0, 0]])


def test_text_vectorization_tf_idf():
    docs = ["a b c", "a b", "c"]
    tv = L.TextVectorization(output_mode="tf_idf", ngrams=2)
    tv.adapt(docs)
    vocab = tv.get_vocabulary()
    assert vocab == ["[UNK]", "c", "b", "a b", "a", "b c"]
    # Keras' idf: log(1 + documents / (1 + documents holding the token)); OOV: the mean.
    doc_tokens = [{"a", "b", "c", "a b", "b c"}, {"a", "b", "a b"}, {"c"}]
    idf = np.array([np.log(1 + 3 / (1 + sum(t in d for d in doc_tokens))) for t in vocab[1:]], np.float32)
    weights = np.concatenate([[idf.mean()], idf])
    out = _v(tv(ef.constant(["a b", "c d"])))
    expected = np.zeros((2, 6), np.float32)
    expected[0, [2, 3, 4]] = weights[[2, 3, 4]]
    expected[1, [0, 1]] = [2 * weights[0], weights[1]]  # "d" and "c d" are both OOV
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_text_vectorization_in_dataset_map_and_fit():
    texts = np.array(["good movie", "bad movie", "great film", "awful film", "good good great", "bad awful"])
    y = np.array([1, 0, 1, 0, 1, 0], "float32")
    tv = L.TextVectorization(max_tokens=20, output_sequence_length=4)
    tv.adapt(ef.data.Dataset.from_tensor_slices(texts).batch(4))
    ds = ef.data.Dataset.from_tensor_slices((texts, y)).batch(2).map(lambda t, lab: (tv(t), lab))
    first, _ = next(iter(ds))
    np.testing.assert_array_equal(_v(first), _v(tv(ef.constant(texts[:2]))))
    inp = keras.Input(shape=(1,), dtype="string")
    h = L.GlobalAveragePooling1D()(L.Embedding(20, 4)(tv(inp)))
    model = keras.Model(inp, L.Dense(1, activation="sigmoid")(h))
    model.compile("adam", "binary_crossentropy")
    hist = model.fit(texts[:, None], y, epochs=2, batch_size=3, verbose=0)
    assert np.all(np.isfinite(hist.history["loss"]))
    assert model.predict(texts[:2, None], verbose=0).shape == (2, 1)


def test_text_vectorization_config_round_trip():
    tv = L.TextVectorization(max_tokens=8, ngrams=2, output_sequence_length=3)
    tv.adapt(["one two three", "two three"])
    config = tv.get_config()
    for key in ("max_tokens", "standardize", "split", "ngrams", "output_mode", "output_sequence_length",
                "pad_to_max_tokens", "sparse", "ragged", "vocabulary", "idf_weights", "encoding", "vocabulary_size"):
        assert key in config
    again = L.TextVectorization.from_config(config)
    assert again.get_vocabulary() == tv.get_vocabulary()
    np.testing.assert_array_equal(_v(again(ef.constant(["two three one"]))), _v(tv(ef.constant(["two three one"]))))


def test_text_vectorization_errors():
    with pytest.raises(ValueError, match="output_sequence_length"):
        L.TextVectorization(output_mode="multi_hot", output_sequence_length=3)
    with pytest.raises(ValueError, match="standardize"):
        L.TextVectorization(standardize="upper")
    with pytest.raises(ValueError, match="string inputs"):
        L.TextVectorization()(ef.constant([1.0]))


# ---------------------------------------------------------------- Hashing, CategoryEncoding, Discretization
def test_hashing_is_tf_farmhash():
    x = ef.constant([["A"], ["B"], ["C"], ["D"], ["E"]])
    np.testing.assert_array_equal(_v(L.Hashing(num_bins=3)(x)), [[1], [0], [1], [1], [2]])
    np.testing.assert_array_equal(_v(L.Hashing(num_bins=3, salt=133)(x)), [[0], [0], [2], [1], [0]])
    masked = L.Hashing(num_bins=3, mask_value="")(ef.constant([["A"], ["B"], [""], ["C"], ["D"]]))
    np.testing.assert_array_equal(_v(masked), [[1], [1], [0], [2], [2]])
    np.testing.assert_array_equal(_v(L.Hashing(num_bins=3)(ef.constant([[1], [2], [3]]))), [[0], [1], [0]])
    np.testing.assert_array_equal(_v(L.Hashing(4, salt=[1, 2])(ef.constant(["x", "y", "z"]))), [2, 1, 0])
    counts = L.Hashing(4, output_mode="count")(ef.constant([["x", "y", "x"]]))
    np.testing.assert_array_equal(_v(counts), [[0, 1, 2, 0]])
    traced = ef.function(lambda t: L.Hashing(num_bins=3)(t))(x)
    np.testing.assert_array_equal(_v(traced), [[1], [0], [1], [1], [2]])


def test_category_encoding_matches_numpy():
    ids = np.array([[0, 1], [0, 0], [1, 2], [3, 1]])
    eye = np.eye(4, dtype=np.float32)
    np.testing.assert_array_equal(_v(L.CategoryEncoding(4, output_mode="one_hot")(ef.constant([3, 2, 0, 1]))),
                                  eye[[3, 2, 0, 1]])
    np.testing.assert_array_equal(_v(L.CategoryEncoding(4, output_mode="multi_hot")(ef.constant(ids))),
                                  np.minimum(eye[ids].sum(1), 1))
    np.testing.assert_array_equal(_v(L.CategoryEncoding(4, output_mode="count")(ef.constant(ids))), eye[ids].sum(1))
    w = np.array([[.1, .2], [.1, .1], [.2, .3], [.4, .2]], np.float32)
    weighted = L.CategoryEncoding(4, output_mode="count")(ef.constant(ids), count_weights=ef.constant(w))
    np.testing.assert_allclose(_v(weighted), (eye[ids] * w[..., None]).sum(1), rtol=1e-6)
    with pytest.raises(ef.errors.InvalidArgumentError, match="num_tokens"):
        L.CategoryEncoding(4)(ef.constant([4]))
    with pytest.raises(ValueError, match="num_tokens"):
        L.CategoryEncoding()


def test_discretization():
    x = np.array([[-1.5, 1.0, 3.4, .5], [0.0, 3.0, 1.3, 0.0]], np.float32)
    out = L.Discretization(bin_boundaries=[0., 1., 2.])(ef.constant(x))
    assert out.dtype == ef.int32
    np.testing.assert_array_equal(_v(out), np.searchsorted([0., 1., 2.], x, side="right"))
    adapted = L.Discretization(num_bins=4, epsilon=0.01)
    adapted.adapt(x)
    np.testing.assert_allclose(adapted.bin_boundaries, [0.0, 0.5, 1.3], rtol=1e-6)
    np.testing.assert_array_equal(_v(adapted(ef.constant(x))), [[0, 2, 3, 2], [1, 3, 3, 1]])
    big = L.Discretization(num_bins=5)
    big.adapt(np.arange(100.))
    np.testing.assert_allclose(big.bin_boundaries, [18.999985, 38.99998, 58.99998, 78.99999], rtol=1e-6)
    np.testing.assert_array_equal(_v(L.Discretization([0., 1.], output_mode="one_hot")(ef.constant([-1., 0.5, 2.]))),
                                  np.eye(3))
    again = L.Discretization.from_config(big.get_config())
    assert again.bin_boundaries == big.bin_boundaries
    with pytest.raises(ValueError, match="either"):
        L.Discretization()
    with pytest.raises(ValueError, match="bin_boundaries"):
        L.Discretization(num_bins=3)(ef.constant([1.0]))


# ---------------------------------------------------------------- image layers
IMG = np.arange(2 * 4 * 4, dtype=np.float32).reshape(2, 4, 4, 1)


def test_resizing_and_center_crop():
    np.testing.assert_allclose(_v(L.Resizing(2, 2)(IMG))[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])
    np.testing.assert_array_equal(_v(L.CenterCrop(2, 2)(IMG))[0, :, :, 0], IMG[0, 1:3, 1:3, 0])
    np.testing.assert_array_equal(_v(L.CenterCrop(3, 3)(IMG))[0, :, :, 0], IMG[0, 0:3, 0:3, 0])
    # Larger than the image: Keras resizes the centred window of the target's aspect ratio.
    up = _v(L.CenterCrop(6, 5)(IMG))[0, :, :, 0]
    np.testing.assert_allclose(up[[0, 2, 5]], [[0, .4, 1, 1.6, 2], [4.666667, 5.066667, 5.666667, 6.266667, 6.666667],
                                               [12, 12.4, 13, 13.6, 14]], rtol=1e-5)
    assert L.Resizing(3, 5)(IMG[0]).shape == (3, 5, 1)  # one image, no batch axis


def test_affine_random_layers_with_fixed_factors():
    # A fixed factor makes the transform known: Keras' results (TF's ImageProjectiveTransformV3).
    np.testing.assert_allclose(_v(L.RandomRotation((0.25, 0.25))(IMG))[0, :, :, 0], np.rot90(IMG[0, :, :, 0]),
                               atol=1e-4)
    np.testing.assert_allclose(_v(L.RandomRotation((0.125, 0.125), fill_mode="nearest")(IMG))[0, :, :, 0],
                               [[1.5, 2.55, 6.086, 9.], [1.136, 4.672, 8.207, 11.743],
                                [3.257, 6.793, 10.328, 13.864], [6., 8.914, 12.45, 13.5]], atol=1e-3)
    np.testing.assert_allclose(_v(L.RandomZoom((0.5, 0.5), fill_mode="constant")(IMG))[0, :, :, 0],
                               [[0., 0.1875, 0.5625, 0.1875], [0.75, 3.75, 5.25, 1.5], [2.25, 9.75, 11.25, 3.],
                                [0.75, 3.1875, 3.5625, 0.9375]], atol=1e-3)
    np.testing.assert_array_equal(_v(L.RandomZoom((-0.5, -0.5), interpolation="nearest")(IMG))[0, :, :, 0],
                                  [[5, 5, 6, 6], [5, 5, 6, 6], [9, 9, 10, 10], [9, 9, 10, 10]])
    shifted = L.RandomTranslation((0.25, 0.25), (0.5, 0.5), fill_mode="constant")(IMG)
    np.testing.assert_array_equal(_v(shifted)[0, :, :, 0],
                                  [[0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 4, 5], [0, 0, 8, 9]])
    np.testing.assert_array_equal(_v(L.RandomTranslation((0.25, 0.25), (0.5, 0.5))(IMG))[0, :, :, 0],
                                  [[1, 0, 0, 1], [1, 0, 0, 1], [5, 4, 4, 5], [9, 8, 8, 9]])


def test_random_layers_are_identity_at_inference():
    layers = [L.RandomFlip(seed=1), L.RandomRotation(0.2), L.RandomZoom(0.3), L.RandomTranslation(0.2, 0.2),
              L.RandomContrast(0.5), L.RandomBrightness(0.3), L.RandomCrop(2, 3)]
    for layer in layers:
        np.testing.assert_array_equal(_v(layer(IMG, training=False)), IMG)
    model = keras.Sequential([keras.Input((4, 4, 1))] + layers[:-1])
    np.testing.assert_array_equal(model.predict(IMG, verbose=0), IMG)


def test_random_flip_statistics_and_contrast_brightness_ranges():
    batch = np.repeat(IMG[:1], 400, axis=0)
    out = _v(L.RandomFlip("horizontal", seed=3)(batch))
    same = np.all(out == batch, axis=(1, 2, 3))
    flipped = np.all(out == batch[:, :, ::-1], axis=(1, 2, 3))
    assert np.all(same | flipped) and 0.4 < flipped.mean() < 0.6
    con = _v(L.RandomContrast((0.5, 0.5), value_range=(0, 1000))(batch))
    mean = batch.mean(axis=(1, 2), keepdims=True)
    factor = (con - mean)[:, 0, 0, 0] / (batch - mean)[:, 0, 0, 0]
    assert np.all(factor >= 0.5 - 1e-5) and np.all(factor <= 1.5 + 1e-5) and factor.std() > 0.05
    bright = _v(L.RandomBrightness((0.1, 0.2), value_range=(0, 100))(batch))
    delta = (bright - batch)[:, 0, 0, 0]
    assert np.all(delta >= 10 - 1e-4) and np.all(delta <= 20 + 1e-4)
    np.testing.assert_allclose(bright - batch, np.broadcast_to(delta[:, None, None, None], batch.shape), atol=1e-4)


def test_random_crop():
    x = np.random.RandomState(0).rand(3, 6, 7, 2).astype(np.float32)
    out = _v(L.RandomCrop(3, 4, seed=0)(x))
    assert out.shape == (3, 3, 4, 2)
    # One window for the whole batch, inside the image.
    hits = [(t, l) for t in range(4) for l in range(4) if np.array_equal(x[:, t:t + 3, l:l + 4], out)]
    assert len(hits) == 1
    assert L.RandomCrop(8, 8)(x).shape == (3, 8, 8, 2)  # smaller than the target: resized
    np.testing.assert_array_equal(_v(L.RandomCrop(3, 4)(x, training=False)), x)  # Keras 3: identity


def test_augmentation_model_fits_traces_and_saves(tmp_path):
    x = np.random.RandomState(1).rand(8, 8, 8, 3).astype(np.float32)
    model = keras.Sequential([
        keras.Input((8, 8, 3)), L.RandomFlip(seed=1), L.RandomRotation(0.1, seed=2), L.RandomZoom(0.1),
        L.RandomTranslation(0.1, 0.1), L.RandomContrast(0.2), L.RandomBrightness(0.1, value_range=(0, 1)),
        L.RandomCrop(6, 6), L.Resizing(4, 4), L.CenterCrop(3, 3), L.Flatten(), L.Dense(1)])
    model.compile("adam", "mse")
    hist = model.fit(x, np.zeros((8, 1), np.float32), epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(hist.history["loss"][0])
    path = os.path.join(tmp_path, "aug.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5)
    ds = ef.data.Dataset.from_tensor_slices(x).batch(4).map(lambda im: L.RandomFlip(seed=4)(im, training=True))
    assert next(iter(ds)).shape == (4, 8, 8, 3)


# ---------------------------------------------------------------- configs and saving
@pytest.mark.parametrize("make", [
    lambda: L.StringLookup(vocabulary=["a", "b"], num_oov_indices=2, mask_token=""),
    lambda: L.IntegerLookup(vocabulary=[3, 4], output_mode="count"),
    lambda: L.Hashing(7, salt=[1, 2], mask_value="m"),
    lambda: L.CategoryEncoding(5, output_mode="count"),
    lambda: L.Discretization(bin_boundaries=[0.5, 1.5]),
    lambda: L.Resizing(3, 4, interpolation="nearest"),
    lambda: L.CenterCrop(2, 2),
    lambda: L.RandomFlip("vertical", seed=5),
    lambda: L.RandomRotation((-0.1, 0.2), fill_mode="constant", fill_value=1.0),
    lambda: L.RandomZoom(0.2, 0.3),
    lambda: L.RandomTranslation(0.1, 0.2),
    lambda: L.RandomContrast(0.5),
    lambda: L.RandomBrightness(0.2, value_range=(0, 1)),
    lambda: L.RandomCrop(2, 3, seed=1),
])
def test_config_round_trip(make):
    layer = make()
    config = layer.get_config()
    again = type(layer).from_config(config)
    assert again.get_config() == config


def test_keras_config_values():
    assert L.RandomContrast(0.5).get_config()["factor"] == (0, 0.5)
    assert L.RandomRotation(0.2).get_config()["factor"] == (-0.2, 0.2)
    assert L.RandomBrightness(0.3).get_config()["factor"] == (-0.3, 0.3)
    sl = L.StringLookup().get_config()
    assert sl["oov_token"] == "[UNK]" and sl["vocabulary_size"] is None and sl["oov_method"] == "floormod"
    assert L.TextVectorization().name.startswith("text_vectorization")


def test_lookup_model_saves_and_loads(tmp_path):
    lookup = L.IntegerLookup()
    lookup.adapt(np.array([5, 7, 7, 9]))
    model = keras.Sequential([keras.Input((3,), dtype="int64"), lookup, L.Embedding(5, 2), L.Flatten(), L.Dense(1)])
    x = np.array([[5, 7, 9], [9, 9, 1]], np.int64)
    path = os.path.join(tmp_path, "lookup.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    assert loaded.layers[0].get_vocabulary() == [-1, 7, 9, 5]


def test_string_input_model_loads(tmp_path):
    lookup = L.StringLookup(vocabulary=["a", "b"])
    inp = keras.Input((1,), dtype="string")
    model = keras.Model(inp, L.Dense(1)(L.CategoryEncoding(3)(lookup(inp))))
    path = os.path.join(tmp_path, "text.keras")
    model.save(path)
    keras.models.load_model(path)


# ---------------------------------------------------------------- Normalization(axis=None), the defect
def test_normalization_axis_none_adapted_on_a_vector_takes_model_input():
    values = np.random.RandomState(0).rand(314).astype(np.float32) * 100
    declared = L.Normalization(input_shape=[1], axis=None)
    declared.adapt(values)
    np.testing.assert_allclose(_v(declared.mean), values.mean(), rtol=1e-5)
    np.testing.assert_allclose(_v(declared.variance), values.var(), rtol=1e-4)
    model = keras.Sequential([declared, L.Dense(1)])
    assert model(np.ones((3, 1), np.float32)).shape == (3, 1)
    later = L.Normalization(axis=None)
    inner = keras.Sequential([keras.Input((1,)), later])
    later.adapt(values)  # adapted after the model built it for [None, 1]
    out = _v(inner(np.array([[values.mean() + values.std()]], np.float32)))
    np.testing.assert_allclose(out, [[1.0]], rtol=1e-4)
    inner.compile("adam", "mse")
    assert np.isfinite(inner.fit(values[:, None], values[:, None], epochs=1, verbose=0).history["loss"][0])


def test_normalization_adapts_on_a_dataset():
    data = np.arange(12.0).reshape(6, 2)
    norm = L.Normalization()
    norm.adapt(ef.data.Dataset.from_tensor_slices(data).batch(4))
    np.testing.assert_allclose(_v(norm.mean), data.mean(0), rtol=1e-6)
    np.testing.assert_allclose(_v(norm.variance), data.var(0), rtol=1e-6)


def test_names_exist():
    for name in ["TextVectorization", "StringLookup", "IntegerLookup", "CategoryEncoding", "Hashing",
                 "Discretization", "Rescaling", "Resizing", "CenterCrop", "RandomFlip", "RandomRotation",
                 "RandomZoom", "RandomTranslation", "RandomContrast", "RandomBrightness", "RandomCrop",
                 "Normalization"]:
        assert hasattr(L, name) and hasattr(ef.keras.layers, name)


def test_ragged_inputs_and_outputs():
    rows = L.TextVectorization(ragged=True, vocabulary=["a", "b"])(ef.constant(["a b c", "b"]))
    assert rows.to_list() == [[2, 3, 1], [3]]
    looked = L.StringLookup(vocabulary=["a", "b"])(ef.ragged.constant([["a", "b", "c"], ["b"]]))
    assert looked.to_list() == [[1, 2, 0], [2]]
    scalar = L.StringLookup(vocabulary=["a", "b"])(ef.constant("a"))
    assert scalar.shape == () and int(scalar) == 1


def test_image_layers_give_the_compute_dtype_under_mixed_precision():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        layers = [L.Resizing(2, 2), L.CenterCrop(2, 2), L.RandomFlip(), L.RandomRotation(0.1), L.RandomZoom(0.1),
                  L.RandomTranslation(0.1, 0.1), L.RandomContrast(0.1), L.RandomBrightness(0.1), L.RandomCrop(2, 2)]
        for layer in layers:
            assert layer(IMG).dtype.name == "bfloat16", type(layer).__name__
        # Keras' lookups and encodings keep their own dtypes under a mixed policy.
        assert L.Discretization([0.5])(ef.constant([1.0])).dtype == ef.int32
        assert L.StringLookup(vocabulary=["a"])(ef.constant(["a"])).dtype == ef.int64
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_normalization_axis_none_takes_any_rank_in_the_core_layer():
    # The C++ layer itself (what a reloaded model holds): one mean and variance over every value.
    norm = ef.keras.layers.Normalization(axis=None)
    data = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    norm.adapt(data)
    out = norm(np.array([[1.0], [4.0]], np.float32)).numpy()
    np.testing.assert_allclose(out, (np.array([[1.0], [4.0]]) - 2.5) / np.sqrt(1.25), rtol=1e-6)
