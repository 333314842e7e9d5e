"""Dataset.shard(num_shards, index): every num_shards-th element from the index-th, as
tf.data's (the input of one worker of num_shards), with TF's argument errors.

The pipeline is enumerate -> filter -> map, so the shard's cardinality is unknown (-2) where
TF's ShardDataset knows it; the elements and their order are TF's."""
import numpy as _np

from . import errors as _errors

# tf.data.experimental.SHARD_HINT: a placeholder only tf.distribute's auto-sharding fills in.
SHARD_HINT = -1


def _int64(value):
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, _np.integer)):
        if isinstance(value, _np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
            return int(value)
        raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype int64")
    return int(value)


def shard(self, num_shards, index, name=None):
    """The elements whose position p has p % num_shards == index."""
    num_shards, index = _int64(num_shards), _int64(index)
    if num_shards == SHARD_HINT:
        raise _errors.FailedPreconditionError(
            None, None, "`tf.data.Dataset.shard(SHARD_HINT, ...)` can only be used in "
            "`tf.distribute.Strategy.experimental_distribute_dataset()` with "
            "`tf.data.experimental.AutoShardPolicy.HINT` policy, or tf.data service with "
            "`tf.data.experimental.service.ShardingPolicy.HINT` processing mode.")
    if num_shards <= 0:
        raise _errors.InvalidArgumentError(
            None, None, f"Number of shards must be greater than zero (currently num_shards = {num_shards}).")
    if not 0 <= index < num_shards:
        raise _errors.InvalidArgumentError(
            None, None, f"Index must be between 0 and {num_shards - 1} (currently index = {index}).")
    if num_shards == 1:
        return self
    # enumerate's (position, element) reaches the functions flat (the element's parts as further
    # arguments, a dict's by sorted key): the map packs them back into the element's structure.
    from . import nest
    spec = self.element_spec
    return (self.enumerate()
            .filter(lambda position, *parts: position % num_shards == index)
            .map(lambda position, *parts: nest.pack_sequence_as(spec, list(parts))))


def install(dataset_class):
    dataset_class.shard = shard
