"""ef.keras.datasets: Keras' datasets, read from Keras' cache ($KERAS_HOME or ~/.keras,
"datasets") in Keras' file formats, with the same arrays, dtypes and shuffles. Nothing is
downloaded: a missing file is a FileNotFoundError naming where to put it and its URL."""
from . import boston_housing, california_housing, cifar10, cifar100, fashion_mnist, imdb, mnist, reuters

__all__ = ["boston_housing", "california_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist", "reuters"]
