"""ef.keras.utils (and keras.preprocessing): results as Keras 3's, with reference values worked
out here with NumPy and Python from Keras' documented rules."""
import io
import json
import os
import random
import tarfile

import numpy as np
import pytest

import eagerflow as ef

U = ef.keras.utils


def test_to_categorical():
    got = U.to_categorical([[1], [3], [0]])
    np.testing.assert_array_equal(got, np.eye(4)[[1, 3, 0]])
    assert got.dtype == np.float64 and got.shape == (3, 4)
    got = U.to_categorical(np.array([[2, 0], [1, 1]]), num_classes=3)
    assert got.shape == (2, 2, 3)
    np.testing.assert_array_equal(got[0, 0], [0, 0, 1])
    t = U.to_categorical(ef.constant([2, 0]), 3)
    assert isinstance(t, ef.Tensor)
    np.testing.assert_array_equal(t.numpy(), np.eye(3)[[2, 0]])


def test_normalize():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(U.normalize(x), [[0.6, 0.8], [0.0, 0.0]])
    # Keras divides by the norms along axis but re-expands them on axis -1 when axis is 0 ("axis or -1")
    np.testing.assert_allclose(U.normalize(np.array([[3.0, 4.0], [1.0, 1.0]]), order=1, axis=0),
                               [[0.75, 1.0], [0.2, 0.2]])
    np.testing.assert_allclose(U.normalize(np.array([[3.0, 4.0], [1.0, 1.0]]), order=1, axis=1),
                               [[3 / 7, 4 / 7], [0.5, 0.5]])
    t = U.normalize(ef.constant([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(t.numpy(), [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)
    with pytest.raises(ValueError, match="order"):
        U.normalize(ef.constant([1.0]), order=0)


def test_pad_sequences():
    seqs = [[1, 2, 3], [4], []]
    np.testing.assert_array_equal(U.pad_sequences(seqs), [[1, 2, 3], [0, 0, 4], [0, 0, 0]])
    got = U.pad_sequences(seqs, maxlen=2, padding="post", truncating="post", value=-1)
    np.testing.assert_array_equal(got, [[1, 2], [4, -1], [-1, -1]])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(U.pad_sequences(seqs, maxlen=2), [[2, 3], [0, 4], [0, 0]])
    f = U.pad_sequences([[1.5, 2.5], [3.5]], dtype="float32")
    np.testing.assert_array_equal(f, np.array([[1.5, 2.5], [0, 3.5]], np.float32))
    vec = U.pad_sequences([np.ones((2, 3)), np.ones((1, 3))])
    assert vec.shape == (2, 2, 3) and vec[1, 0].sum() == 0
    assert ef.keras.preprocessing.sequence.pad_sequences is U.pad_sequences
    with pytest.raises(ValueError, match="Padding type"):
        U.pad_sequences(seqs, padding="middle")
    with pytest.raises(ValueError, match="dtype=object"):
        U.pad_sequences([["a"]], value="x")
    with pytest.raises(ValueError, match="non-iterable"):
        U.pad_sequences([1, 2])


def _write_images(root, sizes_per_class, fmt="png"):
    from PIL import Image
    rng = np.random.default_rng(0)
    arrays = {}
    for cls, sizes in sizes_per_class.items():
        (root / cls).mkdir(parents=True)
        for i, (h, w) in enumerate(sizes):
            a = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
            Image.fromarray(a).save(root / cls / f"{i}.{fmt}")
            arrays[f"{cls}/{i}.{fmt}"] = a
    return arrays


def _keras_order(paths, seed):
    """The files in Keras' order: sorted per class, then shuffled by RandomState(seed)."""
    paths = list(paths)
    np.random.RandomState(seed).shuffle(paths)
    return paths


def test_image_dataset_unshuffled_values(tmp_path):
    arrays = _write_images(tmp_path, {"b": [(4, 4), (4, 4)], "a": [(4, 4)]})
    (tmp_path / "a" / "notes.txt").write_text("not an image")
    ds = U.image_dataset_from_directory(tmp_path, image_size=(4, 4), batch_size=2, shuffle=False)
    batches = [(x.numpy(), y.numpy()) for x, y in ds]
    assert [b[0].shape for b in batches] == [(2, 4, 4, 3), (1, 4, 4, 3)]
    assert batches[0][0].dtype == np.float32 and batches[0][1].dtype == np.int32
    images = np.concatenate([b[0] for b in batches])
    labels = np.concatenate([b[1] for b in batches])
    np.testing.assert_array_equal(labels, [0, 1, 1])  # classes "a", "b" in sorted order
    for got, name in zip(images, ["a/0.png", "b/0.png", "b/1.png"]):
        np.testing.assert_array_equal(got, arrays[name].astype(np.float32))  # same size: resize keeps the values


def test_image_dataset_label_modes_and_resize(tmp_path):
    _write_images(tmp_path, {"x": [(8, 6), (5, 5)], "y": [(7, 9)]})
    ds = U.image_dataset_from_directory(tmp_path, image_size=3, batch_size=None, shuffle=False,
                                        label_mode="categorical", color_mode="rgba")
    items = list(ds.as_numpy_iterator())
    assert items[0][0].shape == (3, 3, 4)
    np.testing.assert_array_equal(np.stack([i[1] for i in items]), [[1, 0], [1, 0], [0, 1]])
    ds = U.image_dataset_from_directory(tmp_path, image_size=(2, 3), shuffle=False, label_mode="binary",
                                        interpolation="nearest", color_mode="grayscale")
    x, y = next(iter(ds))
    assert x.shape == (3, 2, 3, 1) and x.dtype == ef.uint8  # nearest keeps the decoded dtype, as tf.image.resize
    np.testing.assert_array_equal(y.numpy(), [[0.0], [0.0], [1.0]])
    only = U.image_dataset_from_directory(tmp_path, labels=None, image_size=(2, 2), shuffle=False)
    assert list(only.element_spec.shape) == [None, 2, 2, 3]
    given = U.image_dataset_from_directory(tmp_path / "x", labels=[5, 7], image_size=(2, 2), shuffle=False)
    np.testing.assert_array_equal(next(iter(given))[1].numpy(), [5, 7])


def test_image_dataset_shuffle_and_split(tmp_path):
    _write_images(tmp_path, {"a": [(3, 3)] * 6, "b": [(3, 3)] * 4})
    files = [f"a/{i}.png" for i in range(6)] + [f"b/{i}.png" for i in range(4)]
    order = _keras_order(files, 7)
    train, val = U.image_dataset_from_directory(tmp_path, image_size=(3, 3), seed=7, validation_split=0.3,
                                                subset="both", batch_size=4)
    val_labels = np.concatenate([y.numpy() for _, y in val])
    np.testing.assert_array_equal(val_labels, [0 if f.startswith("a") else 1 for f in order[-3:]])
    train_labels = np.concatenate([y.numpy() for _, y in train])
    assert sorted(train_labels) == sorted(0 if f.startswith("a") else 1 for f in order[:-3])
    alone = U.image_dataset_from_directory(tmp_path, image_size=(3, 3), seed=7, validation_split=0.3,
                                           subset="validation", batch_size=4)
    np.testing.assert_array_equal(np.concatenate([y.numpy() for _, y in alone]), val_labels)
    with pytest.raises(ValueError, match="seed"):
        U.image_dataset_from_directory(tmp_path, validation_split=0.3, subset="training")
    with pytest.raises(ValueError, match="subset"):
        U.image_dataset_from_directory(tmp_path, validation_split=0.3, seed=1)


def test_image_dataset_attributes(tmp_path):
    _write_images(tmp_path, {"cat": [(3, 3)], "dog": [(3, 3)]})
    ds = U.image_dataset_from_directory(tmp_path, image_size=(3, 3), shuffle=False)
    if not hasattr(ds, "__dict__"):
        pytest.skip("this core's Dataset takes no Python attributes (class_names needs nb::dynamic_attr)")
    assert ds.class_names == ["cat", "dog"]
    assert ds.file_paths == [os.path.join(str(tmp_path), "cat", "0.png"), os.path.join(str(tmp_path), "dog", "0.png")]


def test_image_dataset_crop_to_aspect_ratio(tmp_path):
    arrays = _write_images(tmp_path, {"a": [(4, 8)]})
    if not hasattr(ef._core, "_host_call"):
        pytest.skip("this core has no host calls (ef.py_function in a pipeline)")
    ds = U.image_dataset_from_directory(tmp_path, image_size=(4, 4), shuffle=False, crop_to_aspect_ratio=True)
    x = next(iter(ds))[0].numpy()[0]
    np.testing.assert_array_equal(x, arrays["a/0.png"][:, 2:6].astype(np.float32))  # the centred 4x4 crop


def test_image_dataset_errors(tmp_path):
    _write_images(tmp_path, {"a": [(3, 3)], "b": [(3, 3)], "c": [(3, 3)]})
    with pytest.raises(ValueError, match="exactly 2"):
        U.image_dataset_from_directory(tmp_path, label_mode="binary")
    with pytest.raises(ValueError, match="color_mode"):
        U.image_dataset_from_directory(tmp_path, color_mode="cmyk")
    with pytest.raises(ValueError, match="class_names"):
        U.image_dataset_from_directory(tmp_path, class_names=["a", "zzz"])
    with pytest.raises(ValueError, match="interpolation"):
        U.image_dataset_from_directory(tmp_path, interpolation="cubic")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="No images"):
        U.image_dataset_from_directory(tmp_path / "empty", labels=None)
    sub = U.image_dataset_from_directory(tmp_path, class_names=["c", "a"], shuffle=False, image_size=(3, 3))
    np.testing.assert_array_equal(next(iter(sub))[1].numpy(), [0, 1])  # the given order


def test_image_dataset_trains_a_model(tmp_path):
    from PIL import Image
    for cls, value in (("dark", 20), ("light", 230)):
        (tmp_path / cls).mkdir()
        for i in range(8):
            Image.fromarray(np.full((6, 6, 3), value + i, np.uint8)).save(tmp_path / cls / f"{i}.png")
    ds = U.image_dataset_from_directory(tmp_path, image_size=(4, 4), batch_size=4, seed=3)
    model = ef.keras.Sequential([ef.keras.Input((4, 4, 3)), ef.keras.layers.Rescaling(1 / 127.5, offset=-1),
                                 ef.keras.layers.Flatten(), ef.keras.layers.Dense(2)])
    model.compile(ef.keras.optimizers.Adam(0.05), ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(ds, epochs=8, verbose=0)
    assert model.evaluate(ds, verbose=0, return_dict=True)["accuracy"] == 1.0


def test_text_dataset(tmp_path):
    for cls, texts in (("neg", ["bad film", "awful"]), ("pos", ["great", "loved it", "superb acting"])):
        (tmp_path / cls).mkdir()
        for i, t in enumerate(texts):
            (tmp_path / cls / f"{i}.txt").write_text(t)
    ds = U.text_dataset_from_directory(tmp_path, batch_size=2, shuffle=False, max_length=5)
    texts, labels = zip(*[(x.numpy(), y.numpy()) for x, y in ds])
    assert list(np.concatenate(texts)) == [b"bad f", b"awful", b"great", b"loved", b"super"]
    np.testing.assert_array_equal(np.concatenate(labels), [0, 0, 1, 1, 1])
    order = _keras_order([f"neg/{i}.txt" for i in range(2)] + [f"pos/{i}.txt" for i in range(3)], 11)
    val = U.text_dataset_from_directory(tmp_path, seed=11, validation_split=0.4, subset="validation")
    got = [t for x, _ in val for t in x.numpy()]
    want = [(tmp_path / f).read_bytes() for f in order[-2:]]
    assert sorted(got) == sorted(want)  # the files of the split; their order is the shuffle buffer's
    with pytest.raises(ValueError, match="label_mode"):
        U.text_dataset_from_directory(tmp_path, label_mode="sparse")


def test_timeseries_dataset():
    data = np.arange(40.0).reshape(20, 2)
    targets = np.arange(20) * 10
    ds = U.timeseries_dataset_from_array(data, targets, sequence_length=4, sequence_stride=3, sampling_rate=2,
                                         batch_size=3, start_index=1, end_index=18)
    xs, ys = zip(*[(x.numpy(), y.numpy()) for x, y in ds])
    x, y = np.concatenate(xs), np.concatenate(ys)
    starts = np.arange(0, 17 - 3 * 2, 3)  # end - start - (length - 1) * rate windows, every stride-th
    np.testing.assert_array_equal(x, np.stack([data[1:18][s:s + 8:2] for s in starts]))
    np.testing.assert_array_equal(y, targets[1:18][starts])
    assert x.dtype == np.float64
    order = np.arange(0, 17, 1, dtype=np.int32)
    np.random.RandomState(5).shuffle(order)
    windows = U.timeseries_dataset_from_array(np.arange(20), None, sequence_length=4, batch_size=None, shuffle=True,
                                              seed=5)
    firsts = sorted(int(w[0]) for w in windows.as_numpy_iterator())
    assert firsts == list(range(17))
    with pytest.raises(ValueError, match="sampling_rate"):
        U.timeseries_dataset_from_array(data, None, 3, sampling_rate=0)
    with pytest.raises(ValueError, match="end_index"):
        U.timeseries_dataset_from_array(data, None, 3, end_index=25)


def test_split_dataset():
    x, y = np.arange(10), np.arange(10) * 2
    left, right = U.split_dataset((x, y), left_size=0.7, shuffle=True, seed=4)
    rows = list(zip(x, y))
    random.Random(4).shuffle(rows)
    assert [tuple(map(int, r)) for r in left.as_numpy_iterator()] == [tuple(map(int, r)) for r in rows[:7]]
    assert [tuple(map(int, r)) for r in right.as_numpy_iterator()] == [tuple(map(int, r)) for r in rows[7:]]
    left, right = U.split_dataset(np.arange(12.0).reshape(6, 2), right_size=2)
    assert left.cardinality() == 4 and right.cardinality() == 2
    np.testing.assert_array_equal(list(right.as_numpy_iterator())[0], [8.0, 9.0])
    batched = ef.data.Dataset.from_tensor_slices(np.arange(10)).batch(4)
    left, right = U.split_dataset(batched, left_size=6)
    assert [list(b) for b in left.as_numpy_iterator()] == [[0, 1, 2, 3], [4, 5]]
    with pytest.raises(ValueError, match="At least one"):
        U.split_dataset(x)
    with pytest.raises(ValueError, match="left_size"):
        U.split_dataset(x, left_size=10)
    with pytest.raises(TypeError, match="left_size"):
        U.split_dataset(x, left_size="half")


def test_get_file(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    url = "https://example.com/files/data.csv"
    with pytest.raises(FileNotFoundError, match=url):
        U.get_file(origin=url)
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "data.csv").write_text("a,b\n")
    assert U.get_file(origin=url) == str(tmp_path / "datasets" / "data.csv")
    import hashlib
    good = hashlib.sha256(b"a,b\n").hexdigest()
    assert U.get_file("data.csv", url, file_hash=good).endswith("data.csv")
    with pytest.raises(ValueError, match="hash"):
        U.get_file("data.csv", url, file_hash="0" * 64)
    other = tmp_path / "mine"
    (other / "models").mkdir(parents=True)
    (other / "models" / "w.bin").write_bytes(b"x")
    assert U.get_file("w.bin", "https://x/w.bin", cache_dir=str(other), cache_subdir="models") == \
        str(other / "models" / "w.bin")
    with pytest.raises(ValueError, match="origin"):
        U.get_file("data.csv")
    with pytest.raises(ValueError, match="cache_dir"):
        U.get_file("a/b.csv", url)


def test_get_file_extracts_cached_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    src = tmp_path / "src" / "flowers"
    (src / "roses").mkdir(parents=True)
    (src / "roses" / "r.txt").write_text("rose")
    (tmp_path / "datasets").mkdir()
    with tarfile.open(tmp_path / "datasets" / "flower_photos.tgz", "w:gz") as t:
        t.add(src, arcname="flowers")
    path = U.get_file("flower_photos.tgz", "https://x/flower_photos.tgz", extract=True)
    assert path == str(tmp_path / "datasets" / "flower_photos_extracted")
    assert (tmp_path / "datasets" / "flower_photos_extracted" / "flowers" / "roses" / "r.txt").read_text() == "rose"
    os.rename(tmp_path / "datasets" / "flower_photos.tgz", tmp_path / "datasets" / "flowers_archive")
    path = U.get_file("flowers", "https://x/flower_photos.tgz", untar=True)
    assert os.path.isfile(os.path.join(path, "flowers", "roses", "r.txt"))


def test_progbar(capsys):
    bar = U.Progbar(4, verbose=2, stateful_metrics=["acc"])
    bar.update(1, [("loss", 1.0), ("acc", 0.5)])
    bar.update(3, [("loss", 3.0), ("acc", 0.7)])
    assert capsys.readouterr().out == ""  # verbose=2 prints when the target is reached
    bar.update(4, [("loss", 5.0), ("acc", 0.9)])
    out = capsys.readouterr().out
    # loss: the mean weighted by steps (1*1 + 3*2 = 7 over 3 steps), then the final value replaces it (Keras);
    # acc: stateful, the last value
    assert out.startswith("4/4 - ") and "loss: 5.0000" in out and "acc: 0.9000" in out and out.endswith("\n")
    bar = U.Progbar(None, verbose=1, interval=0)
    bar.add(2, [("loss", 2.0)])
    bar.add(2, [("loss", 4.0)])
    out = capsys.readouterr().out
    assert "4/Unknown" in out and "loss: 3.0000" in out
    U.disable_interactive_logging()  # messages go to logging, not stdout
    try:
        U.Progbar(1, verbose=2).update(1, [("loss", 1.0)])
    finally:
        U.enable_interactive_logging()
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError):
        U.Progbar(3, stateful_metrics=["a"], stateless_metrics=["b"])


def test_custom_objects_and_serialization():
    @U.register_keras_serializable(package="Tests")
    def twice(x):
        return 2 * x

    @U.register_keras_serializable(package="Tests")
    class Scale:
        def __init__(self, factor=1.0):
            self.factor = factor

        def get_config(self):
            return {"factor": self.factor}

        @classmethod
        def from_config(cls, config):
            return cls(**config)

    assert ef.keras.saving.register_keras_serializable is U.register_keras_serializable  # one registry, as Keras
    assert ef.keras.saving.get_custom_objects()["Tests>twice"] is twice
    assert U.get_registered_name(Scale) == "Tests>Scale" and U.get_registered_object("Tests>Scale") is Scale
    config = U.serialize_keras_object(Scale(3.0))
    assert config == {"module": None, "class_name": "Scale", "config": {"factor": 3.0},
                      "registered_name": "Tests>Scale"}
    assert U.deserialize_keras_object(json.loads(json.dumps(config))).factor == 3.0
    assert U.serialize_keras_object(twice)["config"] == "Tests>twice"
    assert U.deserialize_keras_object(U.serialize_keras_object(twice)) is twice
    assert U.serialize_keras_object(ef.keras.activations.relu) == {
        "module": "builtins", "class_name": "function", "config": "relu", "registered_name": "function"}
    assert U.deserialize_keras_object(U.serialize_keras_object(ef.keras.activations.relu)) is ef.keras.activations.relu
    arr = U.serialize_keras_object(np.array([1, 2]))
    assert arr == {"class_name": "__numpy__", "config": {"value": [1, 2], "dtype": "int64"}}
    np.testing.assert_array_equal(U.deserialize_keras_object(arr), [1, 2])
    assert U.serialize_keras_object([1, "a", None, (2, 3)]) == [1, "a", None, (2, 3)]
    assert U.deserialize_keras_object("relu") == "relu"
    dense = U.serialize_keras_object(ef.keras.layers.Dense(3))
    assert dense["module"] == "keras.layers" and dense["class_name"] == "Dense" and dense["config"]["units"] == 3
    assert U.deserialize_keras_object(dense).get_config()["units"] == 3

    class Local:
        @classmethod
        def from_config(cls, config):
            return ("local", config)
    with pytest.raises(TypeError, match="Could not locate class 'Local'"):
        U.deserialize_keras_object({"class_name": "Local", "config": {}})
    with U.custom_object_scope({"Local": Local}) as scope:
        assert isinstance(scope, U.CustomObjectScope)
        assert U.get_registered_object("Local") is Local
        assert U.deserialize_keras_object({"class_name": "Local", "config": {"k": 1}}) == ("local", {"k": 1})
        assert "Local" not in U.get_custom_objects()
    assert U.get_registered_object("Local") is None
    assert U.deserialize_keras_object({"class_name": "Local", "config": {}}, custom_objects={"Local": Local})[0] == \
        "local"
    with pytest.raises(ValueError, match="get_config"):
        U.register_keras_serializable()(type("NoConfig", (), {}))


def test_registered_python_layer_round_trips_through_load_model(tmp_path):
    @U.register_keras_serializable(package="UtilsTest")
    class Double(ef.keras.layers.Layer):
        def call(self, x):
            return 2.0 * x

    model = ef.keras.Sequential([ef.keras.Input((3,)), Double()])
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = ef.keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(np.ones((1, 3), np.float32)), [[2.0, 2.0, 2.0]])


class _Batches(U.PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size
        self.epochs_ended = 0

    def __len__(self):
        return int(np.ceil(len(self.x) / self.batch_size))

    def __getitem__(self, i):
        s = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[s], self.y[s]

    def on_epoch_end(self):
        self.epochs_ended += 1


def test_py_dataset_in_fit_evaluate_predict():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    data = _Batches(x, y, 8)
    assert data.num_batches == 5 and len(list(iter(data))) == 5
    assert U.Sequence is U.PyDataset
    model = ef.keras.Sequential([ef.keras.Input((3,)), ef.keras.layers.Dense(1)])
    model.compile(ef.keras.optimizers.SGD(0.1), "mse")
    history = model.fit(data, epochs=4, verbose=0)
    assert data.epochs_ended == 4
    assert history.history["loss"][-1] < history.history["loss"][0] / 5
    loss = model.evaluate(data, verbose=0)
    assert abs(loss - float(np.mean((model.predict(x, verbose=0) - y) ** 2))) < 1e-5
    assert model.predict(data, verbose=0).shape == (40, 1)
    with pytest.raises(ValueError, match="`y` should not be passed"):
        model.fit(data, y, verbose=0)


def test_set_random_seed():
    U.set_random_seed(3)
    a = (random.random(), np.random.rand(), ef.random.uniform([2]).numpy())
    U.set_random_seed(3)
    b = (random.random(), np.random.rand(), ef.random.uniform([2]).numpy())
    assert a[0] == b[0] and a[1] == b[1]
    np.testing.assert_array_equal(a[2], b[2])
    with pytest.raises(ValueError, match="integer"):
        U.set_random_seed(1.5)


def test_small_helpers():
    assert U.pack_x_y_sample_weight(1) == 1 and U.pack_x_y_sample_weight((1, 2)) == ((1, 2),)
    assert U.pack_x_y_sample_weight(1, 2, 3) == (1, 2, 3)
    assert U.unpack_x_y_sample_weight((1, 2)) == (1, 2, None) and U.unpack_x_y_sample_weight(5) == (5, None, None)
    assert U.standardize_dtype(np.float64) == "float64" and U.standardize_dtype("int") == "int64"
    assert U.standardize_dtype(float) == "float32" and U.standardize_dtype(None) == "float32"
    with pytest.raises(ValueError, match="Invalid dtype"):
        U.standardize_dtype("float")
    c = U.Config(a=1)
    c.b = 2
    assert c.as_dict() == {"a": 1, "b": 2} and c["a"] == 1 and json.loads(c.to_json()) == {"a": 1, "b": 2}
    c.freeze()
    with pytest.raises(ValueError, match="frozen"):
        c.d = 3
    x = ef.keras.Input((3,))
    assert U.is_keras_tensor(x) and U.is_keras_tensor(ef.keras.layers.Dense(2)(x))
    assert not U.is_keras_tensor(ef.constant([1.0])) and not U.is_keras_tensor(np.ones(2))
    assert U.is_interactive_logging_enabled()
    U.disable_interactive_logging()
    assert not U.is_interactive_logging_enabled()
    U.enable_interactive_logging()


def test_image_helpers(tmp_path):
    a = np.zeros((4, 6, 3), np.float32)
    a[:, :, 0] = 10.0
    a[0, 0, 1] = 20.0
    img = U.array_to_img(a)
    assert img.size == (6, 4) and img.mode == "RGB"
    back = U.img_to_array(img)
    assert back.dtype == np.float32 and back.shape == (4, 6, 3)
    assert back[0, 0, 1] == 255.0 and back[1, 1, 0] == 127.0  # scaled by min and max to 0..255
    path = tmp_path / "x.png"
    U.save_img(path, a, scale=False)
    loaded = U.load_img(path)
    np.testing.assert_array_equal(U.img_to_array(loaded), a)
    assert U.img_to_array(U.load_img(path, color_mode="grayscale")).shape == (4, 6, 1)
    assert U.load_img(path, target_size=(2, 3)).size == (3, 2)
    assert U.load_img(io.BytesIO(path.read_bytes())).size == (6, 4)
    assert ef.keras.preprocessing.image.load_img is U.load_img


def test_smart_resize():
    x = np.arange(4 * 8 * 1, dtype=np.float32).reshape(4, 8, 1)
    out = ef.keras.preprocessing.image.smart_resize(x, (4, 4))
    np.testing.assert_array_equal(out.numpy(), x[:, 2:6])  # the centred 4x4 crop, not resized
    batch = ef.keras.preprocessing.image.smart_resize(np.stack([x, x]), (2, 2))
    assert tuple(batch.shape) == (2, 2, 2, 1)
    with pytest.raises(ValueError, match="rank"):
        ef.keras.preprocessing.image.smart_resize(np.zeros((3, 3)), (2, 2))


def _two_branch_model():
    i = ef.keras.Input(shape=(4,), name="inp")
    a = ef.keras.layers.Dense(3, activation="relu")(i)
    b = ef.keras.layers.Dense(3)(i)
    return ef.keras.Model(i, ef.keras.layers.Add()([a, b]))


def test_plot_model_graph(tmp_path):
    path = tmp_path / "m.dot"
    model = _two_branch_model()
    U.plot_model(model, to_file=str(path), show_shapes=True, show_layer_names=True, show_layer_activations=True)
    text = path.read_text()
    first, _, add = (layer.name for layer in model.layers)
    assert text.startswith('digraph "') and "inp (InputLayer)" in text and f"{first} (Dense)" in text
    assert "Activation: relu" in text and "Output shape: (None, 3)" in text and f"{add} (Add)" in text
    edges = sorted(line.strip() for line in text.splitlines() if "->" in line)
    assert edges == ["input_0 -> layer_0;", "input_0 -> layer_1;", "layer_0 -> layer_2;", "layer_1 -> layer_2;"]
    seq = ef.keras.Sequential([ef.keras.Input((3,)), ef.keras.layers.Dense(2), ef.keras.layers.Dense(1)])
    U.plot_model(seq, to_file=str(tmp_path / "s.dot"))
    assert "layer_0 -> layer_1;" in (tmp_path / "s.dot").read_text()

    class Sub(ef.keras.Model):
        def call(self, x):
            return x
    with pytest.raises(ValueError, match="subclassed"):
        U.plot_model(Sub(), to_file=str(tmp_path / "x.dot"))


@pytest.mark.skipif(__import__("shutil").which("dot") is None, reason="Graphviz's dot is not installed")
def test_plot_model_png_and_svg(tmp_path):
    U.plot_model(_two_branch_model(), to_file=str(tmp_path / "m.png"), show_shapes=True)
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    U.plot_model(_two_branch_model(), to_file=str(tmp_path / "m.svg"))
    assert "<svg" in (tmp_path / "m.svg").read_text()


_SAVE_QUADRUPLE = """
import sys
import eagerflow as ef
class Quadruple(ef.keras.layers.Layer):
    def call(self, x):
        return 4.0 * x
ef.keras.Sequential([ef.keras.Input((2,)), Quadruple()]).save(sys.argv[1])
"""


def test_load_model_uses_custom_object_scope(tmp_path):
    import subprocess
    import sys
    path = str(tmp_path / "m.keras")
    # Saved by another process, so that this one has registered no class of that name.
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ef.__file__)))
    subprocess.run([sys.executable, "-c", _SAVE_QUADRUPLE, path], check=True, env=env)

    class Quadruple(ef.keras.layers.Layer):
        def call(self, x):
            return 4.0 * x

    with pytest.raises(ef.errors.NotFoundError, match="Quadruple"):
        ef.keras.models.load_model(path)
    with U.custom_object_scope({"Quadruple": Quadruple}):
        loaded = ef.keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(np.ones((1, 2), np.float32), verbose=0), [[4.0, 4.0]])


