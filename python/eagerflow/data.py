"""ef.data: input pipelines (Dataset, as tf.data) and the MNIST files (IDX, gzip) as NumPy
arrays, with a generated stand-in.

Dataset runs in C++ (eagerflow/data/dataset.h): functions given to map/filter are traced once
into a graph, which the pipeline's threads replay without Python. Generators (from_generator),
and map functions run eagerly under ef.run_functions_eagerly, are Python on every element and
run under the GIL, one at a time.
"""
import numpy as _np

from . import _core

_io = _core._io

Dataset = _core._data.Dataset
AUTOTUNE = _core._data.AUTOTUNE
INFINITE_CARDINALITY = _core._data.INFINITE
UNKNOWN_CARDINALITY = _core._data.UNKNOWN


from . import _data_graph, _data_options
from ._data_files import FixedLengthRecordDataset
from ._data_iterators import DatasetSpec, Iterator, IteratorSpec, NumpyIterator, OwnedIterator
from ._data_options import Options, ThreadingOptions
from ._data_experimental import experimental  # noqa: F401 - tf.data.experimental

_cpp_iter = Dataset.__iter__
Dataset.__iter__ = lambda self: (_data_graph.GraphIterator(dataset=self) if _core._in_trace()
                                 else OwnedIterator(self, _cpp_iter))
Dataset.as_numpy_iterator = lambda self: NumpyIterator(self)
Dataset.as_numpy_iterator.__doc__ = """The elements as NumPy values (tf.data's Dataset.as_numpy_iterator)."""
for _name in ("batch", "cache", "enumerate", "filter", "interleave", "map", "padded_batch", "prefetch", "repeat",
              "shuffle", "skip", "take"):
    setattr(Dataset, _name, _data_options.propagate(getattr(Dataset, _name)))
Dataset.with_options = _data_options.with_options
Dataset.options = _data_options.options
_data_graph.install_recording(("apply", "batch", "cache", "concatenate", "enumerate", "filter", "flat_map", "interleave",
                                "map", "padded_batch", "prefetch", "rebatch", "repeat", "shard", "shuffle", "skip",
                                "take", "take_while", "unbatch", "window", "with_options"))



def _reduce(self, initial_state, reduce_func, name=None):
    """tf.data.Dataset.reduce: reduce_func(state, element) over every element, from
    initial_state (a tensor or a structure of them); the final state."""
    from . import nest
    if _core._in_trace():
        return _data_graph.reduce(self, initial_state, reduce_func)  # read when the graph runs, as TF's
    state = nest.map_structure(lambda v: v if isinstance(v, _core.Tensor) else _core.convert_to_tensor(v), initial_state)
    for element in self:
        new = reduce_func(state, element)  # (a tuple element stays one argument, as TF's)
        new = nest.map_structure(lambda v: v if isinstance(v, _core.Tensor) else _core.convert_to_tensor(v), new)
        nest.assert_same_structure(state, new)
        for a, b in zip(nest.flatten(state), nest.flatten(new)):
            if a.dtype != b.dtype:
                raise TypeError(f"Dataset.reduce: reduce_func changed a state's dtype from {a.dtype.name} to {b.dtype.name}")
        state = new
    return state


Dataset.reduce = _reduce
_from_generator = Dataset.from_generator


def _signature_from_types(output_types, output_shapes):
    """TF's deprecated output_types/output_shapes as an output_signature of TensorSpecs."""
    if isinstance(output_types, (tuple, list)):
        shapes = output_shapes if output_shapes is not None else [None] * len(output_types)
        return tuple(_signature_from_types(t, s) for t, s in zip(output_types, shapes))
    if isinstance(output_types, dict):
        shapes = output_shapes or {}
        return {k: _signature_from_types(t, shapes.get(k)) for k, t in output_types.items()}
    return _core.TensorSpec(shape=None if output_shapes is None else list(output_shapes), dtype=output_types)


def _from_generator_tf(generator, output_types=None, output_shapes=None, args=None, output_signature=None, name=None):
    """tf.data.Dataset.from_generator: args (converted to NumPy values, as TF's) are passed to
    the generator on each iteration; output_types/output_shapes stand for output_signature."""
    if output_signature is None:
        if output_types is None:
            raise TypeError("from_generator: give output_signature (or the deprecated output_types)")
        output_signature = _signature_from_types(output_types, output_shapes)
    elif output_types is not None or output_shapes is not None:
        raise TypeError("from_generator: give output_signature or output_types/output_shapes, not both")
    if args is not None:
        values = tuple(_np.asarray(a.numpy() if hasattr(a, "numpy") else a) for a in args)
        call = generator
        generator = lambda: call(*values)  # noqa: E731
    return _from_generator(_generator_as_signature(generator, output_signature), output_signature)


