"""keras.datasets.cifar100: 32x32 colour images of 100 classes (20 coarse), from the Python
pickles of cifar-100-python.tar.gz."""
import os

import numpy as np

from ._common import load_cifar_batch
from .cifar10 import batches_folder

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"


def load_data(label_mode="fine"):
    """((x_train, y_train), (x_test, y_test)): uint8 images [n, 32, 32, 3] and int64 labels
    [n, 1], the fine (0..99) or coarse (0..19) ones."""
    if label_mode not in ["fine", "coarse"]:
        raise ValueError(f'`label_mode` must be one of `"fine"`, `"coarse"`. Received: label_mode={label_mode}.')
    path = batches_folder("cifar-100-python", ORIGIN)
    out = []
    for part in ("train", "test"):
        x, y = load_cifar_batch(os.path.join(path, part), label_key=f"{label_mode}_labels")
        out.append((x.transpose(0, 2, 3, 1), np.reshape(y, (len(y), 1))))
    return tuple(out)
