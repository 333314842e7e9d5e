"""ef.train, as tf.train: the Example protocol messages (python/eagerflow/_example_proto.py) and
object-graph checkpoints (python/eagerflow/_checkpoint.py, _checkpoint_manager.py)."""
from ._checkpoint import (Checkpoint, CheckpointReader, latest_checkpoint, list_variables, load_checkpoint,  # noqa: F401
                          load_variable)
from ._checkpoint_manager import CheckpointManager  # noqa: F401
from ._example_proto import (BytesList, Example, Feature, FeatureList, FeatureLists, Features,  # noqa: F401
                             FloatList, Int64List, SequenceExample)

__all__ = ["BytesList", "Checkpoint", "CheckpointManager", "CheckpointReader", "Example", "Feature", "FeatureList",
           "FeatureLists", "Features", "FloatList", "Int64List", "SequenceExample", "latest_checkpoint",
           "list_variables", "load_checkpoint", "load_variable"]
