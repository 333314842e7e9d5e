"""What Keras' dataset loaders share: the cache lookup, .npz files whose ragged sequences are
pickled object arrays (read with an unpickler that rebuilds NumPy arrays and nothing else),
CIFAR's pickled batches, and the word-index sequence options of imdb and reuters."""
import io
import pickle
import zipfile

import numpy as np

from .. import _files

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"

# The only globals a pickled NumPy array needs; anything else in a file is refused, so a tampered
# file cannot run code.
_ALLOWED = frozenset({("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
                      ("numpy._core.multiarray", "_reconstruct")})


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"Refusing to deserialize `{module}.{name}` while loading a Keras dataset. "
                                     "The file may be corrupted or malicious.")


def cached(fname, origin, **kwargs):
    return _files.get_file(fname=fname, origin=origin, **kwargs)


def _read_npy(buffer):
    try:
        return np.lib.format.read_array(buffer, allow_pickle=False)
    except ValueError:  # an object array: a pickle stream after the header
        buffer.seek(0)
        major, _ = np.lib.format.read_magic(buffer)
        if major == 1:
            np.lib.format.read_array_header_1_0(buffer)
        elif major in (2, 3):  # 3.0 differs from 2.0 only in the header text's encoding
            np.lib.format.read_array_header_2_0(buffer)
        else:
            raise ValueError(f"Unsupported `.npy` file version: {major}.")
        return _ArraysOnly(buffer).load()


def load_npz(path):
    """{name: array} of an .npz file, object arrays included (NumPy arrays only)."""
    out = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if member.endswith(".npy"):
                with archive.open(member) as raw:
                    out[member[:-4]] = _read_npy(io.BytesIO(raw.read()))
    return out


def load_cifar_batch(path, label_key="labels"):
    """(uint8 [n, 3, 32, 32], labels as the file lists them) of one CIFAR pickle."""
    with open(path, "rb") as f:
        d = {k.decode("utf8"): v for k, v in _ArraysOnly(f, encoding="bytes").load().items()}
    data = d["data"]
    return data.reshape(data.shape[0], 3, 32, 32), d[label_key]


def shift_words(xs, start_char, index_from):
    """Sequences with start_char first and every word index raised by index_from."""
    if start_char is not None:
        return [[start_char] + [w + index_from for w in x] for x in xs]
    if index_from:
        return [[w + index_from for w in x] for x in xs]
    return [list(x) for x in xs]


def drop_long(maxlen, xs, labels):
    """The sequences shorter than maxlen and their labels (Keras keeps len < maxlen)."""
    keep = [(x, y) for x, y in zip(xs, labels) if len(x) < maxlen]
    return [x for x, _ in keep], [y for _, y in keep]


def limit_words(xs, num_words, skip_top, oov_char):
    """Words outside [skip_top, num_words) become oov_char, or are dropped when it is None."""
    if not num_words:
        num_words = max(max(x) for x in xs)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def split_shuffled(path, test_split, seed, version_rows=None):
    """boston_housing / california_housing: x, y shuffled by NumPy's RandomState(seed), then the
    first (1 - test_split) of the rows for training."""
    with np.load(path, allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    if version_rows is not None:
        x, y = x[:version_rows], y[:version_rows]
    indices = np.arange(len(x))
    np.random.RandomState(seed).shuffle(indices)
    x, y = x[indices], y[indices]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))


def check_split(test_split):
    if not (0 <= test_split < 1):
        raise ValueError(f"Invalid `test_split` argument: {test_split}. It must be between 0 and 1 (exclusive of 1).")
