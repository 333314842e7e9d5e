"""Keras 3's loss classes with Keras' arguments (reduction, name, dtype and each loss's own).

With the defaults the losses that exist in C++ (ef::train's fused, numerically stable ones)
compute both a call and compile/fit; any other reduction, or an argument the C++ loss lacks
(label_smoothing, axis, ignore_class), runs the Python function of _loss_functions.py with
Keras' reduction rules (reduce_weighted_values)."""
import functools

from .. import _core
from . import _loss_functions as F

_t = _core._train
_DEFAULT = "sum_over_batch_size"
_REDUCTIONS = ("sum_over_batch_size", "sum", "none", None, "mean", "mean_with_sample_weight")


class Reduction:
    """tf.keras.losses.Reduction (TF's legacy names for Keras 3's reduction strings)."""
    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f'Invalid Reduction Key: {key}. Expected keys are "{cls.all()}"')


def standardize_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid value for argument `reduction`. Expected one of {set(_REDUCTIONS)}. "
                         f"Received: reduction={reduction}")
    return reduction


def _ignored_mask(y_true, y_pred, ignore_class=None):
    """SparseCategoricalCrossentropy(ignore_class=c): where the labels are not c."""
    tf = F._tf()
    y_true = F.as_float(y_true)
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = tf.squeeze(y_true, -1)
    return tf.cast(tf.not_equal(y_true, float(ignore_class)), tf.float32)


def _positive_mask(y_true, values):
    """Circle: an example none of whose pairs contribute (loss 0) does not count."""
    tf = F._tf()
    return tf.cast(values > 0.0, tf.float32)


def apply_mask(sample_weight, mask, reduction):
    """Keras' apply_mask: masked-out values weigh 0 and, for the averages, the others weigh
    total/valid so that the mean is over the valid values only."""
    if mask is None:
        return sample_weight
    tf = F._tf()
    if reduction in ("mean", "sum_over_batch_size"):
        total = tf.cast(tf.size(mask), mask.dtype)
        mask = mask * (total / (tf.reduce_sum(mask) + F._eps()))
    if sample_weight is None:
        return mask
    sample_weight = F.as_float(sample_weight, mask)
    mask, sample_weight = F.same_rank(mask, sample_weight)
    return sample_weight * mask


def reduce_weighted_values(values, sample_weight, reduction):
    """Keras' rule: values times the weights (ranks matched), then summed, or summed and divided
    by the number of values (or, for "mean_with_sample_weight", by the weights' sum)."""
    tf = F._tf()
    values = F.as_float(values)
    if sample_weight is not None:
        sample_weight = F.as_float(sample_weight, values)
        values, sample_weight = F.same_rank(values, sample_weight)
        values = values * sample_weight
    if reduction in (None, "none") or len(values.shape) == 0:
        return values
    total = tf.reduce_sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = tf.reduce_sum(sample_weight)
    else:
        divisor = tf.cast(tf.size(values), values.dtype)
    return tf.math.divide_no_nan(total, divisor)


def _compiled_values(fn, reduction, mask_fn, y_true, y_pred):
    # fit's loss averages what this gives over the batch: "sum" (and "none", which Keras' compile
    # sums) scale by the count so that the average is the sum.
    tf = F._tf()
    values = fn(y_true, y_pred)
    if mask_fn is not None:
        values = values * apply_mask(None, mask_fn(y_true, values), reduction)
    if reduction in ("sum", "none", None):
        values = values * tf.cast(tf.size(values), values.dtype)
    return values


def _as_float32(x):
    tf = F._tf()
    x = x if isinstance(x, (_core.Tensor, _core.Variable)) else tf.convert_to_tensor(x)
    return tf.cast(x, tf.float32) if x.dtype.is_floating and x.dtype != tf.float32 else x


