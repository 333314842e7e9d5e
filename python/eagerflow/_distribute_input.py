"""tf.distribute's input side: the contexts dataset and value functions get, and the
distributed datasets whose elements are each replica's share of a global batch."""
import enum

from . import _core
from . import nest as _nest


class InputReplicationMode(enum.Enum):
    """PER_WORKER: one input pipeline per worker (here: per rank). PER_REPLICA: one per replica;
    with one replica per process the two coincide."""
    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


class InputContext:
    """What distribute_datasets_from_function tells the dataset function: how many input
    pipelines there are, which one this is, and the replicas in sync."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas_in_sync

    @property
    def input_pipeline_id(self):
        return self._input_pipeline_id

    @property
    def num_input_pipelines(self):
        return self._num_input_pipelines

    def get_per_replica_batch_size(self, global_batch_size):
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible by "
                             f"`num_replicas_in_sync` {self._num_replicas_in_sync} ")
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self):
        return f"tf.distribute.InputContext(input pipeline id {self._input_pipeline_id}, total: {self._num_input_pipelines})"


class ValueContext:
    """What experimental_distribute_values_from_function tells the value function."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self._replica_id_in_sync_group = replica_id_in_sync_group
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id_in_sync_group

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas_in_sync


class InputOptions:
    """Options of the distributed datasets; recorded (ef's input runs on the CPU, so the
    prefetch-to-device choices have nothing to change)."""

    def __init__(self, experimental_fetch_to_device=None, experimental_replication_mode=InputReplicationMode.PER_WORKER,
                 experimental_place_dataset_on_device=False, experimental_per_replica_buffer_size=1):
        self.experimental_fetch_to_device = experimental_fetch_to_device
        self.experimental_replication_mode = experimental_replication_mode
        self.experimental_place_dataset_on_device = experimental_place_dataset_on_device
        self.experimental_per_replica_buffer_size = experimental_per_replica_buffer_size


def _shard_of(n, rank, size):
    """This rank's contiguous share of n rows: sizes differ by at most one (as DataParallel)."""
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


class DistributedIterator:
    """Iterates a DistributedDataset: each element is this replica's share."""

    def __init__(self, dataset):
        self._dataset = dataset
        self._it = iter(dataset._dataset)

    def __iter__(self):
        return self

    def __next__(self):
        return self._dataset._local(next(self._it))

    def get_next(self):
        try:
            return next(self)
        except StopIteration:
            from . import errors
            raise errors.OutOfRangeError(None, None, "End of sequence") from None

    def get_next_as_optional(self):
        """The next element (this replica's share) as an Optional, empty at the end; in a trace
        its has_value() is a bool tensor of the run, as TF's."""
        optional = self._it.get_next_as_optional()
        dataset = self._dataset
        if not dataset._split or dataset._strategy.num_replicas_in_sync == 1:
            return optional
        from ._data_graph import GraphOptional
        from ._data_iterators import Optional
        if isinstance(optional, GraphOptional):
            return GraphOptional(optional.has_value(), dataset._local(optional._value), optional.element_spec)
        if not bool(optional.has_value()):
            return optional
        return Optional.from_value(dataset._local(optional.get_value()))

    @property
    def element_spec(self):
        return self._dataset.element_spec


class DistributedDataset:
    """A dataset of global batches seen by each replica as its own share: under N ranks, rank r
    keeps its contiguous slice of every batch along the first axis (TF's rebatching with
    auto-sharding by data); with one replica the elements pass through unchanged."""

    def __init__(self, dataset, strategy, split):
        self._dataset = dataset
        self._strategy = strategy
        self._split = split

    def _local(self, element):
        rank, size = self._strategy._rank, self._strategy.num_replicas_in_sync
        if not self._split or size == 1:
            return element

        def take(t):
            t = _core.convert_to_tensor(t)
            if not t._shape_tuple:
                raise ValueError("experimental_distribute_dataset: every element must be a batch (a tensor of rank >= 1) "
                                 "to split among the replicas; batch the dataset first")
            start, stop = _shard_of(t._shape_tuple[0], rank, size)
            return t[start:stop]
        return _nest.map_structure(take, element)

    def __iter__(self):
        return DistributedIterator(self)

    @property
    def element_spec(self):
        return getattr(self._dataset, "element_spec", None)

    def reduce(self, initial_state, reduce_func):
        state = initial_state
        for element in self:
            state = reduce_func(state, element)
        return state
