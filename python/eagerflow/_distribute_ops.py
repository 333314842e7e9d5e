"""tf.distribute's cross-device reduction choices and collective options. A replica is an
ef.dist rank, so every algorithm is the same MPI all-reduce (docs/distribute.md); the classes
exist so TF programs that pick one run, and reduce as TF's do."""
import enum

from . import _core
from . import nest as _nest


def _all_reduce(reduce_op, value):
    from ._distribute import _reduce_op, ReduceOp, _world
    op = _reduce_op(reduce_op)
    value = _core.convert_to_tensor(value)
    if _world()[1] == 1:
        return value
    return _core.dist.all_reduce(value, "sum" if op is ReduceOp.SUM else "mean")


class CrossDeviceOps:
    """Reduce a per-replica value over the replicas (here: the ranks), broadcast a value."""

    def reduce(self, reduce_op, per_replica_value, destinations, options=None):
        return _nest.map_structure(lambda v: _all_reduce(reduce_op, v), per_replica_value)

    def batch_reduce(self, reduce_op, value_destination_pairs, options=None):
        return [self.reduce(reduce_op, v, d, options) for v, d in value_destination_pairs]

    def broadcast(self, tensor, destinations):
        return _core.convert_to_tensor(tensor)


class ReductionToOneDevice(CrossDeviceOps):
    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn


class NcclAllReduce(CrossDeviceOps):
    def __init__(self, num_packs=1):
        if num_packs < 0:
            raise ValueError(f"NCCL all-reduce requires num_packs >= 0, but {num_packs} is specified")
        self.num_packs = num_packs


class HierarchicalCopyAllReduce(CrossDeviceOps):
    def __init__(self, num_packs=1):
        self.num_packs = num_packs


class CommunicationImplementation(enum.Enum):
    """Which collective implementation to use; ef always uses MPI's (AUTO's choice)."""
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


CollectiveCommunication = CommunicationImplementation


class CommunicationOptions:
    """Options of the collectives (ef's MPI all-reduce packs its own buckets, so bytes_per_pack
    and timeout_seconds are recorded)."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None, implementation=CommunicationImplementation.AUTO):
        if bytes_per_pack < 0:
            raise ValueError(f"Argument `bytes_per_pack` must be >=0, Received {bytes_per_pack}.")
        if isinstance(implementation, str):
            implementation = CommunicationImplementation[implementation.upper()]
        if not isinstance(implementation, CommunicationImplementation):
            raise ValueError("Argument `implementation` must be instance of "
                             "`tf.distribute.experimental.CommunicationImplementation`.")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

    def merge(self, options):
        merged = CommunicationOptions(self.bytes_per_pack, self.timeout_seconds, self.implementation)
        if options is not None:
            if options.bytes_per_pack != 0:
                merged.bytes_per_pack = options.bytes_per_pack
            if options.timeout_seconds is not None:
                merged.timeout_seconds = options.timeout_seconds
            if options.implementation != CommunicationImplementation.AUTO:
                merged.implementation = options.implementation
        return merged