class _KerasLoss:
    """Keras' Loss interface over a C++ loss (_t.Loss subclass) and a Python function."""

    def _keras_init(self, fn, name, reduction, dtype, python):
        if dtype is not None and str(getattr(dtype, "name", dtype)) != "float32":
            raise ValueError(f"{type(self).__name__}: only dtype=None or 'float32' is supported")
        self.reduction = standardize_reduction(reduction)
        self._ef_fn = fn
        self._ef_keras_name = name
        self._ef_python = python or self.reduction not in (_DEFAULT, "mean")

    @property
    def name(self):
        return self._ef_keras_name

    @property
    def dtype(self):
        return "float32"

    def call(self, y_true, y_pred):
        return self._ef_fn(y_true, y_pred)

    def per_example(self, y_true, y_pred):
        return self._ef_fn(y_true, y_pred)

    def _ef_in_cpp(self):
        # The C++ losses clip with a fixed 1e-7: after keras.config.set_epsilon the Python one serves.
        return not self._ef_python and (type(self).__name__ not in _EPSILON_LOSSES or F._eps() == 1e-7)

    def __call__(self, y_true, y_pred, sample_weight=None):
        # As Keras (the loss's dtype, float32): float64 inputs compute in float32.
        y_pred, y_true = _as_float32(y_pred), _as_float32(y_true)
        if self._ef_in_cpp():
            if sample_weight is None:
                return _t.Loss.__call__(self, y_true, y_pred)
            return _t.Loss.__call__(self, y_true, y_pred, sample_weight=sample_weight)
        values = self._ef_fn(y_true, y_pred)
        mask_fn = self._ef_mask_fn()
        if mask_fn is not None:
            sample_weight = apply_mask(sample_weight, mask_fn(y_true, values), self.reduction)
        return reduce_weighted_values(values, sample_weight, self.reduction)

    def _ef_mask_fn(self):
        """Keras' mask on the values, where a loss sets one: the values that count."""
        ignore_class = getattr(self, "ignore_class", None)
        if ignore_class is not None:
            return functools.partial(_ignored_mask, ignore_class=ignore_class)
        if getattr(self, "_ef_positive_mask", False):
            return _positive_mask
        return None

    def _ef_compiled(self):
        if self._ef_in_cpp():
            return self
        return _t.Loss(functools.partial(_compiled_values, self._ef_fn, self.reduction, self._ef_mask_fn()), self.name)

    def get_config(self):
        return dict({"name": self.name, "reduction": self.reduction}, **getattr(self, "_ef_config", {}))

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name} reduction={self.reduction}>"


def _class(class_name, fn, cpp=None, cpp_args=(), defaults=None, cpp_only=(), name=None, check=None):
    """A Keras loss class: `defaults` are its own arguments (in Keras' order), `cpp_args` those
    the C++ loss takes, `cpp_only` the values the others must have for the C++ loss to serve."""
    defaults = dict(defaults or {})
    default_name = name or fn.__name__
    base = cpp if cpp is not None else _t.Loss

    def __init__(self, *args, reduction=_DEFAULT, name=default_name, dtype=None, **kwargs):
        params = dict(defaults)
        if len(args) > len(defaults) + 3:
            raise TypeError(f"{class_name}() takes at most {len(defaults) + 3} positional arguments")
        params.update(zip(defaults, args))
        rest = list(args[len(defaults):])  # Keras' order after a loss's own: reduction, name, dtype
        reduction, name, dtype = (rest + [reduction, name, dtype][len(rest):])
        unknown = sorted(set(kwargs) - set(defaults))
        if unknown:
            raise TypeError(f"{class_name}() got an unexpected keyword argument '{unknown[0]}'")
        params.update(kwargs)
        if check is not None:
            check(**params)
        bound = functools.partial(fn, **params) if params else fn
        python = cpp is None or any(params[k] != v for k, v in cpp_only)
        if cpp is not None:
            cpp.__init__(self, *[params[k] for k in cpp_args])
        else:
            _t.Loss.__init__(self, bound, name)
        self._ef_config = params
        for k, v in params.items():
            setattr(self, k, v)
        self._keras_init(bound, name, reduction, dtype, python)

    return type(class_name, (_KerasLoss, base), {"__init__": __init__, "__module__": "eagerflow.keras.losses",
                                                "__doc__": f"Keras' {class_name}: {default_name} of each example, "
                                                           "reduced over the batch."})


_CE = {"from_logits": False, "label_smoothing": 0.0, "axis": -1}
# The losses whose C++ form clips with epsilon, by class and by the names compile takes.
_EPSILON_LOSSES = {"BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "KLDivergence",
                   "Poisson"}
