"""Datasets read when a traced graph runs, not when it traces (TF's dataset ops in a graph).

Inside ef.function, `for x in dataset`, `iter(dataset)`, `next(iterator)` and `Dataset.reduce`
become host calls (ef::host_call, as tf.py_function inside a trace) around an ef.while_loop:
  open:  starts a Python iterator over the dataset, on every run of the graph (an effect), and
         returns its token (an int64 scalar naming it in `_live`);
  pull:  the next element of that iterator: (has_value, *element tensors), zeros once exhausted
         (the element's dims unknown to the trace, a final partial batch, stay unknown: host
         calls declare them so);
  close: forgets the iterator (after the loop, or when a `break` left it unfinished).
Every call of the traced function thus iterates the dataset afresh, as TF's graph loop does.

A dataset passed as an argument of ef.function is keyed by its element_spec (TF's DatasetSpec),
not by the object: a new dataset of the same spec reuses the trace. Its trace gets an int64
handle tensor in its place (`argument_handle`), which `open` resolves at run time to the dataset
of that call; datasets made from it inside the trace (ds.map(f).batch(2)) are recorded as
recipes and rebuilt from the call's dataset when the graph runs.
"""
import itertools
import threading

import numpy as _np

from . import _core

_I64 = _core.DType.int64
_tokens = itertools.count(1)
_live = {}  # token -> the Python iterator of one run of one loop
_arguments = {}  # handle -> the dataset a call passed (held while that call runs)
_local = threading.local()
END_CHECK = "iterator_end_check"  # the host call of next(): its failure is TF's OutOfRangeError
_GET_NEXT_LIMIT = 32  # next() calls on one iterator in one trace before TF's error


def is_dataset(x):
    return isinstance(x, _core._data.Dataset)


def is_iterator(x):
    from ._data_iterators import OwnedIterator
    return isinstance(x, (OwnedIterator, GraphIterator))


# --- dataset arguments of ef.function ------------------------------------------------------------

def is_argument(x):
    """A value ef.function passes by handle: a dataset, or an iterator made eagerly."""
    from ._data_iterators import OwnedIterator
    return isinstance(x, (_core._data.Dataset, OwnedIterator))


def argument_handle(value):
    """(signature key, handle tensor, handle) of a dataset or iterator passed to ef.function: the
    handle names it in `_arguments` until release_arguments(handles) at the end of the call."""
    from ._data_iterators import DatasetSpec, IteratorSpec
    handle = next(_tokens)
    _arguments[handle] = value
    spec = DatasetSpec(value.element_spec) if is_dataset(value) else IteratorSpec(value.element_spec)
    return repr(spec), _core.constant(handle, dtype=_I64), handle


def release_arguments(handles):
    for h in handles:
        _arguments.pop(h, None)


class trace_scope:  # noqa: N801 - a context manager
    """One trace's record of its dataset arguments and the datasets made from them:
    id(dataset) -> (dataset, source) where source is a handle tensor or a recipe."""

    def __enter__(self):
        self.saved = getattr(_local, "sources", None)
        _local.sources = {}
        return self

    def __exit__(self, *exc):
        _local.sources = self.saved


def bind_argument(dataset, handle):
    """The dataset a trace sees for an argument: the trace-time one, remembered with its handle."""
    sources = getattr(_local, "sources", None)
    if sources is not None:
        sources[id(dataset)] = (dataset, ("handle", handle))
    return dataset


def _source_of(dataset):
    sources = getattr(_local, "sources", None)
    entry = None if sources is None else sources.get(id(dataset))
    return entry[1] if entry is not None and entry[0] is dataset else None


