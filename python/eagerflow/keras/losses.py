"""ef.keras.losses: numerically stable Keras losses averaged over the batch. By name:
get("sparse_categorical_crossentropy"); a Python function loss(y_true, y_pred) written with ef
ops works too (compile(loss=fn)): it returns one value per example (averaged) or a scalar.

loss(y_true, y_pred, sample_weight=w) weighs each example as Keras ("sum_over_batch_size": the
weighted sum divided by the batch size, not by the weights' sum); w is a scalar, [batch] or
[batch, 1]. loss.per_example(y_true, y_pred) gives the [batch] values before the reduction.
Labels [batch] against predictions [batch, 1] pair up per example, as Keras 3.

Custom losses subclass Loss as in Keras 3: call(y_true, y_pred) gives each example's loss (the
batch mean and sample weights are applied around it); the name defaults to the class name in
snake_case; only reduction="sum_over_batch_size" is supported."""
from .. import _core
from .._training import get_loss as get

_t = _core._train
Loss = _t.Loss
MeanSquaredError = _t.MeanSquaredError
BinaryCrossentropy = _t.BinaryCrossentropy
CategoricalCrossentropy = _t.CategoricalCrossentropy
SparseCategoricalCrossentropy = _t.SparseCategoricalCrossentropy
MeanAbsoluteError = _t.MeanAbsoluteError
Huber = _t.Huber
LogCosh = _t.LogCosh
KLDivergence = _t.KLDivergence
CosineSimilarity = _t.CosineSimilarity
Hinge = _t.Hinge
Poisson = _t.Poisson

__all__ = ["Loss", "MeanSquaredError", "BinaryCrossentropy", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "MeanAbsoluteError", "Huber", "LogCosh", "KLDivergence",
           "CosineSimilarity", "Hinge", "Poisson", "get"]
