"""tf.distribute's strategies over ef.dist (docs/distribute.md).

A replica is a process: under `mpirun -np N` every strategy but OneDeviceStrategy spans the N
ranks (TF's MultiWorkerMirroredStrategy, one replica per worker); one process alone is a
one-replica strategy whose results are those of plain code, and it never starts MPI."""
import collections
import contextlib
import enum
import logging
import os
import threading

from . import _core
from . import nest as _nest
from ._distribute_input import (DistributedDataset, DistributedIterator, InputContext, InputOptions,  # noqa: F401
                                InputReplicationMode, ValueContext)

_state = threading.local()
_MPI_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE")


def _launched_size():
    """How many ranks the launcher started, read from its environment so that a lone process
    does not load MPI to learn it is alone."""
    for var in _MPI_SIZE_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 1


def _world():
    """(rank, size): MPI's when several ranks run (or a program already started ef.dist)."""
    launched = _launched_size()
    if _core.dist.is_initialized() or (launched > 1 and _core.dist.available()):
        _core.dist.init()
        return _core.dist.rank(), _core.dist.world_size()
    if launched > 1 and not getattr(_world, "warned", False):
        _world.warned = True  # each rank would train alone: say so once rather than diverge silently
        logging.getLogger("tensorflow").warning(
            "tf.distribute: %d ranks were launched but this eagerflow build has no MPI (ef.dist.available() is "
            "False): every process is a one-replica strategy of its own", launched)
    return 0, 1


class ReduceOp(enum.Enum):
    """How values from the replicas combine: SUM or MEAN."""
    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        name = getattr(aggregation, "name", str(aggregation)).upper()
        if name.endswith("SUM"):
            return ReduceOp.SUM
        if name.endswith("MEAN"):
            return ReduceOp.MEAN
        raise ValueError(f"Could not convert from `tf.VariableAggregation` {aggregation} to `tf.distribute.ReduceOp` type")


class RunOptions(collections.namedtuple("RunOptions", ["experimental_enable_dynamic_batch_size",
                                                      "experimental_bucketizing_dynamic_shape",
                                                      "experimental_xla_options"])):
    """Options of strategy.run; they concern TPUs, so ef's run takes and keeps them."""

    def __new__(cls, experimental_enable_dynamic_batch_size=True, experimental_bucketizing_dynamic_shape=False,
                experimental_xla_options=None):
        return super().__new__(cls, experimental_enable_dynamic_batch_size, experimental_bucketizing_dynamic_shape,
                               experimental_xla_options)


def _reduce_op(reduce_op):
    if isinstance(reduce_op, ReduceOp):
        return reduce_op
    if isinstance(reduce_op, str):  # TF takes "sum" too; a bad name is ReduceOp's ValueError
        return ReduceOp(reduce_op.upper())
    raise ValueError(f"{reduce_op!r} is not a valid ReduceOp")


# ---------------------------------------------------------------- contexts
def _strategy_stack():
    stack = getattr(_state, "strategies", None)
    if stack is None:
        stack = _state.strategies = []
    return stack


def _replica_stack():
    stack = getattr(_state, "replicas", None)
    if stack is None:
        stack = _state.replicas = []
    return stack


def get_strategy():
    """The strategy whose scope() is entered, else the default one-replica strategy."""
    stack = _strategy_stack()
    return stack[-1] if stack else _default_strategy()


def has_strategy():
    """Whether a (non-default) strategy's scope is entered."""
    return bool(_strategy_stack())


def in_cross_replica_context():
    """True inside a strategy's scope() but not inside its run()."""
    return has_strategy() and not _replica_stack()


def get_replica_context():
    """The replica context inside run() (and the default one outside any scope); None in the
    cross-replica context (inside scope(), outside run())."""
    replicas = _replica_stack()
    if replicas:
        return replicas[-1]
    if has_strategy():
        return None
    return ReplicaContext(_default_strategy(), 0)


def experimental_set_strategy(strategy):
    """Make `strategy` current for the rest of the thread (None: back to the default)."""
    old = getattr(_state, "set_strategy", None)
    if old is not None:
        old[1].__exit__(None, None, None)
        _state.set_strategy = None
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        _state.set_strategy = (strategy, scope)


