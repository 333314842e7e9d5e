"""ef.keras.losses: numerically stable Keras losses averaged over the batch. By name:
get("sparse_categorical_crossentropy"); a Python function loss(y_true, y_pred) written with ef
ops works too (compile(loss=fn))."""
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
