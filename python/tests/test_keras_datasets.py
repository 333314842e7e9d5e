"""ef.keras.datasets: Keras' loaders read small files of each of Keras' formats from a tmp
KERAS_HOME; the expected values are worked out here with NumPy as Keras' loaders define them."""
import gzip
import json
import os
import pickle
import tarfile

import numpy as np
import pytest

import eagerflow as ef

datasets = ef.keras.datasets


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    d = tmp_path / "datasets"
    d.mkdir()
    return d


def _shuffled(n, seed, rng=None):
    idx = np.arange(n)
    (rng or np.random.RandomState(seed)).shuffle(idx)
    return idx


def test_missing_file_names_path_and_url(home):
    with pytest.raises(FileNotFoundError) as e:
        datasets.mnist.load_data()
    msg = str(e.value)
    assert str(home / "mnist.npz") in msg
    assert "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz" in msg


def test_keras_home_default(monkeypatch, tmp_path):
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=str(tmp_path / ".keras" / "datasets" / "imdb.npz")):
        datasets.imdb.load_data()


def test_mnist(home):
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8), "y_train": np.arange(5, dtype=np.uint8),
              "x_test": rng.integers(0, 256, (3, 28, 28), dtype=np.uint8), "y_test": np.arange(3, dtype=np.uint8)}
    np.savez(home / "mnist.npz", **arrays)
    (xtr, ytr), (xte, yte) = datasets.mnist.load_data()
    for got, key in ((xtr, "x_train"), (ytr, "y_train"), (xte, "x_test"), (yte, "y_test")):
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, arrays[key])
    np.savez(home / "other.npz", **arrays)
    np.testing.assert_array_equal(datasets.mnist.load_data(path="other.npz")[0][1], arrays["y_train"])


def _idx(path, header, data):
    with gzip.open(path, "wb") as f:
        f.write(header + data.tobytes())


def test_fashion_mnist(home):
    d = home / "fashion-mnist"
    d.mkdir()
    rng = np.random.default_rng(1)
    x_train = rng.integers(0, 256, (4, 28, 28), dtype=np.uint8)
    x_test = rng.integers(0, 256, (2, 28, 28), dtype=np.uint8)
    y_train, y_test = np.array([3, 1, 4, 1], np.uint8), np.array([5, 9], np.uint8)
    _idx(d / "train-labels-idx1-ubyte.gz", b"\0" * 8, y_train)
    _idx(d / "train-images-idx3-ubyte.gz", b"\0" * 16, x_train)
    _idx(d / "t10k-labels-idx1-ubyte.gz", b"\0" * 8, y_test)
    _idx(d / "t10k-images-idx3-ubyte.gz", b"\0" * 16, x_test)
    (a, b), (c, e) = datasets.fashion_mnist.load_data()
    assert a.shape == (4, 28, 28) and a.dtype == np.uint8 and b.dtype == np.uint8
    np.testing.assert_array_equal(a, x_train)
    np.testing.assert_array_equal(b, y_train)
    np.testing.assert_array_equal(c, x_test)
    np.testing.assert_array_equal(e, y_test)


def _cifar_pickle(path, data, labels_key, labels, extra=None):
    d = {b"data": data, labels_key: labels}
    d.update(extra or {})
    with open(path, "wb") as f:
        pickle.dump(d, f)


def _tar(folder, archive, arcname):
    with tarfile.open(archive, "w:gz") as t:
        t.add(folder, arcname=arcname)


def test_cifar10_from_archive(home, tmp_path):
    src = tmp_path / "src" / "cifar-10-batches-py"
    src.mkdir(parents=True)
    rng = np.random.default_rng(2)
    batches = [rng.integers(0, 256, (2, 3072), dtype=np.uint8) for _ in range(6)]
    labels = [[i, (i + 1) % 10] for i in range(6)]
    for i in range(5):
        _cifar_pickle(src / f"data_batch_{i + 1}", batches[i], b"labels", labels[i])
    _cifar_pickle(src / "test_batch", batches[5], b"labels", labels[5])
    _tar(src, home / "cifar-10-batches-py-target_archive", "cifar-10-batches-py")
    (xtr, ytr), (xte, yte) = datasets.cifar10.load_data()
    assert xtr.shape == (10, 32, 32, 3) and xtr.dtype == np.uint8
    assert ytr.shape == (10, 1) and ytr.dtype == np.uint8 and yte.dtype == np.uint8 and yte.shape == (2, 1)
    expected = np.concatenate(batches[:5]).reshape(10, 3, 32, 32).transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(xtr, expected)
    np.testing.assert_array_equal(ytr[:, 0], np.concatenate(labels[:5]))
    np.testing.assert_array_equal(xte, batches[5].reshape(2, 3, 32, 32).transpose(0, 2, 3, 1))
    assert (home / "cifar-10-batches-py-target" / "cifar-10-batches-py" / "test_batch").exists()