def _require_replica_context(what):
    if in_cross_replica_context():
        raise RuntimeError(f"You are calling `{what}` in cross replica context, while it was expected to be called in "
                           "replica context.")


class ReplicaContext:
    """The context of one replica inside strategy.run: its id, the replicas in sync, and
    all_reduce across them."""

    def __init__(self, strategy, replica_id_in_sync_group):
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return _core.constant(self._replica_id, dtype=_core.DType.int32)

    @property
    def devices(self):
        return (self._strategy.extended.worker_devices[0],)

    def all_reduce(self, reduce_op, value, options=None):
        """Every replica's `value` (a tensor or a nest of them) summed or averaged; each
        replica gets the result. Differentiable (ef.dist.all_reduce's gradient)."""
        op = _reduce_op(reduce_op)
        return _nest.map_structure(lambda v: self._strategy._all_reduce(op, v), value)

    def all_gather(self, value, axis, options=None):
        return _nest.map_structure(lambda v: self._strategy._gather_one(v, axis), value)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Call merge_fn(strategy, *args) in the cross-replica context (one replica per
        process: its per-replica values are its local ones)."""
        stack = _replica_stack()
        saved = stack.pop()
        try:
            return merge_fn(self._strategy, *args, **(kwargs or {}))
        finally:
            stack.append(saved)


# ---------------------------------------------------------------- strategies
class StrategyExtended:
    """The strategy's device-level details (ef: one CPU device per replica)."""

    def __init__(self, strategy, devices):
        self._strategy = strategy
        self._devices = tuple(devices)

    @property
    def worker_devices(self):
        return self._devices

    @property
    def parameter_devices(self):
        return self._devices

    @property
    def experimental_require_static_shapes(self):
        return False

    @property
    def experimental_between_graph(self):
        return self._strategy.num_replicas_in_sync > 1

    @property
    def experimental_should_init(self):
        return True

    @property
    def should_checkpoint(self):
        return self._strategy._rank == 0

    @property
    def should_save_summary(self):
        return self._strategy._rank == 0

    def variable_created_in_scope(self, v):
        return id(v) in self._strategy._created

    def reduce_to(self, reduce_op, value, destinations=None, options=None):
        return self._strategy.reduce(reduce_op, value, axis=None)

    def batch_reduce_to(self, reduce_op, value_destination_pairs, options=None):
        return [self.reduce_to(reduce_op, v, d) for v, d in value_destination_pairs]

    def update(self, var, fn, args=(), kwargs=None, group=True):
        return fn(var, *args, **(kwargs or {}))

    def colocate_vars_with(self, colocate_with_variable):
        return contextlib.nullcontext()


_CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