def test_preprocessing_text_tokenizer():
    text = ef.keras.preprocessing.text
    assert text.text_to_word_sequence("Hello, World! It's  me") == ["hello", "world", "it's", "me"]
    texts = ["The cat sat on the mat.", "The dog ate my homework!", "a cat"]
    tok = text.Tokenizer(num_words=4, oov_token="<OOV>")
    tok.fit_on_texts(texts)
    # the OOV token is 1; then by count ("the" 3, "cat" 2), ties in first-seen order ("sat" before "on")
    assert list(tok.word_index.items())[:5] == [("<OOV>", 1), ("the", 2), ("cat", 3), ("sat", 4), ("on", 5)]
    assert tok.texts_to_sequences(["the cat sat", "zebra"]) == [[2, 3, 1], [1]]  # index >= num_words: OOV
    assert tok.sequences_to_texts([[2, 3, 9]]) == ["the cat <OOV>"]
    m = tok.texts_to_matrix(["the the cat"], mode="count")
    np.testing.assert_array_equal(m, [[0, 0, 2, 1]])
    tfidf = tok.texts_to_matrix(["the"], mode="tfidf")
    assert tfidf[0, 2] == pytest.approx(np.log(1 + 3 / (1 + 2)))  # "the" is in 2 of the 3 texts
    again = text.tokenizer_from_json(tok.to_json())
    assert again.word_index == tok.word_index and again.texts_to_sequences(texts) == tok.texts_to_sequences(texts)
    assert text.hashing_trick("the cat the", 10, hash_function="md5")[0] == \
        int(__import__("hashlib").md5(b"the").hexdigest(), 16) % 9 + 1
    with pytest.raises(ValueError, match="num_words"):
        text.Tokenizer().texts_to_matrix(["x"])


