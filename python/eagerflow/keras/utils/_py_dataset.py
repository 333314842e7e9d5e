"""keras.utils.PyDataset (and its old name Sequence): batches computed by Python code, which
fit, evaluate and predict take as they take an ef.data.Dataset (read through a generator)."""
import itertools
import random

import numpy as np


class PyDataset:
    """Subclass it with __len__ (or num_batches) and __getitem__(index) returning a batch:
    inputs, (inputs, targets) or (inputs, targets, sample_weights); on_epoch_begin and
    on_epoch_end are called around each epoch. workers / use_multiprocessing / max_queue_size
    are kept for Keras' programs; the batches are read one at a time here."""

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self._workers = workers
        self._use_multiprocessing = use_multiprocessing
        self._max_queue_size = max_queue_size

    @property
    def workers(self):
        return getattr(self, "_workers", 1)

    @workers.setter
    def workers(self, value):
        self._workers = value

    @property
    def use_multiprocessing(self):
        return getattr(self, "_use_multiprocessing", False)

    @use_multiprocessing.setter
    def use_multiprocessing(self, value):
        self._use_multiprocessing = value

    @property
    def max_queue_size(self):
        return getattr(self, "_max_queue_size", 10)

    @max_queue_size.setter
    def max_queue_size(self, value):
        self._max_queue_size = value

    def __getitem__(self, index):
        raise NotImplementedError

    def __iter__(self):
        try:
            n = self.num_batches
        except NotImplementedError:
            n = None
        for index in (range(n) if n is not None else itertools.count()):
            yield self[index]

    @property
    def num_batches(self):
        """The number of batches (len(self)), or None for an endless dataset."""
        if hasattr(self, "__len__"):
            return len(self)
        raise NotImplementedError("You need to implement the `num_batches` property:\n\n"
                                  "@property\ndef num_batches(self):\n  return ...")

    def on_epoch_begin(self):
        pass

    def on_epoch_end(self):
        pass


Sequence = PyDataset


def _standardize(batch, class_weight):
    if isinstance(batch, dict):
        return batch
    if isinstance(batch, np.ndarray):
        batch = (batch,)
    if isinstance(batch, list):
        batch = tuple(batch)
    if not isinstance(batch, tuple) or len(batch) not in {1, 2, 3}:
        raise ValueError("PyDataset.__getitem__() must return a tuple or a dict. If a tuple, it must be ordered either "
                         "(input,) or (inputs, targets) or (inputs, targets, sample_weights). "
                         f"Received: {str(batch)[:100]}... of type {type(batch)}")
    if class_weight is not None:
        if len(batch) == 3:
            raise ValueError("You cannot specify `class_weight` and `sample_weight` at the same time.")
        if len(batch) == 2:
            y = np.asarray(batch[1])
            labels = np.argmax(y, axis=-1) if y.ndim > 1 and y.shape[-1] > 1 else y.reshape(len(y), -1)[:, 0]
            weights = np.array([class_weight.get(int(c), 1.0) for c in labels.astype("int64")], dtype="float32")
            batch = batch + (weights,)
    return batch


def _arrays(value):
    if isinstance(value, dict):
        return {k: _arrays(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return tuple(_arrays(v) for v in value)
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _spec(value):
    import eagerflow as ef
    if isinstance(value, dict):
        return {k: _spec(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_spec(v) for v in value)
    return ef.TensorSpec(shape=[None] + list(value.shape[1:]), dtype=value.dtype)


def as_dataset(py_dataset, shuffle=False, class_weight=None):
    """An ef.data.Dataset of the batches of py_dataset: one pass is one epoch (batch order
    shuffled by Python's random with shuffle=True, as Keras' fit), with its epoch hooks."""
    import eagerflow as ef
    first = _arrays(_standardize(py_dataset[0], class_weight))
    if isinstance(first, tuple) and len(first) == 1:
        first = first[0]

    def batches():
        py_dataset.on_epoch_begin()
        n = py_dataset.num_batches
        order = itertools.count() if n is None else list(range(n))
        if shuffle and n is not None:
            random.shuffle(order)
        for i in order:
            try:
                batch = py_dataset[i]
            except IndexError:
                if n is None:
                    break
                raise
            batch = _arrays(_standardize(batch, class_weight))
            yield batch[0] if isinstance(batch, tuple) and len(batch) == 1 else batch
        py_dataset.on_epoch_end()
    return ef.data.Dataset.from_generator(batches, output_signature=_spec(first))


def for_model(x, y, what, shuffle=False, class_weight=None, as_arrays=False):
    """x as fit/evaluate/predict read it: a PyDataset becomes an ef.data.Dataset (it holds its
    own targets, so y must be None), or with as_arrays (validation data beside array inputs)
    the tuple of its batches concatenated; anything else is returned as it is."""
    if not isinstance(x, PyDataset):
        return x
    if y is not None:
        raise ValueError(f"{what}: when providing `x` as a PyDataset, `y` should not be passed. Instead, the targets "
                         "should be included as part of the PyDataset.")
    if as_arrays:
        batches = [_arrays(_standardize(b, None)) for b in x]
        if not batches or not isinstance(batches[0], tuple) or len(batches[0]) < 2:
            raise ValueError(f"{what}: validation_data as a PyDataset must give (x, y) or (x, y, sample_weight) "
                             "batches")
        return tuple(np.concatenate([b[i] for b in batches]) for i in range(len(batches[0])))
    return as_dataset(x, shuffle=shuffle, class_weight=class_weight)