class Strategy:
    """tf.distribute.Strategy over ef.dist: one replica per process (see the module's doc)."""

    def __init__(self, extended=None, *, _spans_ranks=True):
        self._rank, self._size = _world() if _spans_ranks else (0, 1)
        self._created = set()
        self._extended = extended or StrategyExtended(self, [_worker_device(self._rank, self._size)])
        self._dp = None  # the ef.dist.DataParallel that Keras fit uses, made on first need

    @property
    def extended(self):
        return self._extended

    @property
    def num_replicas_in_sync(self):
        return self._size

    @property
    def cluster_resolver(self):
        return None

    # -- scope
    @contextlib.contextmanager
    def scope(self):
        """Enter the strategy: variables created inside are mirrored (rank 0's initial value on
        every rank), Keras models built and compiled inside train data-parallel."""
        from ._module import variable_creator_scope
        stack = _strategy_stack()
        if stack and stack[-1] is not self:
            raise ValueError("Mixing different tf.distribute.Strategy objects: "
                             f"{self!r} is not {stack[-1]!r}")
        stack.append(self)
        try:
            with variable_creator_scope(self._create_variable):
                yield self
        finally:
            stack.pop()

    def _create_variable(self, next_creator, **kwargs):
        v = next_creator(**kwargs)
        if self._size > 1:
            v.assign(_core.dist.broadcast(v.value(), root=0))
        self._created.add(id(v))
        return v

    def _data_parallel(self):
        if self._size > 1 and self._dp is None:
            self._dp = _core.dist.DataParallel()
        return self._dp

    # -- replica computation
    def run(self, fn, args=(), kwargs=None, options=None):
        """Run fn(*args, **kwargs) on this process's replica, in its replica context; the result
        is this replica's value (with one replica per process: a plain tensor or nest)."""
        kwargs = kwargs or {}
        with self.scope():
            _replica_stack().append(ReplicaContext(self, self._rank))
            try:
                return fn(*args, **kwargs)
            finally:
                _replica_stack().pop()

    def reduce(self, reduce_op, value, axis):
        """Combine a per-replica value (a tensor or a nest of them) across replicas; with
        `axis`, also across that axis of each (MEAN: the mean over every replica's elements)."""
        op = _reduce_op(reduce_op)
        if _replica_stack():
            raise RuntimeError("`reduce` must be called in the cross-replica context (outside `strategy.run`); "
                               "inside it, use `tf.distribute.get_replica_context().all_reduce`")
        return _nest.map_structure(lambda v: self._reduce_one(op, v, axis), value)

    def _reduce_one(self, op, v, axis):
        v = _core.convert_to_tensor(v)
        if axis is None:
            return self._all_reduce(op, v)
        total = _core.reduce_sum(v, axis=axis)
        if op is ReduceOp.SUM:
            return self._all_reduce(ReduceOp.SUM, total)
        count = v._shape_tuple[axis]
        if self._size == 1:
            return _core.reduce_mean(v, axis=axis)
        count = self._all_reduce(ReduceOp.SUM, _core.constant(float(count)))
        return self._all_reduce(ReduceOp.SUM, total) / _core.cast(count, total.dtype)

    def _all_reduce(self, op, v):
        v = _core.convert_to_tensor(v)
        if self._size == 1:
            return v
        return _core.dist.all_reduce(v, "sum" if op is ReduceOp.SUM else "mean")

    def _gather_one(self, v, axis):
        v = _core.convert_to_tensor(v)
        if self._size == 1:
            return v
        rank = len(v._shape_tuple)
        axis = axis + rank if axis < 0 else axis
        if axis == 0:
            return _core.dist.all_gather_rows(v)
        perm = [axis] + [i for i in range(rank) if i != axis]
        back = [perm.index(i) for i in range(rank)]
        return _core.transpose(_core.dist.all_gather_rows(_core.transpose(v, perm)), back)

    def gather(self, value, axis):
        """Every replica's value (a tensor or a nest) concatenated along `axis`, in replica
        order; the sizes along `axis` may differ."""
        if _replica_stack():
            raise RuntimeError("`gather` must be called in the cross-replica context; inside `strategy.run` use "
                               "`tf.distribute.get_replica_context().all_gather`")
        return _nest.map_structure(lambda v: self._gather_one(v, axis), value)

    def experimental_local_results(self, value):
        """The values of this process's replicas: one per process, as a 1-tuple."""
        return (value,)

    def experimental_distribute_dataset(self, dataset, options=None):
        """Each replica iterates its share of every (global) batch of `dataset`."""
        return DistributedDataset(dataset, self, split=True)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """dataset_fn(InputContext) makes this rank's dataset, already of per-replica batches."""
        ctx = InputContext(self._size, self._rank, self._size)
        return DistributedDataset(dataset_fn(ctx), self, split=False)

    def experimental_distribute_values_from_function(self, value_fn):
        return value_fn(ValueContext(self._rank, self._size))

    def __repr__(self):
        return f"<{type(self).__module__.replace('eagerflow._distribute', 'tf.distribute')}.{type(self).__name__} " \
               f"num_replicas_in_sync={self.num_replicas_in_sync}>"


def _worker_device(rank, size):
    return _CPU if size == 1 else f"/job:worker/replica:0/task:{rank}/device:CPU:0"


class CentralStorageStrategy(Strategy):
    """TF's single-machine strategy with variables on one device: one replica in each process
    (as each process of a TF job would have its own; it never communicates)."""

    def __init__(self, compute_devices=None, parameter_device=None):
        super().__init__(_spans_ranks=False)


class MirroredStrategy(Strategy):
    """TF's MirroredStrategy spans a machine's devices; eagerflow has one device per process, so
    it spans the processes `mpirun` started (like MultiWorkerMirroredStrategy) and is one
    replica alone. `devices` naming several devices of one process still make one replica: the
    gradient of the global batch's mean is the same (the count num_replicas_in_sync is 1)."""

    def __init__(self, devices=None, cross_device_ops=None):
        from ._distribute_ops import CrossDeviceOps
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise ValueError(f"`cross_device_ops` must be a tf.distribute.CrossDeviceOps, got {cross_device_ops!r}")
        if devices is not None and (isinstance(devices, str) or not all(isinstance(d, str) for d in devices)):
            raise ValueError("`devices` must be a list of device strings, e.g. ['/gpu:0', '/gpu:1']")
        super().__init__()