def test_cifar100_label_modes_and_keras2_layout(home):
    src = home / "cifar-100-python"  # Keras 2's layout: the extracted folder itself
    src.mkdir()
    rng = np.random.default_rng(3)
    train, test = rng.integers(0, 256, (3, 3072), dtype=np.uint8), rng.integers(0, 256, (1, 3072), dtype=np.uint8)
    _cifar_pickle(src / "train", train, b"fine_labels", [10, 55, 99], {b"coarse_labels": [1, 2, 19]})
    _cifar_pickle(src / "test", test, b"fine_labels", [7], {b"coarse_labels": [0]})
    (xtr, ytr), (xte, yte) = datasets.cifar100.load_data()
    np.testing.assert_array_equal(ytr[:, 0], [10, 55, 99])
    assert ytr.dtype == np.int64 and ytr.shape == (3, 1)
    np.testing.assert_array_equal(xtr, train.reshape(3, 3, 32, 32).transpose(0, 2, 3, 1))
    (_, ytr), (_, yte) = datasets.cifar100.load_data(label_mode="coarse")
    np.testing.assert_array_equal(ytr[:, 0], [1, 2, 19])
    np.testing.assert_array_equal(yte[:, 0], [0])
    with pytest.raises(ValueError, match="label_mode"):
        datasets.cifar100.load_data(label_mode="medium")


def test_cifar_pickle_with_code_is_refused(home):
    src = home / "cifar-10-batches-py"
    src.mkdir()

    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))
    with open(src / "data_batch_1", "wb") as f:
        pickle.dump({b"data": Evil(), b"labels": []}, f)
    with pytest.raises(pickle.UnpicklingError, match="Refusing"):
        datasets.cifar10.load_data()


def _ragged(seqs):
    out = np.empty(len(seqs), dtype=object)
    for i, s in enumerate(seqs):
        out[i] = list(s)
    return out


def _keras_words(xs, start_char, index_from, maxlen, num_words, skip_top, oov_char, labels):
    """Keras' word handling, written out for the test."""
    xs = [([start_char] if start_char is not None else []) + [w + index_from for w in x] for x in xs]
    if maxlen:
        kept = [(x, y) for x, y in zip(xs, labels) if len(x) < maxlen]
        xs, labels = [k[0] for k in kept], [k[1] for k in kept]
    top = num_words or max(max(x) for x in xs)
    if oov_char is not None:
        xs = [[w if skip_top <= w < top else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < top] for x in xs]
    return xs, list(labels)


def _imdb_file(home):
    train = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], [11], [12, 13]]
    test = [[2, 20], [3, 3, 3, 3], [14]]
    np.savez(home / "imdb.npz", x_train=_ragged(train), y_train=np.array([0, 1, 1, 0, 1]),
             x_test=_ragged(test), y_test=np.array([1, 0, 0]))
    return train, test


@pytest.mark.parametrize("kw", [{}, {"num_words": 10, "skip_top": 5}, {"maxlen": 5}, {"oov_char": None, "num_words": 9},
                                {"start_char": None, "index_from": 0, "seed": 7}])
def test_imdb(home, kw):
    train, test = _imdb_file(home)
    (xtr, ytr), (xte, yte) = datasets.imdb.load_data(**kw)
    seed = kw.get("seed", 113)
    rng = np.random.RandomState(seed)
    itr, ite = _shuffled(len(train), seed, rng), _shuffled(len(test), seed, rng)
    tr_labels, te_labels = np.array([0, 1, 1, 0, 1])[itr], np.array([1, 0, 0])[ite]
    opts = dict(start_char=kw.get("start_char", 1), index_from=kw.get("index_from", 3), maxlen=kw.get("maxlen"))
    a, la = _keras_words([train[i] for i in itr], labels=tr_labels, num_words=10**9, skip_top=0, oov_char=2, **opts)
    b, lb = _keras_words([test[i] for i in ite], labels=te_labels, num_words=10**9, skip_top=0, oov_char=2, **opts)
    xs, _ = _keras_words(a + b, start_char=None, index_from=0, maxlen=None, num_words=kw.get("num_words"),
                         skip_top=kw.get("skip_top", 0), oov_char=kw.get("oov_char", 2), labels=la + lb)
    assert xtr.dtype == object and [list(x) for x in xtr] == xs[:len(a)]
    assert [list(x) for x in xte] == xs[len(a):]
    np.testing.assert_array_equal(ytr, la)
    np.testing.assert_array_equal(yte, lb)


