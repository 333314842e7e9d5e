"""ef.train, as tf.train: the Example protocol messages (python/eagerflow/_example_proto.py).
Kept small and additive: other parts of tf.train (checkpoints) are added beside these."""
from ._example_proto import (BytesList, Example, Feature, FeatureList, FeatureLists, Features,  # noqa: F401
                             FloatList, Int64List, SequenceExample)

__all__ = ["BytesList", "Example", "Feature", "FeatureList", "FeatureLists", "Features", "FloatList", "Int64List",
           "SequenceExample"]