def _record_derived(method):
    """A Dataset method that, inside a trace, records how a dataset made from an argument is made."""
    def wrapped(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        if is_dataset(out) and out is not self and _core._in_trace():
            parent = _source_of(self)
            if parent is not None:
                _local.sources[id(out)] = (out, ("derived", parent, method, args, kwargs))
        return out
    wrapped.__name__, wrapped.__doc__ = getattr(method, "__name__", "method"), getattr(method, "__doc__", None)
    return wrapped


def install_recording(names):
    for name in names:
        if hasattr(_core._data.Dataset, name):
            setattr(_core._data.Dataset, name, _record_derived(getattr(_core._data.Dataset, name)))


def _runtime_inputs(source):
    """The handle tensor a source needs at run time (none for a dataset the trace closes over)."""
    while source is not None and source[0] == "derived":
        source = source[1]
    return [] if source is None else [source[1]]


def _resolve(source, dataset, inputs):
    """The dataset of this run: the trace-time one, or the call's argument rebuilt by the recipe."""
    if source is None:
        return dataset
    if source[0] == "handle":
        handle = int(inputs[0].numpy())
        try:
            return _arguments[handle]
        except KeyError:
            from . import errors
            raise errors.FailedPreconditionError(None, None, "the dataset passed to this function call is gone "
                                                 "(a traced dataset argument is read only during its call)") from None
    _, parent, method, args, kwargs = source
    return method(_resolve(parent, None, inputs), *args, **kwargs)


# --- elements --------------------------------------------------------------------------------------

def _flat_specs(spec, out):
    if isinstance(spec, dict):
        return (dict, [(k, _flat_specs(spec[k], out)) for k in sorted(spec)])
    if isinstance(spec, (tuple, list)):
        return (type(spec), [_flat_specs(s, out) for s in spec])
    out.append(spec)
    return ("leaf",)


def _unflat(tree, it):
    if tree[0] == "leaf":
        return next(it)
    if tree[0] is dict:
        return {k: _unflat(t, it) for k, t in tree[1]}
    items = [_unflat(t, it) for t in tree[1]]
    return tree[0](*items) if hasattr(tree[0], "_fields") else tree[0](items)


def _flat_values(tree, value, out):
    if tree[0] == "leaf":
        out.append(value.value() if isinstance(value, _core.Variable) else value)
    elif tree[0] is dict:
        for k, t in tree[1]:
            _flat_values(t, value[k], out)
    else:
        for t, v in zip(tree[1], value):
            _flat_values(t, v, out)


def _empty(spec):
    """A stand-in element once the iterator is exhausted (never reached by the loop body)."""
    shape = [0 if d is None else d for d in spec.shape]
    if spec.dtype == _core.DType.string:
        return _core.convert_to_tensor(_np.full(shape, b"", dtype=object))
    return _core.zeros(shape, dtype=spec.dtype)


class Enumerated:
    """enumerate(dataset) inside a trace: (int64 index, element) pairs, the element kept whole
    (TF's conversion of enumerate over a dataset)."""

    def __init__(self, dataset, start=0):
        self.dataset, self.start = dataset, int(start)
        self.element_spec = (_core.TensorSpec([], _I64), dataset.element_spec)

    def python_iterator(self, dataset):
        return ((_core.constant(i, dtype=_I64), e) for i, e in enumerate(dataset, self.start))


class GraphIterator:
    """An iterator over a dataset inside a trace: iter(dataset) in ef.function. Its elements are
    pulled when the graph runs (each run starts it afresh, as TF's iterator made in a function)."""

    def __init__(self, dataset=None, iterator=None):
        wrapper = None
        if isinstance(dataset, Enumerated):
            wrapper, dataset = dataset, dataset.dataset
        self._dataset, self._iterator = dataset, iterator
        self._traced_nexts = 0
        spec = next(x for x in (wrapper, dataset, iterator) if x is not None).element_spec  # (len() may fail)
        self._specs = []
        self._tree = _flat_specs(spec, self._specs)
        self.element_spec = spec
        name = "dataset" if dataset is not None else "iterator"
        if iterator is not None:
            # an iterator made eagerly: every run continues it (TF's iterator passed to a function);
            # an argument's is the call's (its handle), another the one the trace closes over
            source = _source_of(iterator)
            self.token = source[1] if source is not None else _core.constant(0, dtype=_I64)
            self._by_handle = source is not None
        else:
            source = _source_of(dataset)
            inputs = _runtime_inputs(source)

            def start(xs, source=source, dataset=dataset):
                ds = _resolve(source, dataset, xs)
                it = iter(ds) if wrapper is None else wrapper.python_iterator(ds)
                token = next(_tokens)
                _live[token] = it
                return [_core.constant(token, dtype=_I64)]
            self.token = _core._host_call(start, inputs, [_core.TensorSpec([], _I64)], f"{name}_iterator", None)[0]
        self._name = name

    def cardinality(self):
        """The number of elements left, an int32 tensor of this run (a dynamic TensorArray's room),
        or None for an eager iterator (how many are left is not known)."""
        if self._dataset is None:
            return None
        source, dataset = _source_of(self._dataset), self._dataset

        def count(xs):
            ds = _resolve(source, dataset, xs[1:])
            n = int(_np.asarray(ds.cardinality()))
            if n < 0:
                from . import errors
                raise errors.InvalidArgumentError(None, None, "a TensorArray with dynamic_size=True grows in a "
                                                  "dataset loop inside ef.function by the dataset's cardinality, "
                                                  "which is unknown or infinite here")
            return [_core.constant(n, dtype=_core.DType.int32)]
        return _core._host_call(count, [self.token] + _runtime_inputs(source), [_core.TensorSpec([], _core.DType.int32)],
                                "dataset_cardinality", None)[0]

    def _python_iterator(self, token):
        if self._iterator is None:
            return _live.get(token)
        return _arguments.get(token) if self._by_handle else self._iterator

    def pull(self, after=None):
        """(has_value, element) as tensors of this run; `after` orders the pull after a value."""
        specs, tree = self._specs, self._tree

        def get_next(xs):
            token = int(xs[0].numpy())
            it = self._python_iterator(token)
            try:
                element = next(it) if it is not None else None
            except StopIteration:
                element = None
            if element is None:
                _live.pop(token, None)
                return [_core.constant(False)] + [_empty(s) for s in specs]
            leaves = []
            _flat_values(tree, element, leaves)
            return [_core.constant(True)] + leaves

        inputs = [self.token] + ([] if after is None else [after])
        out_specs = [_core.TensorSpec([], _core.DType.bool)] + [_core.TensorSpec(list(s.shape), s.dtype) for s in specs]
        out = _core._host_call(get_next, inputs, out_specs, f"{self._name}_get_next", None)
        return out[0], _unflat(tree, iter(out[1:]))

    def close(self, after):
        if self._iterator is not None:
            return

        def close(xs):
            _live.pop(int(xs[0].numpy()), None)
            return []
        _core._host_call(close, [self.token, after], [], f"{self._name}_close", None)

    def get_next(self):
        """The next element; tf.errors.OutOfRangeError when the graph runs past the end."""
        self._traced_nexts += 1
        if self._traced_nexts > _GET_NEXT_LIMIT:
            # a Python `for` over the iterator (never ending at trace time): TF's error
            raise ValueError("An unusually high number of `tf.data.Iterator.get_next()` calls was detected. This "
                             "suggests that the `for elem in dataset: ...` idiom is used within tf.function with "
                             "AutoGraph disabled. This idiom is only supported when AutoGraph is enabled.")
        has, element = self.pull()
        from . import errors

        def check(xs):
            if not bool(xs[0].numpy()):
                raise errors.OutOfRangeError(None, None, "End of sequence")
            return []
        _core._host_call(check, [has], [], END_CHECK, None)
        return element

    def __next__(self):
        return self.get_next()

    def next(self):
        return self.get_next()

    def __iter__(self):
        return self

    def get_next_as_optional(self):
        """The next element as an Optional whose has_value() is a bool tensor of this run."""
        has, element = self.pull()
        return GraphOptional(has, element, self.element_spec)


class GraphOptional:
    """tf.experimental.Optional inside a trace: has_value() is known when the graph runs;
    get_value() fails then (InvalidArgumentError, as TF's) where there is none."""

    def __init__(self, has, value, element_spec):
        self._has, self._value, self.element_spec = has, value, element_spec

    def has_value(self, name=None):
        return self._has

    def get_value(self, name=None):
        from . import errors

        def check(xs):
            if not bool(xs[0].numpy()):
                raise errors.InvalidArgumentError(None, None, "The given optional does not have a value.")
            return []
        _core._host_call(check, [self._has], [], "optional_get_value", None)
        return self._value


def end_of_sequence():
    from . import errors
    return errors.OutOfRangeError(None, None, "End of sequence")


def iterator_in_trace(x):
    """A GraphIterator for a dataset (a new one each time: each loop reads it afresh) or for an
    eager iterator (one per trace: its next() calls are counted)."""
    if isinstance(x, GraphIterator):
        return x
    if is_dataset(x) or isinstance(x, Enumerated):
        return GraphIterator(dataset=x)
    sources = getattr(_local, "sources", None)
    key = ("iterator", id(x))
    if sources is not None and key in sources and sources[key][0] is x:
        return sources[key][1]
    it = GraphIterator(iterator=x)
    if sources is not None:
        sources[key] = (x, it)
    return it


def reduce(dataset, initial_state, reduce_func):
    """Dataset.reduce inside a trace: one ef.while_loop pulling the elements when the graph runs."""
    from . import nest
    from . import errors
    state = nest.map_structure(lambda v: v if isinstance(v, _core.Tensor) else _core.convert_to_tensor(v),
                               initial_state)
    flat0 = nest.flatten(state)
    it = GraphIterator(dataset=dataset)

    def cond(more, *flat):
        return more

    def body(more, *flat):
        has, element = it.pull(after=more)
        current = nest.pack_sequence_as(state, list(flat))

        def step():
            new = reduce_func(current, element)
            new = nest.map_structure(lambda v: v if isinstance(v, _core.Tensor) else _core.convert_to_tensor(v), new)
            nest.assert_same_structure(state, new)
            out = nest.flatten(new)
            for a, b in zip(flat0, out):
                if a.dtype != b.dtype:
                    raise TypeError(f"Dataset.reduce: reduce_func changed a state's dtype from {a.dtype.name} to "
                                    f"{b.dtype.name}")
                if tuple(a._shape_tuple) != tuple(b._shape_tuple):
                    raise errors.InvalidArgumentError(None, None, "Dataset.reduce inside ef.function: reduce_func "
                                                      f"changed a state's shape from {list(a._shape_tuple)} to "
                                                      f"{list(b._shape_tuple)}")
            return out
        new = _core.cond(has, step, lambda: list(flat)) if flat else (step() and [])
        new = list(new) if isinstance(new, (list, tuple)) else [new]
        return [has] + new

    out = list(_core.while_loop(cond, body, [_core.constant(True)] + flat0))
    it.close(out[0])
    return nest.pack_sequence_as(state, out[1:])
