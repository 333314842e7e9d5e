"""keras.datasets.boston_housing: 506 houses, 13 features and the median price, from Keras'
boston_housing.npz."""
from ._common import ORIGIN, cached, check_split, split_shuffled


def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """((x_train, y_train), (x_test, y_test)): float64 rows shuffled by NumPy's
    RandomState(seed), the first (1 - test_split) for training."""
    check_split(test_split)
    return split_shuffled(cached(path, f"{ORIGIN}boston_housing.npz"), test_split, seed)