def test_preprocessing_sequence_word2vec_helpers():
    seq = ef.keras.preprocessing.sequence
    table = seq.make_sampling_table(5)
    rank = np.array([1, 1, 2, 3, 4])
    f = 1e-5 * (rank * (np.log(rank) + 0.577) + 0.5 - 1 / (12.0 * rank))
    np.testing.assert_allclose(table, np.minimum(1.0, f / np.sqrt(f)))
    couples, labels = seq.skipgrams([1, 2, 0, 3], 5, window_size=1, negative_samples=0, shuffle=False)
    assert couples == [[1, 2], [2, 1]] and labels == [1, 1]  # index 0 is padding: no pairs with it
    random.seed(1)
    couples, labels = seq.skipgrams([1, 2, 3], 5, window_size=1, negative_samples=1.0, seed=3)
    assert len(couples) == 8 and sorted(labels) == [0] * 4 + [1] * 4
    positives = sorted(c for c, l in zip(couples, labels) if l == 1)
    assert positives == [[1, 2], [2, 1], [2, 3], [3, 2]]
    assert all(1 <= c[1] <= 4 for c, l in zip(couples, labels) if l == 0)


def test_image_dataset_pad_and_channels_first(tmp_path):
    arrays = _write_images(tmp_path, {"a": [(2, 4)]})
    if hasattr(ef._core, "_host_call"):  # padding runs as a host call in the pipeline
        ds = U.image_dataset_from_directory(tmp_path, image_size=(4, 4), shuffle=False, pad_to_aspect_ratio=True)
        x = next(iter(ds))[0].numpy()[0]
        np.testing.assert_array_equal(x[1:3], arrays["a/0.png"].astype(np.float32))  # the 2x4 image, centred
        assert not x[0].any() and not x[3].any()  # padded rows
    first = U.image_dataset_from_directory(tmp_path, image_size=(2, 4), shuffle=False, data_format="channels_first")
    np.testing.assert_array_equal(next(iter(first))[0].numpy()[0], arrays["a/0.png"].transpose(2, 0, 1))
    with pytest.raises(ValueError, match="Only one"):
        U.image_dataset_from_directory(tmp_path, crop_to_aspect_ratio=True, pad_to_aspect_ratio=True)


