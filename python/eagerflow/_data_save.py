"""Dataset.save / Dataset.load (and tf.data.experimental.save / load): a dataset's elements
written to a directory and read back as a dataset.

The directory is eagerflow's own (TF's snapshot files are protos this does not write or read):
`shard_<i>.tfrecord` files of TF's record framing, each element as one record per component
(TF's TensorProto bytes, tf.io.serialize_tensor), optionally GZIP-compressed, and
`eagerflow_dataset.json` (the element spec, the shard count, the compression) written last, so
that a directory whose save did not finish is not loaded. Elements go to shard 0, or to the
shard shard_func returns; load reads the shards as TF's default reader_func does: interleaved
one element at a time, cycle_length the number of CPUs.

Left out: checkpoint_args (saving in steps that resume) and reader_func (TF passes it a dataset
of datasets, which the C++ pipeline cannot hold).
"""
import json
import os

import numpy as np

from . import _core

_METADATA = "eagerflow_dataset.json"
_FORMAT = "eagerflow-dataset-save"


def _errors():
    from . import errors
    return errors


def _spec_to_json(spec):
    def one(s):
        return {"dtype": s.dtype.name, "shape": None if s.shape is None else [None if d is None else int(d)
                                                                            for d in s.shape]}
    if isinstance(spec, tuple):
        return {"structure": "tuple", "specs": [one(s) for s in spec]}
    if isinstance(spec, dict):
        return {"structure": "dict", "keys": sorted(spec), "specs": [one(spec[k]) for k in sorted(spec)]}
    return {"structure": "tensor", "specs": [one(spec)]}


def _spec_from_json(d):
    specs = [_core.TensorSpec(shape=s["shape"], dtype=_core.DType.__members__[s["dtype"]]) for s in d["specs"]]
    if d["structure"] == "tuple":
        return tuple(specs)
    if d["structure"] == "dict":
        return dict(zip(d["keys"], specs))
    return specs[0]


def _components(element, structure):
    if structure == "tuple":
        return list(element)
    if structure == "dict":
        return [element[k] for k in sorted(element)]
    return [element]


def _compression(compression):
    if compression in (None, "", "NONE"):
        return ""
    if compression == "GZIP":
        return "GZIP"
    raise ValueError(f"compression must be None or 'GZIP' here, got {compression!r}")


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    """Writes the dataset's elements under `path` (a directory, made if missing)."""
    from ._tfrecord import TFRecordWriter
    if checkpoint_args is not None:
        raise NotImplementedError("Dataset.save: checkpoint_args (a save that resumes) is not supported by eagerflow")
    kind = _compression(compression)
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    meta = os.path.join(path, _METADATA)
    if os.path.exists(meta):
        os.remove(meta)  # a save that stops now leaves no dataset to load, not a mix of two
    layout = _spec_to_json(dataset.element_spec)
    writers = {}
    try:
        for element in dataset:
            shard = 0
            if shard_func is not None:
                index = shard_func(*element) if isinstance(element, tuple) else shard_func(element)
                shard = int(np.asarray(index.numpy() if hasattr(index, "numpy") else index))
                if shard < 0:
                    raise _errors().InvalidArgumentError(None, None,
                                                         f"Dataset.save: shard_func returned {shard}, a negative shard")
            if shard not in writers:
                writers[shard] = TFRecordWriter(os.path.join(path, f"shard_{shard}.tfrecord"), kind or None)
            for t in _components(element, layout["structure"]):
                writers[shard].write(_core._io._serialize_tensor(_core.convert_to_tensor(t)))
    finally:
        for w in writers.values():
            w.close()
    shards = sorted(writers)
    with open(meta + ".tmp", "w") as f:
        json.dump({"format": _FORMAT, "version": 1, "element_spec": layout, "shards": shards,
                   "compression": kind}, f)
    os.replace(meta + ".tmp", meta)


def _read_shard(path, kind, n, dtypes, structure, keys):
    from . import data
    records = iter(data.TFRecordDataset(path, compression_type=kind or None))
    for first in records:
        raw = [first.numpy()] + [next(records).numpy() for _ in range(n - 1)]
        values = [_core._io._parse_tensor(bytes(r), dt) for r, dt in zip(raw, dtypes)]
        if structure == "tuple":
            yield tuple(values)
        elif structure == "dict":
            yield dict(zip(keys, values))
        else:
            yield values[0]


def load(path, element_spec=None, compression=None, reader_func=None, wait=False):
    """The dataset Dataset.save wrote under `path`."""
    from . import data
    if reader_func is not None:
        raise NotImplementedError("Dataset.load: reader_func is not supported by eagerflow (the shards are read "
                                  "interleaved, as TF's default reader_func does)")
    path = os.fspath(path)
    meta = os.path.join(path, _METADATA)
    if not os.path.exists(meta):
        raise _errors().NotFoundError(None, None, f"Dataset.load: no saved dataset at {path} ({_METADATA} not found: "
                                      "the path is wrong, or its save did not finish)")
    with open(meta) as f:
        info = json.load(f)
    if info.get("format") != _FORMAT:
        raise _errors().InvalidArgumentError(None, None, f"Dataset.load: {meta} is not a dataset eagerflow saved")
    saved = _spec_from_json(info["element_spec"])
    spec = saved if element_spec is None else element_spec
    layout = _spec_to_json(spec)
    if [s["dtype"] for s in layout["specs"]] != [s["dtype"] for s in info["element_spec"]["specs"]]:
        raise _errors().InvalidArgumentError(None, None, f"Dataset.load: element_spec {spec} does not match the "
                                             f"saved elements' {saved}")
    kind, shards = info["compression"], info["shards"]
    dtypes = [_core.DType.__members__[s["dtype"]] for s in layout["specs"]]
    n, cycle = len(dtypes), max(1, os.cpu_count() or 1)
    files = [os.path.join(path, f"shard_{i}.tfrecord") for i in shards]

    def elements():
        # TF's default reader_func: interleave(cycle_length=CPUs, block_length=1) over the shards
        pending = list(files)
        open_ = []
        while pending and len(open_) < cycle:
            open_.append(_read_shard(pending.pop(0), kind, n, dtypes, layout["structure"], layout.get("keys")))
        i = 0
        while open_:
            i %= len(open_)
            try:
                yield next(open_[i])
                i += 1
            except StopIteration:
                if pending:
                    open_[i] = _read_shard(pending.pop(0), kind, n, dtypes, layout["structure"], layout.get("keys"))
                else:
                    open_.pop(i)
    return data.Dataset.from_generator(elements, output_signature=spec)


def install(dataset_class, experimental):
    def save_method(self, path, compression=None, shard_func=None, checkpoint_args=None):
        """Writes this dataset's elements under `path` (Dataset.load reads them back)."""
        return save(self, path, compression, shard_func, checkpoint_args)

    def experimental_load(path, element_spec=None, compression=None, reader_func=None):
        """tf.data.experimental.load: as Dataset.load."""
        return load(path, element_spec, compression, reader_func)
    dataset_class.save = save_method
    dataset_class.load = staticmethod(load)
    experimental.save, experimental.load = save, experimental_load
