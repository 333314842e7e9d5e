"""ef.distribute, as tf.distribute: strategies over ef.dist's MPI data parallelism, one replica
per process (docs/distribute.md)."""
from ._distribute import (DistributedDataset, DistributedIterator, InputContext, InputOptions,  # noqa: F401
                          InputReplicationMode, MirroredStrategy, MultiWorkerMirroredStrategy, OneDeviceStrategy,
                          ReduceOp, ReplicaContext, RunOptions, Strategy, StrategyExtended, experimental_set_strategy,
                          get_replica_context, get_strategy, has_strategy, in_cross_replica_context)
from ._distribute_ops import CrossDeviceOps, HierarchicalCopyAllReduce, NcclAllReduce, ReductionToOneDevice  # noqa: F401
from . import _distribute as _impl
from . import _distribute_ops as _ops
import types as _types

experimental = _types.ModuleType("eagerflow.distribute.experimental")
experimental.MultiWorkerMirroredStrategy = MultiWorkerMirroredStrategy
experimental.ValueContext = _impl.ValueContext
experimental.CentralStorageStrategy = _impl.CentralStorageStrategy
experimental.CommunicationOptions = _ops.CommunicationOptions
experimental.CommunicationImplementation = _ops.CommunicationImplementation
experimental.CollectiveCommunication = _ops.CollectiveCommunication

__all__ = ["CrossDeviceOps", "HierarchicalCopyAllReduce", "NcclAllReduce", "ReductionToOneDevice", "DistributedDataset",
           "DistributedIterator", "InputContext", "InputOptions", "InputReplicationMode",
           "MirroredStrategy", "MultiWorkerMirroredStrategy", "OneDeviceStrategy", "ReduceOp", "ReplicaContext", "RunOptions",
           "Strategy", "StrategyExtended", "experimental", "experimental_set_strategy", "get_replica_context",
           "get_strategy", "has_strategy", "in_cross_replica_context"]
