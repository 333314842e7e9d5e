"""fit(x=arrays, steps_per_epoch=..., validation_steps=...): Keras 3 takes step counts with
arrays too. The arrays become the batched Dataset Keras would iterate (shuffled each epoch when
shuffle=True, validation_split's last rows held out first), so fit's Dataset loop counts the
steps."""
import math

from . import _core


def _take(a, lo, hi):
    if a is None:
        return None
    if isinstance(a, dict):
        return {k: v[lo:hi] for k, v in a.items()}
    if isinstance(a, list):
        return [v[lo:hi] for v in a]
    return a[lo:hi]


def _slices(x, y, sample_weight):
    parts = (x,) if y is None else (x, y) if sample_weight is None else (x, y, sample_weight)
    return parts[0] if len(parts) == 1 else tuple(tuple(p) if isinstance(p, list) else p for p in parts)


def arrays_as_datasets(x, y, batch_size, validation_split, validation_data, shuffle, sample_weight, n):
    """(training Dataset, validation Dataset) for fit's Dataset loop (its validation takes a
    Dataset or an (x, y) pair, so validation arrays become batches too)."""
    from .data import Dataset
    if validation_split and validation_data is None:
        if not 0 < validation_split < 1:
            raise ValueError(f"validation_split must be in [0, 1), got {validation_split}")
        split = n - int(math.floor(n * validation_split))
        validation_data = tuple(v for v in (_take(x, split, n), _take(y, split, n), _take(sample_weight, split, n))
                                if v is not None)
        x, y, sample_weight = _take(x, 0, split), _take(y, 0, split), _take(sample_weight, 0, split)
        n = split
    ds = Dataset.from_tensor_slices(_slices(x, y, sample_weight))
    if shuffle:
        ds = ds.shuffle(max(1, n), reshuffle_each_iteration=True)
    ds = ds.batch(batch_size)
    if validation_data is not None and not isinstance(validation_data, _core._data.Dataset):
        parts = list(validation_data) + [None] * (3 - len(validation_data))
        validation_data = Dataset.from_tensor_slices(_slices(*parts)).batch(batch_size)
    return ds, validation_data
