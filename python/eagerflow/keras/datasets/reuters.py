"""keras.datasets.reuters: 11228 newswires as word-index sequences with 46 topic labels, from
Keras' reuters.npz (and reuters_word_index.json)."""
import json

import numpy as np

from ._common import ORIGIN, cached, drop_long, limit_words, load_npz, shift_words


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113, start_char=1,
              oov_char=2, index_from=3):
    """((x_train, y_train), (x_test, y_test)) as Keras: the newswires shuffled by NumPy's
    RandomState(seed), the word options as imdb.load_data, the last test_split for testing."""
    f = load_npz(cached(path, f"{ORIGIN}reuters.npz"))
    xs, labels = f["x"], f["y"]
    indices = np.arange(len(xs))
    np.random.RandomState(seed).shuffle(indices)
    xs, labels = xs[indices], labels[indices]
    xs = shift_words(xs, start_char, index_from)
    if maxlen:
        xs, labels = drop_long(maxlen, xs, labels)
    xs = limit_words(xs, num_words, skip_top, oov_char)
    cut = int(len(xs) * (1 - test_split))
    return ((np.array(xs[:cut], dtype="object"), np.array(labels[:cut])),
            (np.array(xs[cut:], dtype="object"), np.array(labels[cut:])))


def get_word_index(path="reuters_word_index.json"):
    """{word: index} of the Reuters vocabulary (indices before index_from is added)."""
    with open(cached(path, f"{ORIGIN}reuters_word_index.json")) as f:
        return json.load(f)


_LABELS = ("cocoa grain veg-oil earn acq wheat copper housing money-supply coffee sugar trade reserves ship cotton "
           "carcass crude nat-gas cpi money-fx interest gnp meal-feed alum oilseed gold tin strategic-metal livestock "
           "retail ipi iron-steel rubber heat jobs lei bop zinc orange pet-chem dlr gas silver wpi hog lead")


def get_label_names():
    """The 46 topic names, indexed by label."""
    return tuple(_LABELS.split())
