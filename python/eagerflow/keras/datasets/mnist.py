"""keras.datasets.mnist: the 28x28 digit images from Keras' mnist.npz."""
import numpy as np

from ._common import ORIGIN, cached


def load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)): uint8 [60000, 28, 28] and [60000], then the 10000
    test images and labels, from `path` in Keras' cache ($KERAS_HOME or ~/.keras, "datasets")."""
    path = cached(path, f"{ORIGIN}mnist.npz")
    with np.load(path, allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
