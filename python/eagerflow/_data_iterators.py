"""tf.data.Iterator (the type of iter(dataset)), NumpyIterator, DatasetSpec, IteratorSpec and
the Optional of get_next_as_optional.

iter(dataset) gives an OwnedIterator around the C++ pipeline's iterator: it knows the dataset's
element_spec (which the C++ iterator does not) and adds get_next_as_optional."""
import abc as _abc
import time as _time

import numpy as _np

from . import _core, _data_graph


class Optional:
    """A value that may be absent (tf.experimental.Optional): has_value() is a bool tensor,
    get_value() raises InvalidArgumentError when there is none."""

    def __init__(self, value=None, has_value=False, element_spec=None):
        self._value, self._has, self._spec = value, bool(has_value), element_spec

    @staticmethod
    def from_value(value):
        return Optional(value, True, _spec_of(value))

    @staticmethod
    def empty(element_spec):
        return Optional(None, False, element_spec)

    def has_value(self, name=None):
        return _core.convert_to_tensor(self._has)

    def get_value(self, name=None):
        if not self._has:
            from . import errors
            raise errors.InvalidArgumentError(None, None, "The given optional does not have a value.")
        return self._value

    @property
    def element_spec(self):
        return self._spec


def _spec_of(value):
    if isinstance(value, tuple):
        return tuple(_spec_of(v) for v in value)
    if isinstance(value, dict):
        return {k: _spec_of(v) for k, v in value.items()}
    t = _core.convert_to_tensor(value)
    return _core.TensorSpec(list(t.shape), t.dtype)


class Iterator(_abc.ABC):
    """tf.data.Iterator: what iter(dataset) returns."""

    @property
    @_abc.abstractmethod
    def element_spec(self):
        """The spec of each element."""

    @_abc.abstractmethod
    def get_next(self):
        """The next element; OutOfRangeError at the end."""

    @_abc.abstractmethod
    def get_next_as_optional(self):
        """The next element as an Optional, empty at the end."""


# Told of each element an iterator hands out, while any is registered (the profiler):
# observer(start_ns, end_ns). Empty, a next() pays one list test.
_next_observers = []


def _observed_next(fetch):
    start = _time.perf_counter_ns()
    try:
        return fetch()
    finally:
        end = _time.perf_counter_ns()
        for observer in list(_next_observers):
            observer(start, end)


class OwnedIterator(Iterator):
    """iter(dataset). Counts what it hands out so that a tf.train.Checkpoint can save its position
    (python/eagerflow/_iterator_state.py); a pipeline with a pass-dependent shuffle is iterated
    as rebuilt with explicit seeds (python/eagerflow/_data_recipe.py) that the position keeps."""

    def __init__(self, dataset, cpp_iter):
        from . import _data_recipe
        self._dataset, self._cpp_iter = dataset, cpp_iter
        planned, self._seeds = _data_recipe.plan(dataset)
        self._it = cpp_iter(planned)
        self._spec = dataset.element_spec
        self._count = 0    # elements handed out: the position a checkpoint saves
        self._last = None  # the last of them: a restore checks its replay gives it again

    @property
    def element_spec(self):
        return self._spec

    def __iter__(self):
        return self

    def __next__(self):
        if _core._in_trace():  # an op of the trace: the element of each run (TF's IteratorGetNext)
            return _data_graph.iterator_in_trace(self).get_next()
        element = _observed_next(self._it.__next__) if _next_observers else next(self._it)
        self._count += 1  # (kept inline: this runs for every element)
        self._last = element
        return element

    def next(self):
        return self.__next__()

    def get_next(self):
        if _core._in_trace():
            return _data_graph.iterator_in_trace(self).get_next()
        element = _observed_next(self._it.get_next) if _next_observers else self._it.get_next()
        self._count += 1
        self._last = element
        return element

    def get_next_as_optional(self):
        from . import errors
        if _core._in_trace():
            return _data_graph.iterator_in_trace(self).get_next_as_optional()
        try:
            return Optional(self.get_next(), True, self._spec)
        except errors.OutOfRangeError:
            return Optional(None, False, self._spec)

    def close(self):
        self._it.close()

    # tf.train.Checkpoint's protocol (python/eagerflow/_checkpoint.py).

    def _ef_checkpoint_children(self):
        return []

    def _ef_checkpoint_state(self):
        from . import _iterator_state
        return _iterator_state.state_of(self)

    def _ef_restore_checkpoint_state(self, value):
        from . import _iterator_state
        _iterator_state.restore(self, value)

    def _replace(self, cpp_iterator, seeds, count, last):
        old, self._it = self._it, cpp_iterator
        self._seeds, self._count, self._last = seeds, count, last
        old.close()


class NumpyIterator:
    """What Dataset.as_numpy_iterator returns: the elements as NumPy values, in the structure
    of element_spec (a tuple, a dict, or one value)."""

    def __init__(self, dataset):
        self._iterator = iter(dataset)

    def __iter__(self):
        return self

    def __next__(self):
        return _numpy(next(self._iterator))

    def next(self):
        return self.__next__()

    def __repr__(self):
        return f"NumpyIterator(iterator={self._iterator!r})"


def _numpy(element):
    if isinstance(element, tuple):
        return tuple(_numpy(e) for e in element)
    if isinstance(element, dict):
        return {k: _numpy(v) for k, v in element.items()}
    return element.numpy() if hasattr(element, "numpy") else _np.asarray(element)


def _spec_repr(spec):
    if isinstance(spec, tuple):
        return "(" + ", ".join(_spec_repr(s) for s in spec) + ("," if len(spec) == 1 else "") + ")"
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{k!r}: {_spec_repr(v)}" for k, v in spec.items()) + "}"
    return repr(spec)


class DatasetSpec:
    """tf.data.DatasetSpec: the type of a dataset, its element_spec (and the dataset's own
    shape, () for a plain dataset)."""

    def __init__(self, element_spec, dataset_shape=()):
        self._element_spec = element_spec
        self._dataset_shape = tuple(dataset_shape)

    @staticmethod
    def from_value(value):
        return DatasetSpec(value.element_spec)

    @property
    def element_spec(self):
        return self._element_spec

    @property
    def value_type(self):
        return _core._data.Dataset

    def is_compatible_with(self, spec_or_value):
        other = spec_or_value if isinstance(spec_or_value, DatasetSpec) else DatasetSpec.from_value(spec_or_value)
        return self == other

    def __eq__(self, other):
        return (type(other) is type(self) and self._dataset_shape == other._dataset_shape
                and self._element_spec == other._element_spec)

    def __hash__(self):
        return hash((type(self), repr(self)))

    def __repr__(self):
        return f"DatasetSpec({_spec_repr(self._element_spec)}, TensorShape({list(self._dataset_shape)}))"


class IteratorSpec:
    """tf.data.IteratorSpec: the type of an iterator over elements of element_spec."""

    def __init__(self, element_spec):
        self._element_spec = element_spec

    @staticmethod
    def from_value(value):
        return IteratorSpec(value.element_spec)

    @property
    def element_spec(self):
        return self._element_spec

    @property
    def value_type(self):
        return OwnedIterator

    def is_compatible_with(self, spec_or_value):
        other = spec_or_value if isinstance(spec_or_value, IteratorSpec) else IteratorSpec.from_value(spec_or_value)
        return self == other

    def __eq__(self, other):
        return type(other) is type(self) and self._element_spec == other._element_spec

    def __hash__(self):
        return hash((type(self), repr(self)))

    def __repr__(self):
        return f"IteratorSpec({_spec_repr(self._element_spec)},)"
