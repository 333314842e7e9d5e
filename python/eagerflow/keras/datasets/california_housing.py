"""keras.datasets.california_housing: 20640 districts, 8 features and the median house value,
from Keras' california_housing.npz."""
from ._common import ORIGIN, cached, check_split, split_shuffled


def load_data(version="large", path="california_housing.npz", test_split=0.2, seed=113):
    """((x_train, y_train), (x_test, y_test)) as Keras: version "small" keeps the first 600 rows;
    the rows are shuffled by NumPy's RandomState(seed), the first (1 - test_split) for training."""
    check_split(test_split)
    path = cached(path, f"{ORIGIN}california_housing.npz")
    if version not in ("small", "large"):
        raise ValueError(f"Argument `version` must be one of 'small', 'large'. Received: version={version}")
    return split_shuffled(path, test_split, seed, 600 if version == "small" else None)
