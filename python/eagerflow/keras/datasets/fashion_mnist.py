"""keras.datasets.fashion_mnist: Zalando's 28x28 clothing images, from the four IDX .gz files
Keras keeps in its cache under datasets/fashion-mnist."""
import gzip
import os

import numpy as np

from ._common import ORIGIN, cached

_FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
          "t10k-images-idx3-ubyte.gz")


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images [n, 28, 28] and labels [n] (0..9)."""
    paths = [cached(name, ORIGIN + name, cache_subdir=os.path.join("datasets", "fashion-mnist")) for name in _FILES]
    out = []
    for labels_path, images_path in ((paths[0], paths[1]), (paths[2], paths[3])):
        with gzip.open(labels_path, "rb") as f:
            y = np.frombuffer(f.read(), np.uint8, offset=8)
        with gzip.open(images_path, "rb") as f:
            x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(len(y), 28, 28)
        out.append((x, y))
    return tuple(out)