def test_py_dataset_as_validation_data():
    x = np.ones((16, 2), np.float32)
    y = np.full((16, 1), 3.0, np.float32)
    model = ef.keras.Sequential([ef.keras.Input((2,)), ef.keras.layers.Dense(1, kernel_initializer="zeros")])
    model.compile("sgd", "mse")
    history = model.fit(x, y, validation_data=_Batches(x, y, 8), epochs=1, verbose=0, batch_size=16)
    # one SGD step from zero weights (lr 0.01): w = b = 0.06, prediction 0.18
    assert history.history["val_loss"][0] == pytest.approx((3.0 - 0.18) ** 2, rel=1e-5)


def _write_wav(path, samples, width=2, channels=1):
    import wave
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(16000)
        w.writeframes(samples.tobytes())


def test_audio_dataset(tmp_path):
    clips = {"no": [np.array([1000, -2000, 3000], "<i2")], "yes": [np.array([16384, -32768], "<i2"),
                                                                   np.array([5, 6, 7, 8, 9], "<i2")]}
    for cls, items in clips.items():
        (tmp_path / cls).mkdir()
        for i, c in enumerate(items):
            _write_wav(tmp_path / cls / f"{i}.wav", c)
    ds = U.audio_dataset_from_directory(tmp_path, batch_size=3, shuffle=False)
    x, y = next(iter(ds))
    assert x.shape == (3, 5, 1) and x.dtype == ef.float32  # padded to the longest clip of the batch
    np.testing.assert_array_equal(x.numpy()[0, :3, 0], np.array([1000, -2000, 3000]) / 32768.0)
    np.testing.assert_array_equal(x.numpy()[1, :, 0], [0.5, -1.0, 0, 0, 0])
    np.testing.assert_array_equal(y.numpy(), [0, 1, 1])
    cut = U.audio_dataset_from_directory(tmp_path, batch_size=None, shuffle=False, output_sequence_length=4,
                                         label_mode="binary")
    items = list(cut.as_numpy_iterator())
    assert [i[0].shape for i in items] == [(4, 1)] * 3 and items[2][1].tolist() == [1.0]
    np.testing.assert_array_equal(items[2][0][:, 0], np.array([5, 6, 7, 8]) / 32768.0)
    with pytest.raises(ValueError, match="ragged"):
        U.audio_dataset_from_directory(tmp_path, ragged=True, output_sequence_length=3)


