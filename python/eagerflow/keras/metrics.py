"""ef.keras.metrics: stateful metrics (update_state(y_true, y_pred, sample_weight=None), result,
reset_state), usable alone or in compile(metrics=[...]), where each reports under its name.

As Keras: sample_weight is a scalar, [batch] or [batch, 1]; mean metrics report
sum(value * weight) / sum(weight), confusion metrics count weights. AUC supports curve "ROC"
and "PR" with the default "interpolation" summation on flattened data (no multi_label).
F1Score(average=None).result() is the per-class vector, as Keras; fit logs one number per
metric, its mean over classes. By name, "f1_score" is F1Score(average="macro") so that it logs
as Keras users read it.

Custom metrics subclass Metric as in Keras 3: __init__ calls super().__init__(name=...) and
creates state with self.add_variable(shape, initializer="zeros", dtype=None, name=...) (or
add_weight; initializer: "zeros", "ones", a number, an initializer object or a callable(shape,
dtype)); update_state(y_true, y_pred, sample_weight=None) updates it with ef ops; result()
reads it; reset_state() defaults to every variable back to its initial value. In compile/fit
the Python methods run once, while the train step is traced (a counter in update_state counts
traces, not batches); sample_weight is None except for weighted_metrics.
"""
from .. import _core

_t = _core._train
Metric = _t.Metric
Mean = _t.Mean
Accuracy = _t.Accuracy
SparseCategoricalAccuracy = _t.SparseCategoricalAccuracy
CategoricalAccuracy = _t.CategoricalAccuracy
BinaryAccuracy = _t.BinaryAccuracy
MeanAbsoluteError = _t.MeanAbsoluteErrorMetric
MeanSquaredError = _t.MeanSquaredErrorMetric
RootMeanSquaredError = _t.RootMeanSquaredError
AUC = _t.AUC
Precision = _t.Precision
Recall = _t.Recall
TopKCategoricalAccuracy = _t.TopKCategoricalAccuracy
SparseTopKCategoricalAccuracy = _t.SparseTopKCategoricalAccuracy
F1Score = _t.F1Score
FBetaScore = _t.FBetaScore


def get(name, loss_name=""):
    """A metric by Keras name; "accuracy" picks the one that fits loss_name, as compile does."""
    return _t.metric_by_name(name, loss_name)


__all__ = ["Metric", "Mean", "Accuracy", "SparseCategoricalAccuracy", "CategoricalAccuracy", "BinaryAccuracy",
           "MeanAbsoluteError", "MeanSquaredError", "RootMeanSquaredError", "AUC", "Precision", "Recall",
           "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "F1Score", "FBetaScore", "get"]
