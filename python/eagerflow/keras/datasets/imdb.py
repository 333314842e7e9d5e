"""keras.datasets.imdb: 25000 + 25000 movie reviews as word-index sequences with sentiment
labels, from Keras' imdb.npz (and imdb_word_index.json for get_word_index)."""
import json

import numpy as np

from ._common import ORIGIN, cached, drop_long, limit_words, load_npz, shift_words


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, oov_char=2,
              index_from=3, **kwargs):
    """((x_train, y_train), (x_test, y_test)): object arrays of lists of word indices and int
    labels, as Keras: each split shuffled by NumPy's RandomState(seed), start_char first, word
    indices raised by index_from, reviews of maxlen words or more dropped, words outside
    [skip_top, num_words) replaced by oov_char (dropped when it is None). Other keyword
    arguments are accepted and ignored, as Keras does."""
    f = load_npz(cached(path, f"{ORIGIN}imdb.npz"))
    x_train, labels_train, x_test, labels_test = f["x_train"], f["y_train"], f["x_test"], f["y_test"]
    rng = np.random.RandomState(seed)
    indices = np.arange(len(x_train))
    rng.shuffle(indices)
    x_train, labels_train = x_train[indices], labels_train[indices]
    indices = np.arange(len(x_test))
    rng.shuffle(indices)
    x_test, labels_test = x_test[indices], labels_test[indices]
    x_train, x_test = shift_words(x_train, start_char, index_from), shift_words(x_test, start_char, index_from)
    if maxlen:
        x_train, labels_train = drop_long(maxlen, x_train, labels_train)
        x_test, labels_test = drop_long(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was kept. "
                             "Increase maxlen.")
    xs = limit_words(x_train + x_test, num_words, skip_top, oov_char)
    labels = np.concatenate([labels_train, labels_test])
    n = len(x_train)
    return (np.array(xs[:n], dtype="object"), labels[:n]), (np.array(xs[n:], dtype="object"), labels[n:])


def get_word_index(path="imdb_word_index.json"):
    """{word: index} of the IMDB vocabulary (indices before index_from is added)."""
    with open(cached(path, f"{ORIGIN}imdb_word_index.json")) as f:
        return json.load(f)