class MultiWorkerMirroredStrategy(Strategy):
    """One replica per worker process, the workers being `mpirun`'s ranks (TF_CONFIG is not
    read: MPI says who the workers are); synchronous all-reduce of the gradients."""

    def __init__(self, cluster_resolver=None, communication_options=None):
        from ._distribute_ops import CommunicationOptions
        if communication_options is not None and not isinstance(communication_options, CommunicationOptions):
            raise ValueError("communication_options must be an instance of tf.distribute.experimental.CommunicationOptions")
        super().__init__()


class OneDeviceStrategy(Strategy):
    """Everything on one device, one replica, in every process (it never communicates)."""

    def __init__(self, device):
        if not isinstance(device, str):
            raise ValueError(f"`device` must be a device string, got {device!r}")
        from ._device import DeviceSpec
        spec = DeviceSpec.from_string(device)
        super().__init__(_spans_ranks=False)
        self._extended = StrategyExtended(self, [f"/job:localhost/replica:0/task:0/device:{(spec.device_type or 'CPU').upper()}:"
                                                 f"{spec.device_index or 0}"])


class _DefaultStrategy(Strategy):
    """What get_strategy() gives outside any scope: one replica, no communication."""

    def __init__(self):
        super().__init__(_spans_ranks=False)

    def scope(self):
        return contextlib.nullcontext(self)


def _default_strategy():
    s = getattr(_default_strategy, "instance", None)
    if s is None:
        s = _default_strategy.instance = _DefaultStrategy()
    return s


# ---------------------------------------------------------------- Keras and optimizers
def _keras_compile(model):
    """compile() under a strategy's scope (or of a model made in one): fit, evaluate and
    predict then run data-parallel over the strategy's ranks (ef.dist.DataParallel)."""
    strategy = get_strategy() if has_strategy() else getattr(model, "_ef_distribute_strategy", None)
    if strategy is None:
        return
    model._ef_distribute_strategy = strategy
    dp = strategy._data_parallel()
    if dp is not None:
        model.set_distribution(dp)


def _keras_created(model):
    if has_strategy():
        model._ef_distribute_strategy = get_strategy()


def _fit_input(x):
    """fit(distributed dataset): the dataset of global batches it was made from."""
    if not isinstance(x, DistributedDataset):
        return x
    if not x._split and x._strategy.num_replicas_in_sync > 1:
        raise ValueError("fit: a dataset from `distribute_datasets_from_function` holds per-replica batches; under "
                         "several replicas pass fit the dataset of global batches (fit splits it among the ranks)")
    return x._dataset


def _model_strategy(model):
    return getattr(model, "_ef_distribute_strategy", None) or _default_strategy()


def _distributed_apply_gradients(apply):
    """Keras' apply_gradients inside strategy.run over several ranks: as TF's, the gradients are
    summed over the replicas (the loss was scaled by the global batch) and every variable starts
    from rank 0's value, broadcast before its first update."""
    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        replicas = _replica_stack()
        strategy = replicas[-1].strategy if replicas else None
        if strategy is None or strategy.num_replicas_in_sync == 1:
            return apply(self, grads_and_vars, *args, **kwargs)
        pairs = []
        for g, v in grads_and_vars:
            if g is not None:
                g = _core.dist.all_reduce(_core.convert_to_tensor(g), "sum")
                if id(v) not in strategy._created:
                    v.assign(_core.dist.broadcast(v.value(), root=0))
                    strategy._created.add(id(v))
            pairs.append((g, v))
        return apply(self, pairs, *args, **kwargs)
    apply_gradients.__doc__ = apply.__doc__
    apply_gradients._ef_distributed = True
    return apply_gradients


if not getattr(_core._train.Optimizer.apply_gradients, "_ef_distributed", False):
    _core._train.Optimizer.apply_gradients = _distributed_apply_gradients(_core._train.Optimizer.apply_gradients)
