"""ef.keras.metrics: stateful metrics (update_state, result, reset_state), usable alone or in
compile(metrics=[...]), where each reports under its name."""
from .. import _core

_t = _core._train
Metric = _t.Metric
Mean = _t.Mean
Accuracy = _t.Accuracy
SparseCategoricalAccuracy = _t.SparseCategoricalAccuracy
CategoricalAccuracy = _t.CategoricalAccuracy
BinaryAccuracy = _t.BinaryAccuracy


def get(name, loss_name=""):
    """A metric by Keras name; "accuracy" picks the one that fits loss_name, as compile does."""
    return _t.metric_by_name(name, loss_name)


__all__ = ["Metric", "Mean", "Accuracy", "SparseCategoricalAccuracy", "CategoricalAccuracy", "BinaryAccuracy", "get"]
