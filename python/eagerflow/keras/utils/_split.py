"""keras.utils.split_dataset: two ef.data.Datasets of the samples of arrays, a tuple/list/dict
of arrays or an (unbatched or batched) ef.data.Dataset."""
import random

import numpy as np


def _sizes(left_size, right_size, total):
    """Keras' rules: ints are counts, floats fractions (rounded), a None side the rest."""
    lt, rt = type(left_size), type(right_size)
    if left_size is not None and lt not in (int, float):
        raise TypeError(f"Invalid `left_size` Type. Expected: int or float or None, Received: type(left_size)={lt}.")
    if right_size is not None and rt not in (int, float):
        raise TypeError(f"Invalid `right_size` Type. Expected: int or float or None,Received: type(right_size)={rt}.")
    if left_size == 0 and right_size == 0:
        raise ValueError("Both `left_size` and `right_size` are zero. At least one of the split sizes must be "
                         "non-zero.")
    if (lt is int and (left_size <= 0 or left_size >= total)) or (lt is float and (left_size <= 0 or left_size >= 1)):
        raise ValueError(f"`left_size` should be either a positive integer smaller than {total}, or a float within the "
                         f"range `[0, 1]`. Received: left_size={left_size}")
    if (rt is int and (right_size <= 0 or right_size >= total)) or \
            (rt is float and (right_size <= 0 or right_size >= 1)):
        raise ValueError(f"`right_size` should be either a positive integer and smaller than {total} or a float within "
                         f"the range `[0, 1]`. Received: right_size={right_size}")
    if lt is float and rt is float and left_size + right_size > 1:
        raise ValueError("The sum of `left_size` and `right_size` is greater than 1. It must be less than or equal "
                         "to 1.")
    left = round(left_size * total) if lt is float else left_size
    right = round(right_size * total) if rt is float else right_size
    if left is None:
        left = total - right
    elif right is None:
        right = total - left
    if left + right > total:
        raise ValueError(f"The sum of `left_size` and `right_size` should be smaller than the {total}. Received: "
                         f"left_size + right_size = {left + right}and total_length = {total}")
    for size, side in ((left, "left"), (right, "right")):
        if size == 0:
            raise ValueError(f"With `dataset` of length={total}, `left_size`={left} and `right_size`={right}. "
                             f"Resulting {side} side dataset split will be empty. Adjust any of the aforementioned "
                             "parameters")
    return int(left), int(right)


def _numpy(v):
    return v.numpy() if hasattr(v, "numpy") else np.asarray(v)


def _samples(dataset):
    """(list of samples, how to stack them back, batch size of a batched Dataset or None)."""
    import eagerflow as ef
    if isinstance(dataset, ef.data.Dataset):
        elements = list(dataset.as_numpy_iterator())
        spec = dataset.element_spec
        flat = list(spec.values()) if isinstance(spec, dict) else list(spec) if isinstance(spec, tuple) else [spec]
        batched = bool(flat) and all(len(s.shape) and s.shape[0] is None for s in flat)
        batch = None
        if batched and elements:  # unbatch: Keras splits a batched dataset by samples, then batches again
            first = elements[0]
            one = next(iter(first.values())) if isinstance(first, dict) else \
                first[0] if isinstance(first, tuple) else first
            batch = len(one)
            rows = []
            for e in elements:
                if isinstance(e, dict):
                    rows += [{k: v[i] for k, v in e.items()} for i in range(len(next(iter(e.values()))))]
                elif isinstance(e, tuple):
                    rows += [tuple(v[i] for v in e) for i in range(len(e[0]))]
                else:
                    rows += list(e)
            elements = rows
        return elements, batch
    if isinstance(dataset, dict):
        arrays = {k: _numpy(v) for k, v in dataset.items()}
        n = len(next(iter(arrays.values())))
        return [{k: v[i] for k, v in arrays.items()} for i in range(n)], None
    if isinstance(dataset, (list, tuple)):
        arrays = [_numpy(v) for v in dataset]
        if any(a.ndim == 0 for a in arrays):  # a list of numbers: one array
            return list(_numpy(dataset)), None
        if len({len(a) for a in arrays}) != 1:
            raise ValueError("The arrays of `dataset` must have the same number of samples; got lengths "
                             f"{[len(a) for a in arrays]}")
        return [tuple(a[i] for a in arrays) for i in range(len(arrays[0]))], None
    if isinstance(dataset, np.ndarray) or hasattr(dataset, "numpy"):
        return list(_numpy(dataset)), None
    raise TypeError("The `dataset` argument must be either a `tf.data.Dataset` object, or a list/tuple of arrays. "
                    f"Received: dataset={dataset} of type {type(dataset)}")


def _stack(rows):
    first = rows[0]
    if isinstance(first, dict):
        return {k: np.stack([r[k] for r in rows]) for k in first}
    if isinstance(first, tuple):
        return tuple(np.stack([r[i] for r in rows]) for i in range(len(first)))
    return np.stack(rows)


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None, preferred_backend=None):
    """(left, right) ef.data.Datasets: the first left_size samples and the last right_size
    ones (after Python's random.Random(seed) shuffle with shuffle=True, as Keras)."""
    import eagerflow as ef
    if right_size is None and left_size is None:
        raise ValueError("At least one of the `left_size` or `right_size` must be specified. Received: "
                         "left_size=None and right_size=None")
    rows, batch = _samples(dataset)
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(1e6))
        random.Random(seed).shuffle(rows)
    left, right = _sizes(left_size, right_size, len(rows))
    out = []
    for part in (rows[:left], rows[-right:]):
        ds = ef.data.Dataset.from_tensor_slices(_stack(part))
        if batch is not None:
            ds = ds.batch(batch)
        out.append(ds.prefetch(ef.data.AUTOTUNE))
    return tuple(out)