def _as_spec(value, spec):
    """A yielded value as the signature reads it (TF's): a list or tuple where the signature has
    one TensorSpec is one array (yield (i,) for TensorSpec([1]))."""
    if isinstance(spec, _core.TensorSpec):
        return _np.asarray(value) if isinstance(value, (list, tuple)) else value
    if isinstance(spec, tuple) and isinstance(value, (list, tuple)) and len(value) == len(spec):
        return tuple(_as_spec(v, s) for v, s in zip(value, spec))
    if isinstance(spec, dict) and isinstance(value, dict):
        return {k: _as_spec(v, spec[k]) if k in spec else v for k, v in value.items()}
    return value


def _generator_as_signature(generator, signature):
    def converted():
        for value in generator():
            yield _as_spec(value, signature)
    return converted


Dataset.from_generator = staticmethod(_from_generator_tf)
from . import _data_recipe  # noqa: E402 - records how each dataset is built (for iterator checkpoints)
_data_recipe.install()
from . import _data_save  # noqa: E402 - Dataset.save / load
_data_save.install(Dataset, experimental)


def find_mnist(flag=""):
    """The folder with the MNIST files: `flag` if given, else $EF_MNIST_DIR, else
    ../shared/data/mnist from the working directory or a parent; None when none has them."""
    return _io._find_mnist(str(flag))


def _arrays(pair):
    images, labels = pair
    return _np.array(images), _np.array(labels)  # arrays of their own, writable as Keras' load_data


def load_mnist_test(dir=None):  # noqa: A002 - the C++ name
    """The MNIST test set (t10k-*): images float32 [10000, 28, 28] in [0, 1], labels int64."""
    if dir is None:
        dir = find_mnist()  # noqa: A001
        if dir is None:
            raise FileNotFoundError("MNIST files not found (set EF_MNIST_DIR or pass the folder)")
    return _arrays(_io._load_mnist_test(str(dir)))


def load_idx(images_path, labels_path):
    return _arrays(_io._load_idx(str(images_path), str(labels_path)))


def synthetic_digits(n, seed=0):
    """n generated digit-like images and labels (for running without the files)."""
    return _arrays(_io._synthetic_digits(int(n), int(seed)))


__all__ = ["Dataset", "DatasetSpec", "FixedLengthRecordDataset", "Iterator", "IteratorSpec", "NumpyIterator", "Options",
           "TFRecordDataset", "TextLineDataset", "ThreadingOptions", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "find_mnist", "load_mnist_test", "load_idx", "synthetic_digits"]


def TextLineDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):  # noqa: N802
    """tf.data.TextLineDataset: the lines of the files (a name or a list), in order, as string
    scalars without their line endings."""
    if compression_type not in (None, ""):
        raise NotImplementedError(f"TextLineDataset: compression_type={compression_type!r} is not supported here")
    if isinstance(filenames, (str, bytes)):
        filenames = [filenames]
    elif isinstance(filenames, _core.Tensor):
        filenames = [f.decode() for f in _np.atleast_1d(filenames.numpy())]
    return Dataset.text_line([f.decode() if isinstance(f, bytes) else str(f) for f in filenames])


def TFRecordDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):  # noqa: N802
    """tf.data.TFRecordDataset: the records of TFRecord files (a name or a list), in order, as
    string scalars, read in a stream; compression_type '' (None), 'GZIP' or 'ZLIB'. A damaged or
    truncated record raises DataLossError when iteration reaches it."""
    from ._tfrecord import TFRecordOptions
    kind = TFRecordOptions.get_compression_type_string(
        compression_type.numpy().decode() if isinstance(compression_type, _core.Tensor) else compression_type)
    if isinstance(filenames, (str, bytes)):
        filenames = [filenames]
    elif isinstance(filenames, _core.Tensor):
        filenames = [f.decode() for f in _np.atleast_1d(filenames.numpy())]
    elif isinstance(filenames, Dataset):
        filenames = [f.decode() if isinstance(f, bytes) else f for f in filenames.as_numpy_iterator()]
    files = [f.decode() if isinstance(f, bytes) else str(f) for f in filenames]
    if num_parallel_reads not in (None, 1) and len(files) > 1:
        # TF's order for parallel reads: the files interleaved one record at a time, cycle
        # num_parallel_reads (deterministic).
        n = len(files) if num_parallel_reads == AUTOTUNE else int(num_parallel_reads)
        return Dataset.from_tensor_slices(_np.arange(len(files), dtype=_np.int64)).interleave(
            lambda i: Dataset.tfrecord([files[int(i)]], kind), cycle_length=n, block_length=1)
    return Dataset.tfrecord(files, kind)
from . import _data_shard  # noqa: E402 - Dataset.shard (python/eagerflow/_data_shard.py)
_data_shard.install(Dataset)
from . import _data_tf_arguments  # noqa: E402 - TF's hint arguments (name=, interleave's num_parallel_calls=)
_data_tf_arguments.install(Dataset)
from . import _data_flat_map  # noqa: E402 - Dataset.flat_map
_data_flat_map.install(Dataset)
