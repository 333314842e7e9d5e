"""ef.train, as tf.train: the Example protocol messages (python/eagerflow/_example_proto.py) and
object-graph checkpoints (python/eagerflow/_checkpoint.py, _checkpoint_manager.py, _train_extras.py)."""
from ._checkpoint import Checkpoint, latest_checkpoint, list_variables, load_checkpoint, load_variable  # noqa: F401
from ._checkpoint_manager import CheckpointManager  # noqa: F401
from ._train_extras import (CheckpointOptions, Coordinator, ExponentialMovingAverage, TrackableView,  # noqa: F401
                            checkpoints_iterator, get_checkpoint_state)
from ._example_proto import (BytesList, Example, Feature, FeatureList, FeatureLists, Features,  # noqa: F401
                             FloatList, Int64List, SequenceExample)

__all__ = ["BytesList", "Checkpoint", "CheckpointManager", "CheckpointOptions", "Coordinator", "Example",
           "ExponentialMovingAverage", "Feature", "FeatureList", "FeatureLists", "Features", "FloatList", "Int64List",
           "SequenceExample", "TrackableView", "checkpoints_iterator", "get_checkpoint_state", "latest_checkpoint",
           "list_variables", "load_checkpoint", "load_variable"]
