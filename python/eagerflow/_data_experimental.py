"""tf.data.experimental (the part that works as TF's here), and Dataset.apply /
get_single_element.

Left out: transformations the C++ pipeline does not have yet (unbatch, unique, take_while,
ignore_errors, sample_from_datasets, ...), and Counter (its cardinality would not be TF's
INFINITE_CARDINALITY: the pipeline's enumerate of an infinite dataset reports a finite one)."""
import sys as _sys
import types as _types

from . import _core
from ._data_iterators import Optional
from ._data_options import (AutoShardPolicy, AutotuneAlgorithm, AutotuneOptions, DistributeOptions, ExternalStatePolicy,
                            OptimizationOptions, ServiceOptions, ThreadingOptions)

Dataset = _core._data.Dataset


def cardinality(dataset):
    """The number of elements, or INFINITE_CARDINALITY / UNKNOWN_CARDINALITY."""
    return dataset.cardinality()


def get_structure(dataset_or_iterator):
    """The element_spec of a dataset or an iterator."""
    try:
        return dataset_or_iterator.element_spec
    except AttributeError:
        raise TypeError("Invalid `dataset_or_iterator`. `dataset_or_iterator` must be a `tf.data.Dataset` or "
                        f"tf.data.Iterator object, but got {type(dataset_or_iterator)}.") from None


def get_next_as_optional(iterator):
    return iterator.get_next_as_optional()


def get_single_element(dataset):
    """The one element of a dataset; InvalidArgumentError when it has none or more."""
    from . import errors
    it = iter(dataset)
    try:
        element = next(it)
    except StopIteration:
        raise errors.InvalidArgumentError(None, None, "Dataset was empty.") from None
    try:
        next(it)
    except StopIteration:
        return element
    raise errors.InvalidArgumentError(None, None, "Dataset had more than one element.")


def enumerate_dataset(start=0):
    """A transformation (for Dataset.apply): dataset.enumerate(start)."""
    return lambda dataset: dataset.enumerate(start)


def _stack(items):
    first = items[0]
    if isinstance(first, tuple):
        if any(not isinstance(i, tuple) or len(i) != len(first) for i in items):
            raise ValueError("from_list: the elements must all have the same structure")
        return tuple(_stack([i[k] for i in items]) for k in range(len(first)))
    if isinstance(first, dict):
        if any(not isinstance(i, dict) or set(i) != set(first) for i in items):
            raise ValueError("from_list: the elements must all have the same structure")
        return {k: _stack([i[k] for i in items]) for k in first}
    if any(isinstance(i, (tuple, dict)) for i in items):
        raise ValueError("from_list: the elements must all have the same structure")
    return _core.stack([_core.convert_to_tensor(i) for i in items])


def from_list(elements, name=None):
    """A dataset of the list's elements, in order (each a value, tuple or dict of values of the
    same structure, dtypes and shapes)."""
    if not elements:
        raise ValueError("Invalid `elements`. `elements` should not be empty. If you want an empty dataset, "
                         "use `tf.data.Dataset.range(0)`.")
    return Dataset.from_tensor_slices(_stack(list(elements)))


class TFRecordWriter:
    """Writes a dataset of string scalars to a TFRecord file (write(dataset))."""

    def __init__(self, filename, compression_type=None):
        self._filename, self._compression = filename, compression_type

    def write(self, dataset):
        spec = dataset.element_spec
        if not isinstance(spec, _core.TensorSpec) or spec.dtype != _core.DType.string or spec.shape is None or list(spec.shape) != []:
            raise TypeError("Invalid `dataset`. Expected a`dataset` that produces scalar `tf.string` elements, but got "
                            f"a dataset which produces elements {spec}.")
        from ._tfrecord import TFRecordWriter as _Writer
        with _Writer(self._filename, self._compression) as w:
            for record in dataset:
                w.write(record.numpy())


def _apply(self, transformation_func):
    """transformation_func(self), which must return a dataset."""
    out = transformation_func(self)
    if not isinstance(out, Dataset):
        raise TypeError(f"`transformation_func` must return a `tf.data.Dataset` object. Got {type(out)}.")
    return out


Dataset.apply = _apply
Dataset.get_single_element = get_single_element

experimental = _types.ModuleType("eagerflow.data.experimental", "tf.data.experimental")
for _n, _v in dict(
        AUTOTUNE=_core._data.AUTOTUNE, INFINITE_CARDINALITY=_core._data.INFINITE, UNKNOWN_CARDINALITY=_core._data.UNKNOWN,
        AutoShardPolicy=AutoShardPolicy, AutotuneAlgorithm=AutotuneAlgorithm, ExternalStatePolicy=ExternalStatePolicy,
        AutotuneOptions=AutotuneOptions, DistributeOptions=DistributeOptions, OptimizationOptions=OptimizationOptions,
        ServiceOptions=ServiceOptions, ThreadingOptions=ThreadingOptions, Optional=Optional, TFRecordWriter=TFRecordWriter,
        cardinality=cardinality, enumerate_dataset=enumerate_dataset, from_list=from_list,
        get_next_as_optional=get_next_as_optional, get_single_element=get_single_element,
        get_structure=get_structure).items():
    setattr(experimental, _n, _v)
_sys.modules[experimental.__name__] = experimental
