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
from ._serialization import serialization as _serialization

_t = _core._train
Metric = _t.Metric


def _float32_only(cls, dtype):
    if dtype is not None and str(getattr(dtype, "name", dtype)) != "float32":
        raise ValueError(f"{cls.__name__}: only dtype=None or 'float32' is supported")


class _ZeroBeforeUpdate:
    """Keras' accuracies are 0 before any update (divide_no_nan); the C++ ones divide 0 by 0. An
    accuracy is NaN only then (its values are 0 or 1), so NaN reads as 0."""

    def result(self):
        import eagerflow as tf  # the package imports keras: fetched at call time
        value = super().result()
        return tf.where(tf.math.is_nan(value), tf.zeros_like(value), value)


# Keras' signatures (name, dtype, ...) over the C++ metrics, which take no dtype.
class Accuracy(_ZeroBeforeUpdate, _t.Accuracy):
    """Keras' Accuracy: how often predictions equal labels."""

    def __init__(self, name="accuracy", dtype=None):
        _float32_only(type(self), dtype)
        super().__init__(name)


class SparseCategoricalAccuracy(_ZeroBeforeUpdate, _t.SparseCategoricalAccuracy):
    """Keras' SparseCategoricalAccuracy: how often the top prediction is the integer label."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        _float32_only(type(self), dtype)
        super().__init__(name)


class CategoricalAccuracy(_ZeroBeforeUpdate, _t.CategoricalAccuracy):
    """Keras' CategoricalAccuracy: how often the top prediction is the one-hot label's class."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        _float32_only(type(self), dtype)
        super().__init__(name)


class BinaryAccuracy(_ZeroBeforeUpdate, _t.BinaryAccuracy):
    """Keras' BinaryAccuracy: how often predictions above `threshold` match binary labels."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        _float32_only(type(self), dtype)
        super().__init__(name, threshold)

MeanAbsoluteError = _t.MeanAbsoluteErrorMetric
MeanSquaredError = _t.MeanSquaredErrorMetric
RootMeanSquaredError = _t.RootMeanSquaredError
AUC = _t.AUC
Precision = _t.Precision
Recall = _t.Recall


class TopKCategoricalAccuracy(_ZeroBeforeUpdate, _t.TopKCategoricalAccuracy):
    """Keras' TopKCategoricalAccuracy: how often the one-hot label's class is among the top k predictions."""


class SparseTopKCategoricalAccuracy(_ZeroBeforeUpdate, _t.SparseTopKCategoricalAccuracy):
    """Keras' SparseTopKCategoricalAccuracy: how often the integer label is among the top k predictions."""


F1Score = _t.F1Score
FBetaScore = _t.FBetaScore
from ._metric_catalogue import Mean  # noqa: F401  (Python: Keras' variables, stateless API, 0 before updates)
from ._metric_catalogue import (BinaryCrossentropy, BinaryIoU, CategoricalCrossentropy, CategoricalHinge,  # noqa: F401
                                ConcordanceCorrelation, CosineSimilarity, FalseNegatives, FalsePositives, Hinge, IoU,
                                KLDivergence, LogCoshError, MeanAbsolutePercentageError, MeanIoU, MeanMetricWrapper,
                                MeanSquaredLogarithmicError, OneHotIoU, OneHotMeanIoU, PearsonCorrelation, Poisson,
                                PrecisionAtRecall, R2Score, RecallAtPrecision, SensitivityAtSpecificity,
                                SparseCategoricalCrossentropy, SpecificityAtSensitivity, SquaredHinge, Sum,
                                TrueNegatives, TruePositives, binary_accuracy, categorical_accuracy,
                                concordance_correlation, pearson_correlation, sparse_categorical_accuracy,
                                sparse_top_k_categorical_accuracy, top_k_categorical_accuracy, CLASSES as _CLASSES)
from ._loss_functions import (binary_crossentropy, binary_focal_crossentropy, categorical_crossentropy,  # noqa: F401
                              categorical_focal_crossentropy, categorical_hinge, hinge, huber, kl_divergence, log_cosh,
                              mean_absolute_error, mean_absolute_percentage_error, mean_squared_error,
                              mean_squared_logarithmic_error, poisson, sparse_categorical_crossentropy, squared_hinge)

_FUNCTIONS = ["binary_accuracy", "binary_crossentropy", "binary_focal_crossentropy", "categorical_accuracy",
              "categorical_crossentropy", "categorical_focal_crossentropy", "categorical_hinge",
              "concordance_correlation", "hinge", "huber", "kl_divergence", "log_cosh", "mean_absolute_error",
              "mean_absolute_percentage_error", "mean_squared_error", "mean_squared_logarithmic_error",
              "pearson_correlation", "poisson", "sparse_categorical_accuracy", "sparse_categorical_crossentropy",
              "sparse_top_k_categorical_accuracy", "squared_hinge", "top_k_categorical_accuracy"]
_BY_CLASS_NAME = {c.__name__: c for c in _CLASSES if c is not MeanMetricWrapper}


def get(name, loss_name=""):
    """A metric by Keras name; "accuracy" picks the one that fits loss_name, as compile does. A
    class name of the Keras 3 catalogue gives a new one of it; a serialized dict is deserialized."""
    if isinstance(name, dict):
        return deserialize(name)
    if isinstance(name, str) and name in _BY_CLASS_NAME:
        return _BY_CLASS_NAME[name]()
    if isinstance(name, Metric) or (callable(name) and not isinstance(name, str)):
        return name
    return _t.metric_by_name(name, loss_name)


serialize, deserialize = _serialization("keras.metrics", "metric", _BY_CLASS_NAME, get)


__all__ = sorted(_BY_CLASS_NAME) + ["MeanMetricWrapper", "serialize", "deserialize"] + _FUNCTIONS + [
    "Metric", "Accuracy", "SparseCategoricalAccuracy", "CategoricalAccuracy", "BinaryAccuracy",
    "MeanAbsoluteError", "MeanSquaredError", "RootMeanSquaredError", "AUC", "Precision", "Recall",
    "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "F1Score", "FBetaScore", "get"]
