"""ef.keras.losses: Keras 3's loss classes and functions (TF's tf.keras.losses names too).

A class called as loss(y_true, y_pred, sample_weight=None) reduces each example's loss as its
`reduction` says ("sum_over_batch_size", Keras' default: the weighted sum divided by the number
of values, not by the weights' sum; "sum"; "mean_with_sample_weight"; "none"/None: one value per
example); w is a scalar, [batch] or [batch, 1]. A function (mean_squared_error, ...) gives each
example's value. By name: get("sparse_categorical_crossentropy"); a Python function
loss(y_true, y_pred) written with ef ops works too (compile(loss=fn)).

In compile, "sum" makes fit's loss each batch's sum and "none" does the same (Keras' compile
sums what a loss gives); "mean_with_sample_weight" there averages as the default does.

Custom losses subclass Loss as in Keras 3: call(y_true, y_pred) gives each example's loss (the
batch mean and sample weights are applied around it); the name defaults to the class name in
snake_case; only reduction="sum_over_batch_size" is supported for them."""
from .. import _core
from ._serialization import serialization as _serialization
from .._training import get_loss as _get_loss
from ._loss_catalogue import (CTC, BinaryCrossentropy, BinaryFocalCrossentropy, CategoricalCrossentropy,  # noqa: F401
                              CategoricalFocalCrossentropy, CategoricalGeneralizedCrossEntropy, Circle,
                              CategoricalHinge, CosineSimilarity, Dice, Hinge, Huber,
                              KLDivergence, LogCosh, MeanAbsoluteError, MeanAbsolutePercentageError,
                              MeanSquaredError, MeanSquaredLogarithmicError, Poisson, Reduction,
                              SparseCategoricalCrossentropy, SquaredHinge, Tversky, CLASSES as _CLASSES)
from ._loss_functions import (KLD, MAE, MAPE, MSE, MSLE, binary_crossentropy, binary_focal_crossentropy,  # noqa: F401
                              categorical_crossentropy, categorical_focal_crossentropy,
                              categorical_generalized_cross_entropy, categorical_hinge, circle, cosine_similarity, ctc,
                              dice, hinge, huber, kl_divergence, kld, log_cosh, logcosh, mae, mape,
                              mean_absolute_error, mean_absolute_percentage_error, mean_squared_error,
                              mean_squared_logarithmic_error, mse, msle, poisson, sparse_categorical_crossentropy,
                              squared_hinge, tversky)

Loss = _core._train.Loss

_BY_CLASS_NAME = {c.__name__: c for c in _CLASSES}


def get(identifier):
    """A loss by Keras name ("mse", "categorical_crossentropy", ...), a serialized dict
    ({"class_name": ..., "config": ...}), a Loss or a function (returned as it is)."""
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier in _BY_CLASS_NAME:
        return _BY_CLASS_NAME[identifier]()
    if callable(identifier) and not isinstance(identifier, (Loss, type)):
        return identifier
    return _get_loss(identifier)


serialize, deserialize = _serialization("keras.losses", "loss", _BY_CLASS_NAME, get)


__all__ = ["Loss", "Reduction", "get", "serialize", "deserialize"] + sorted(_BY_CLASS_NAME) + [
    "KLD", "MAE", "MAPE", "MSE", "MSLE", "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
    "categorical_focal_crossentropy", "categorical_generalized_cross_entropy", "categorical_hinge", "circle",
    "cosine_similarity", "ctc", "dice", "hinge", "huber",
    "kl_divergence", "kld", "log_cosh", "logcosh", "mae", "mape", "mean_absolute_error",
    "mean_absolute_percentage_error", "mean_squared_error", "mean_squared_logarithmic_error", "mse", "msle",
    "poisson", "sparse_categorical_crossentropy", "squared_hinge", "tversky"]