_EPSILON_NAMES = {"binary_crossentropy": "BinaryCrossentropy", "categorical_crossentropy": "CategoricalCrossentropy",
                  "sparse_categorical_crossentropy": "SparseCategoricalCrossentropy", "kl_divergence": "KLDivergence",
                  "kld": "KLDivergence", "KLD": "KLDivergence", "poisson": "Poisson"}


def compiled_for_epsilon(name):
    """compile's loss of this name in Python when keras.config.set_epsilon moved epsilon (the C++
    loss keeps 1e-7); None when the C++ loss serves."""
    if F._eps() == 1e-7 or name not in _EPSILON_NAMES:
        return None
    return globals()[_EPSILON_NAMES[name]]()._ef_compiled()
MeanSquaredError = _class("MeanSquaredError", F.mean_squared_error, _t.MeanSquaredError)
MeanAbsoluteError = _class("MeanAbsoluteError", F.mean_absolute_error, _t.MeanAbsoluteError)
MeanAbsolutePercentageError = _class("MeanAbsolutePercentageError", F.mean_absolute_percentage_error)
MeanSquaredLogarithmicError = _class("MeanSquaredLogarithmicError", F.mean_squared_logarithmic_error)
BinaryCrossentropy = _class("BinaryCrossentropy", F.binary_crossentropy, _t.BinaryCrossentropy, ("from_logits",),
                            _CE, (("label_smoothing", 0.0), ("axis", -1)))
CategoricalCrossentropy = _class("CategoricalCrossentropy", F.categorical_crossentropy, _t.CategoricalCrossentropy,
                                 ("from_logits",), _CE, (("label_smoothing", 0.0), ("axis", -1)))
SparseCategoricalCrossentropy = _class(
    "SparseCategoricalCrossentropy", F.sparse_categorical_crossentropy, _t.SparseCategoricalCrossentropy,
    ("from_logits",), {"from_logits": False, "ignore_class": None, "axis": -1}, (("ignore_class", None), ("axis", -1)))
Huber = _class("Huber", F.huber, _t.Huber, ("delta",), {"delta": 1.0}, name="huber_loss")
LogCosh = _class("LogCosh", F.log_cosh, _t.LogCosh)
KLDivergence = _class("KLDivergence", F.kl_divergence, _t.KLDivergence)
CosineSimilarity = _class("CosineSimilarity", F.cosine_similarity, _t.CosineSimilarity, ("axis",), {"axis": -1})
Hinge = _class("Hinge", F.hinge, _t.Hinge)
SquaredHinge = _class("SquaredHinge", F.squared_hinge)
CategoricalHinge = _class("CategoricalHinge", F.categorical_hinge)
Poisson = _class("Poisson", F.poisson, _t.Poisson)
BinaryFocalCrossentropy = _class(
    "BinaryFocalCrossentropy", F.binary_focal_crossentropy,
    defaults={"apply_class_balancing": False, "alpha": 0.25, "gamma": 2.0, "from_logits": False,
              "label_smoothing": 0.0, "axis": -1})
CategoricalFocalCrossentropy = _class(
    "CategoricalFocalCrossentropy", F.categorical_focal_crossentropy,
    defaults={"alpha": 0.25, "gamma": 2.0, "from_logits": False, "label_smoothing": 0.0, "axis": -1})
Dice = _class("Dice", F.dice, defaults={"axis": None})
Tversky = _class("Tversky", F.tversky, defaults={"alpha": 0.5, "beta": 0.5, "axis": None})
def _check_q(q):
    if not 0 < q < 1:
        raise ValueError("q must be in the interval (0, 1)")


CTC = _class("CTC", F.ctc)
Circle = _class("Circle", F.circle, defaults={"gamma": 80.0, "margin": 0.4, "remove_diagonal": True})
Circle._ef_positive_mask = True
CategoricalGeneralizedCrossEntropy = _class("CategoricalGeneralizedCrossEntropy",
                                            F.categorical_generalized_cross_entropy, defaults={"q": 0.5},
                                            check=_check_q)

CLASSES = [MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
           BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, Huber, LogCosh, KLDivergence,
           CosineSimilarity, Hinge, SquaredHinge, CategoricalHinge, Poisson, BinaryFocalCrossentropy,
           CategoricalFocalCrossentropy, Dice, Tversky, CTC, Circle, CategoricalGeneralizedCrossEntropy]
