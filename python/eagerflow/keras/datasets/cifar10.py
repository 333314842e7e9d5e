"""keras.datasets.cifar10: 32x32 colour images of 10 classes, from the Python pickles of
cifar-10-python.tar.gz (extracted in Keras' cache as Keras does)."""
import os

import numpy as np

from ._common import cached, load_cifar_batch

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"


def batches_folder(name, origin):
    """The folder `name` (cifar-10-batches-py, cifar-100-python) of the extracted archive: Keras 3's
    cache layout (<name>-target/<name>), or Keras 2's (<name> itself)."""
    from .. import _files
    old = os.path.join(os.path.expanduser(_files.keras_home()), "datasets", name)
    if os.path.isdir(old) and not os.path.exists(old + "-target_archive"):
        return old
    return os.path.join(cached(f"{name}-target", origin, extract=True), name)


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images [50000, 32, 32, 3] (channels last)
    and uint8 labels [50000, 1], then the 10000 test ones."""
    path = batches_folder("cifar-10-batches-py", ORIGIN)
    xs, ys = zip(*(load_cifar_batch(os.path.join(path, f"data_batch_{i}")) for i in range(1, 6)))
    x_train = np.concatenate(xs).astype(np.uint8)
    y_train = np.concatenate([np.asarray(y) for y in ys]).astype(np.uint8).reshape(-1, 1)
    x_test, y_test = load_cifar_batch(os.path.join(path, "test_batch"))
    y_test = np.reshape(y_test, (len(y_test), 1))
    return ((x_train.transpose(0, 2, 3, 1), y_train),
            (x_test.transpose(0, 2, 3, 1).astype(x_train.dtype), y_test.astype(y_train.dtype)))