def test_decode_wav_reads_16_bit_only_as_tf(tmp_path):
    from eagerflow.keras.utils._audio_dataset import decode_wav
    stereo = np.array([[100, -100], [200, -200]], "<i2")
    _write_wav(tmp_path / "s16.wav", stereo, channels=2)
    np.testing.assert_array_equal(decode_wav(str(tmp_path / "s16.wav")), stereo / 32768.0)
    _write_wav(tmp_path / "u8.wav", np.array([0, 128, 255], np.uint8), width=1)
    with pytest.raises(ef.errors.InvalidArgumentError, match="16-bit"):
        decode_wav(str(tmp_path / "u8.wav"))


def test_py_dataset_class_weight_and_shuffle():
    x = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    y = np.array([[0.0], [1.0], [0.0], [1.0]], np.float32)
    seen = []

    class Logged(_Batches):
        def __getitem__(self, i):
            seen.append(i)
            return super().__getitem__(i)

    def one_epoch(data, **kw):
        model = ef.keras.Sequential([ef.keras.Input((1,)), ef.keras.layers.Dense(1, kernel_initializer="ones")])
        model.compile("sgd", "mse")
        return model.fit(data, epochs=1, verbose=0, shuffle=False, **kw).history["loss"][0]

    weighted = one_epoch(_Batches(x, y, 4), class_weight={0: 1.0, 1: 3.0})
    explicit = one_epoch(ef.data.Dataset.from_tensor_slices((x, y, np.array([1.0, 3.0, 1.0, 3.0], np.float32))).batch(4))
    assert weighted == pytest.approx(explicit, rel=1e-6)
    random.seed(0)
    data = Logged(x, y, 1)
    model = ef.keras.Sequential([ef.keras.Input((1,)), ef.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(data, epochs=1, verbose=0)  # shuffle=True: the batch order of Python's random, as Keras
    order = list(range(4))
    random.seed(0)
    random.shuffle(order)
    assert seen[1:] == order  # seen[0]: the first batch, read once to learn the element spec