def test_imdb_maxlen_too_small_and_word_index(home):
    _imdb_file(home)
    with pytest.raises(ValueError, match="maxlen=2"):
        datasets.imdb.load_data(maxlen=2)
    (home / "imdb_word_index.json").write_text(json.dumps({"the": 1, "movie": 2}))
    assert datasets.imdb.get_word_index() == {"the": 1, "movie": 2}


def test_imdb_pickle_with_code_is_refused(home):
    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))
    bad = np.empty(1, dtype=object)
    bad[0] = Evil()
    np.savez(home / "imdb.npz", x_train=bad, y_train=np.array([0]), x_test=bad, y_test=np.array([0]))
    with pytest.raises(pickle.UnpicklingError, match="Refusing"):
        datasets.imdb.load_data()


def test_reuters(home):
    seqs = [[1, 2], [3, 4, 5], [6], [7, 8, 9, 10], [11, 12], [2, 2, 2]]
    labels = np.array([0, 3, 1, 45, 2, 3])
    np.savez(home / "reuters.npz", x=_ragged(seqs), y=labels)
    (xtr, ytr), (xte, yte) = datasets.reuters.load_data(test_split=0.5, num_words=12)
    idx = _shuffled(len(seqs), 113)
    xs, ls = _keras_words([seqs[i] for i in idx], 1, 3, None, 12, 0, 2, labels[idx])
    assert [list(x) for x in xtr] == xs[:3] and [list(x) for x in xte] == xs[3:]
    np.testing.assert_array_equal(np.concatenate([ytr, yte]), ls)
    assert len(datasets.reuters.get_label_names()) == 46 and datasets.reuters.get_label_names()[3] == "earn"
    (home / "reuters_word_index.json").write_text(json.dumps({"said": 1}))
    assert datasets.reuters.get_word_index() == {"said": 1}


def test_boston_and_california(home):
    x = np.arange(20 * 13, dtype=np.float64).reshape(20, 13)
    y = np.arange(20, dtype=np.float64) * 1.5
    np.savez(home / "boston_housing.npz", x=x, y=y)
    (xtr, ytr), (xte, yte) = datasets.boston_housing.load_data(test_split=0.25, seed=5)
    idx = _shuffled(20, 5)
    np.testing.assert_array_equal(xtr, x[idx][:15])
    np.testing.assert_array_equal(yte, y[idx][15:])
    assert xtr.dtype == np.float64
    with pytest.raises(ValueError, match="test_split"):
        datasets.boston_housing.load_data(test_split=1.0)
    big = np.arange(700 * 8, dtype=np.float32).reshape(700, 8)
    np.savez(home / "california_housing.npz", x=big, y=np.arange(700, dtype=np.float32))
    (xtr, ytr), (xte, yte) = datasets.california_housing.load_data(version="small")
    assert len(xtr) + len(xte) == 600 and len(xte) == 120
    idx = _shuffled(600, 113)
    np.testing.assert_array_equal(ytr, np.arange(600, dtype=np.float32)[idx][:480])
    (xtr, _), (xte, _) = datasets.california_housing.load_data()
    assert len(xtr) == 560 and len(xte) == 140
    with pytest.raises(ValueError, match="version"):
        datasets.california_housing.load_data(version="medium")


def test_loaded_arrays_train_a_model(home):
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 64).astype(np.uint8)
    x = (np.where(y[:, None, None] == 1, 200, 20) + rng.integers(0, 30, (64, 28, 28))).astype(np.uint8)
    np.savez(home / "mnist.npz", x_train=x, y_train=y, x_test=x[:8], y_test=y[:8])
    (xtr, ytr), _ = datasets.mnist.load_data()
    model = ef.keras.Sequential([ef.keras.Input((28, 28)), ef.keras.layers.Flatten(), ef.keras.layers.Dense(2)])
    model.compile("adam", ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    hist = model.fit(xtr / 255.0 - 0.5, ytr, epochs=3, batch_size=16, verbose=0)
    assert hist.history["accuracy"][-1] > 0.9
