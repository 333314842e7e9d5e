"""Keras 3's metrics written over ef.keras.metrics.Metric (state in add_variable, updates with ef
ops, so each runs alone and inside fit's traced step): the mean metrics over a function
(MeanMetricWrapper and its named kinds), Sum, the confusion counts, the metrics at a
sensitivity/specificity/precision/recall, R2Score and the IoU family."""
from .. import _core
from . import _loss_functions as F

_t = _core._train


def _tf():
    return F._tf()


def reduce_to_samplewise(values, sample_weight, reduce_fn):
    """Keras' reduce_to_samplewise_values: the values reduced to one per example (their weights
    too), weights matched to them first."""
    tf = _tf()
    values = F.as_float(values)
    if sample_weight is not None:
        sample_weight = F.as_float(sample_weight, values)
        values, sample_weight = F.same_rank(values, sample_weight)
        w_rank, v_rank = len(sample_weight.shape), len(values.shape)
        if v_rank > w_rank:
            values = reduce_fn(values, axis=list(range(w_rank, v_rank)))
        sample_weight = sample_weight * tf.ones_like(values)  # broadcast (shapes may be symbolic)
        values = values * sample_weight
        if w_rank > 1:
            sample_weight = reduce_fn(sample_weight, axis=list(range(1, w_rank)))
    if len(values.shape) > 1:
        values = reduce_fn(values, axis=list(range(1, len(values.shape))))
    return values, sample_weight


class _KerasMetric(_t.Metric):
    """Keras' dtype argument (float32 only) and get_config/from_config."""

    def __init__(self, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._ef_config = {}

    @property
    def dtype(self):
        return "float32"

    def get_config(self):
        return dict({"name": self.name, "dtype": "float32"}, **self._ef_config)

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"

    # Keras 3's stateless API: the state is passed in and returned, the metric's own variables keep
    # their values (they hold the given state only while the update runs).
    def _with_state(self, metric_variables, fn):
        own = list(self.variables)
        if len(metric_variables) != len(own):
            raise ValueError(f"Argument `metric_variables` must be a list of tensors corresponding 1:1 to "
                             f"{type(self).__name__}().variables. Received list with length {len(metric_variables)}, "
                             f"but expected {len(own)} variables.")
        saved = [v.numpy() for v in own]
        try:
            for v, value in zip(own, metric_variables):
                v.assign(value)
            return fn()
        finally:
            for v, value in zip(own, saved):
                v.assign(value)

    def stateless_update_state(self, metric_variables, *args, **kwargs):
        """The state after update_state(*args, **kwargs) from metric_variables (a list like self.variables)."""
        tf = _tf()

        def update():
            self.update_state(*args, **kwargs)
            return [tf.identity(v) for v in self.variables]
        return self._with_state(metric_variables, update)

    def stateless_result(self, metric_variables):
        """result() of the state metric_variables."""
        return self._with_state(metric_variables, self.result)

    def stateless_reset_state(self):
        """The state reset_state() starts from."""
        tf = _tf()

        def reset():
            self.reset_state()
            return [tf.identity(v) for v in self.variables]
        return self._with_state([v.numpy() for v in self.variables], reset)


class Mean(_KerasMetric):
    """Keras' Mean: the weighted mean of the values given to update_state(values, sample_weight);
    0 before any update (Keras divides with divide_no_nan)."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, values, sample_weight=None):
        tf = _tf()
        values, sample_weight = reduce_to_samplewise(values, sample_weight, tf.reduce_mean)
        self.total.assign_add(tf.reduce_sum(values))
        if sample_weight is not None:
            self.count.assign_add(tf.reduce_sum(sample_weight))
        elif len(values.shape) >= 1:
            self.count.assign_add(tf.cast(tf.shape(values)[0], tf.float32))
        else:
            self.count.assign_add(1.0)

    def result(self):
        return _tf().math.divide_no_nan(self.total, self.count)


class Sum(_KerasMetric):
    """Keras' Sum: the (weighted) sum of the values given to update_state."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")

    def update_state(self, values, sample_weight=None):
        tf = _tf()
        values, _ = reduce_to_samplewise(values, sample_weight, tf.reduce_sum)
        self.total.assign_add(tf.reduce_sum(values))

    def result(self):
        return _tf().identity(self.total)


class MeanMetricWrapper(_KerasMetric):
    """Keras' MeanMetricWrapper(fn, name=None, dtype=None, **kwargs): the weighted mean over all
    examples of fn(y_true, y_pred, **kwargs)."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        tf = _tf()
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        values, sample_weight = reduce_to_samplewise(values, sample_weight, tf.reduce_mean)
        self.total.assign_add(tf.reduce_sum(values))
        if sample_weight is not None:
            self.count.assign_add(tf.reduce_sum(sample_weight))
        elif len(values.shape) >= 1:
            self.count.assign_add(tf.cast(tf.shape(values)[0], tf.float32))
        else:
            self.count.assign_add(1.0)

    def result(self):
        return _tf().math.divide_no_nan(self.total, self.count)

    def get_config(self):
        if type(self) is MeanMetricWrapper:
            raise NotImplementedError("MeanMetricWrapper holds a function: it has no config (subclass it)")
        return super().get_config()


def _wrapper(class_name, fn, default_name, **own):
    """A named mean metric (Keras: name, dtype, then the function's own arguments)."""

    def __init__(self, name=default_name, dtype=None, **kwargs):
        params = dict(own)
        unknown = sorted(set(kwargs) - set(own))
        if unknown:
            raise TypeError(f"{class_name}() got an unexpected keyword argument '{unknown[0]}'")
        params.update(kwargs)
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype, **params)
        self._ef_config = params
        for k, v in params.items():
            setattr(self, k, v)

    return type(class_name, (MeanMetricWrapper,), {"__init__": __init__, "__module__": "eagerflow.keras.metrics",
                                                   "__doc__": f"Keras' {class_name}: the mean of {fn.__name__}."})


# ---------------------------------------------------------------- metric functions
def binary_accuracy(y_true, y_pred, threshold=0.5):
    tf = _tf()
    y_pred = F.as_float(y_pred)
    y_true = F.as_float(y_true, y_pred)
    y_true, y_pred = F.same_rank(y_true, y_pred)
    return tf.cast(tf.equal(y_true, tf.cast(y_pred > threshold, y_pred.dtype)), tf.float32)


def categorical_accuracy(y_true, y_pred):
    tf = _tf()
    return tf.cast(tf.equal(tf.argmax(y_true, axis=-1), tf.argmax(y_pred, axis=-1)), tf.float32)


def _sparse_labels(y_true, y_pred):
    tf = _tf()
    y_true = y_true if isinstance(y_true, (_core.Tensor, _core.Variable)) else tf.convert_to_tensor(y_true)
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = tf.squeeze(y_true, -1)
    return y_true


def sparse_categorical_accuracy(y_true, y_pred):
    tf = _tf()
    y_pred = F.as_float(y_pred)
    y_true = _sparse_labels(y_true, y_pred)
    return tf.cast(tf.equal(tf.cast(y_true, tf.int64), tf.argmax(y_pred, axis=-1)), tf.float32)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    tf = _tf()
    y_pred = F.as_float(y_pred)
    return tf.cast(tf.math.in_top_k(tf.argmax(y_true, axis=-1), y_pred, k), tf.float32)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False):
    tf = _tf()
    if from_sorted_ids:  # y_pred holds the top class ids, best first
        y_true = _sparse_labels(y_true, y_pred)
        ids = tf.cast(y_pred[..., :k], tf.int64)
        return tf.cast(tf.reduce_any(tf.equal(ids, tf.expand_dims(tf.cast(y_true, tf.int64), -1)), axis=-1),
                       tf.float32)
    y_pred = F.as_float(y_pred)
    y_true = _sparse_labels(y_true, y_pred)
    return tf.cast(tf.math.in_top_k(tf.cast(y_true, tf.int64), y_pred, k), tf.float32)


def cosine_similarity(y_true, y_pred, axis=-1):
    # The metric's sign is positive (the loss's is negative).
    return -F.cosine_similarity(y_true, y_pred, axis=axis)


def pearson_correlation(y_true, y_pred, axis=-1):
    tf = _tf()
    y_pred = F.as_float(y_pred)
    y_true = F.as_float(y_true, y_pred)
    y_true, y_pred = F.same_rank(y_true, y_pred)
    t = y_true - tf.reduce_mean(y_true, axis=axis, keepdims=True)
    p = y_pred - tf.reduce_mean(y_pred, axis=axis, keepdims=True)
    t = t / tf.math.reduce_std(t, axis=axis, keepdims=True)
    p = p / tf.math.reduce_std(p, axis=axis, keepdims=True)
    return tf.reduce_mean(t * p, axis=axis)


def concordance_correlation(y_true, y_pred, axis=-1):
    tf = _tf()
    y_pred = F.as_float(y_pred)
    y_true = F.as_float(y_true, y_pred)
    y_true, y_pred = F.same_rank(y_true, y_pred)
    t_mean = tf.reduce_mean(y_true, axis=axis, keepdims=True)
    p_mean = tf.reduce_mean(y_pred, axis=axis, keepdims=True)
    t_var = tf.math.reduce_variance(y_true - t_mean, axis=axis, keepdims=True)
    p_var = tf.math.reduce_variance(y_pred - p_mean, axis=axis, keepdims=True)
    # As Keras 3.15 computes it (the covariance centres y_true on y_pred's mean).
    covar = (y_true - p_mean) * (y_pred - p_mean)
    norm = t_var + p_var + tf.square(t_mean - p_mean)
    return tf.reduce_mean(2.0 * covar / (norm + F._eps()), axis=axis)


# ---------------------------------------------------------------- the named mean metrics
BinaryCrossentropy = _wrapper("BinaryCrossentropy", F.binary_crossentropy, "binary_crossentropy", from_logits=False,
                              label_smoothing=0)
CategoricalCrossentropy = _wrapper("CategoricalCrossentropy", F.categorical_crossentropy, "categorical_crossentropy",
                                   from_logits=False, label_smoothing=0, axis=-1)
SparseCategoricalCrossentropy = _wrapper("SparseCategoricalCrossentropy", F.sparse_categorical_crossentropy,
                                         "sparse_categorical_crossentropy", from_logits=False, axis=-1)
Hinge = _wrapper("Hinge", F.hinge, "hinge")
SquaredHinge = _wrapper("SquaredHinge", F.squared_hinge, "squared_hinge")
CategoricalHinge = _wrapper("CategoricalHinge", F.categorical_hinge, "categorical_hinge")
KLDivergence = _wrapper("KLDivergence", F.kl_divergence, "kl_divergence")
Poisson = _wrapper("Poisson", F.poisson, "poisson")
LogCoshError = _wrapper("LogCoshError", F.log_cosh, "logcosh")
MeanAbsolutePercentageError = _wrapper("MeanAbsolutePercentageError", F.mean_absolute_percentage_error,
                                       "mean_absolute_percentage_error")
MeanSquaredLogarithmicError = _wrapper("MeanSquaredLogarithmicError", F.mean_squared_logarithmic_error,
                                       "mean_squared_logarithmic_error")
CosineSimilarity = _wrapper("CosineSimilarity", cosine_similarity, "cosine_similarity", axis=-1)
PearsonCorrelation = _wrapper("PearsonCorrelation", pearson_correlation, "pearson_correlation", axis=-1)
ConcordanceCorrelation = _wrapper("ConcordanceCorrelation", concordance_correlation, "concordance_correlation", axis=-1)


# ---------------------------------------------------------------- confusion counts
def _confusion_inputs(y_true, y_pred, sample_weight, class_id=None):
    """Flat labels (0/1 floats), predictions and weights, as Keras' confusion-matrix update."""
    tf = _tf()
    y_pred = F.as_float(y_pred)
    y_true = F.as_float(y_true, y_pred)
    y_true, y_pred = F.same_rank(y_true, y_pred)
    if class_id is not None:
        y_true, y_pred = y_true[..., class_id], y_pred[..., class_id]
    weights = tf.ones_like(y_pred)
    if sample_weight is not None:
        w = F.as_float(sample_weight, y_pred)
        w, y_pred_w = F.same_rank(w, y_pred)
        weights = tf.reshape(w * tf.ones_like(y_pred_w), [-1])
    labels = tf.cast(tf.cast(y_true, tf.bool), tf.float32)
    return tf.reshape(labels, [-1, 1]), tf.reshape(y_pred, [-1, 1]), tf.reshape(weights, [-1, 1])


def _count_update(variables, kinds, thresholds, y_true, y_pred, sample_weight, class_id=None):
    tf = _tf()
    labels, preds, weights = _confusion_inputs(y_true, y_pred, sample_weight, class_id)
    above = tf.cast(preds > tf.constant(thresholds, tf.float32), tf.float32)  # Keras: strictly greater
    for var, kind in zip(variables, kinds):
        label = labels if kind in ("tp", "fn") else 1.0 - labels
        pred = above if kind in ("tp", "fp") else 1.0 - above
        var.assign_add(tf.reduce_sum(label * pred * weights, axis=0))


class _ConfusionCount(_KerasMetric):
    _kind = None

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = [0.5] if thresholds is None else (
            [float(t) for t in thresholds] if isinstance(thresholds, (list, tuple)) else [float(thresholds)])
        if any(not 0.0 <= t <= 1.0 for t in self.thresholds):
            raise ValueError(f"Threshold values must be in [0, 1]. Received: {thresholds}")
        self._ef_config = {"thresholds": thresholds}
        self.accumulator = self.add_variable(shape=(len(self.thresholds),), initializer="zeros", name="accumulator")

    def update_state(self, y_true, y_pred, sample_weight=None):
        _count_update([self.accumulator], [self._kind], self.thresholds, y_true, y_pred, sample_weight)

    def result(self):
        tf = _tf()
        return tf.identity(self.accumulator[0]) if len(self.thresholds) == 1 else tf.identity(self.accumulator)


def _count_class(class_name, kind, default_name):
    def __init__(self, thresholds=None, name=default_name, dtype=None):
        _ConfusionCount.__init__(self, thresholds, name, dtype)

    doc = f"Keras' {class_name}: the weighted count at each threshold (predictions above it are positive)."
    return type(class_name, (_ConfusionCount,), {"_kind": kind, "__init__": __init__,
                                                 "__module__": "eagerflow.keras.metrics", "__doc__": doc})


TruePositives = _count_class("TruePositives", "tp", "true_positives")
FalsePositives = _count_class("FalsePositives", "fp", "false_positives")
TrueNegatives = _count_class("TrueNegatives", "tn", "true_negatives")
FalseNegatives = _count_class("FalseNegatives", "fn", "false_negatives")


class _SensitivitySpecificityBase(_KerasMetric):
    """The four counts at num_thresholds thresholds spread over [0, 1]; result() is the best of
    one statistic among the thresholds where another reaches `value`."""

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if num_thresholds <= 0:
            raise ValueError("Argument `num_thresholds` must be an integer > 0. "
                             f"Received: num_thresholds={num_thresholds}")
        self.value = value
        self.class_id = class_id
        self.num_thresholds = num_thresholds
        if num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            self.thresholds = [0.0] + [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)] + [1.0]
        n = len(self.thresholds)
        self.true_positives = self.add_variable(shape=(n,), initializer="zeros", name="true_positives")
        self.false_positives = self.add_variable(shape=(n,), initializer="zeros", name="false_positives")
        self.true_negatives = self.add_variable(shape=(n,), initializer="zeros", name="true_negatives")
        self.false_negatives = self.add_variable(shape=(n,), initializer="zeros", name="false_negatives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        _count_update([self.true_positives, self.false_positives, self.true_negatives, self.false_negatives],
                      ["tp", "fp", "tn", "fn"], self.thresholds, y_true, y_pred, sample_weight, self.class_id)

    def _rates(self):
        tf = _tf()
        tp, fp, tn, fn = self.true_positives, self.false_positives, self.true_negatives, self.false_negatives
        return {"sensitivity": tf.math.divide_no_nan(tp, tp + fn), "specificity": tf.math.divide_no_nan(tn, tn + fp),
                "precision": tf.math.divide_no_nan(tp, tp + fp)}

    def result(self):
        tf = _tf()
        rates = self._rates()
        feasible = rates[self._constrained] >= self.value
        return tf.maximum(tf.reduce_max(tf.where(feasible, rates[self._dependent],
                                                 tf.zeros_like(rates[self._dependent]))), 0.0)


def _at_class(class_name, value_arg, constrained, dependent, default_name):
    def __init__(self, value=None, num_thresholds=200, class_id=None, name=default_name, dtype=None, **kwargs):
        if value_arg in kwargs:
            value = kwargs.pop(value_arg)
        if kwargs:
            raise TypeError(f"{class_name}() got an unexpected keyword argument '{sorted(kwargs)[0]}'")
        if value is None or not 0.0 <= value <= 1.0:
            raise ValueError(f"Argument `{value_arg}` must be in the range [0, 1]. Received: {value_arg}={value}")
        _SensitivitySpecificityBase.__init__(self, value, num_thresholds, class_id, name, dtype)
        setattr(self, value_arg, value)
        self._ef_config = {value_arg: value, "num_thresholds": num_thresholds, "class_id": class_id}

    return type(class_name, (_SensitivitySpecificityBase,),
                {"__init__": __init__, "_constrained": constrained, "_dependent": dependent,
                 "__module__": "eagerflow.keras.metrics",
                 "__doc__": f"Keras' {class_name}: the best {dependent} where {constrained} >= {value_arg}."})


SensitivityAtSpecificity = _at_class("SensitivityAtSpecificity", "specificity", "specificity", "sensitivity",
                                     "sensitivity_at_specificity")
SpecificityAtSensitivity = _at_class("SpecificityAtSensitivity", "sensitivity", "sensitivity", "specificity",
                                     "specificity_at_sensitivity")
PrecisionAtRecall = _at_class("PrecisionAtRecall", "recall", "sensitivity", "precision", "precision_at_recall")
RecallAtPrecision = _at_class("RecallAtPrecision", "precision", "precision", "sensitivity", "recall_at_precision")


# ---------------------------------------------------------------- R2Score
class R2Score(_KerasMetric):
    """Keras' R2Score (coefficient of determination) for [batch, outputs] targets, per output
    then aggregated ("uniform_average", "variance_weighted_average" or None: one per output);
    num_regressors > 0 gives the adjusted score."""

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if class_aggregation not in (None, "uniform_average", "variance_weighted_average"):
            raise ValueError("Invalid value for argument `class_aggregation`. Expected one of "
                             f"(None, 'uniform_average', 'variance_weighted_average'). "
                             f"Received: class_aggregation={class_aggregation}")
        if num_regressors < 0:
            raise ValueError(f"Invalid value for argument `num_regressors`. Expected a value >= 0. "
                             f"Received: num_regressors={num_regressors}")
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self._ef_config = {"class_aggregation": class_aggregation, "num_regressors": num_regressors}
        self.num_samples = self.add_variable(shape=(), initializer="zeros", name="num_samples")
        self._built = False

    def _build(self, y_true_shape, y_pred_shape):
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2 or y_pred_shape[-1] is None:
            raise ValueError("R2Score expects 2D inputs with shape (batch_size, output_dim), output_dim known. "
                             f"Received input shapes: y_pred.shape={y_pred_shape} and y_true.shape={y_true_shape}.")
        n = int(y_pred_shape[-1])
        self.squared_sum = self.add_variable(shape=(n,), initializer="zeros", name="squared_sum")
        self.sum = self.add_variable(shape=(n,), initializer="zeros", name="sum")
        self.total_mse = self.add_variable(shape=(n,), initializer="zeros", name="residual")
        self.count = self.add_variable(shape=(n,), initializer="zeros", name="count")
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        tf = _tf()
        y_pred = F.as_float(y_pred)
        y_true = F.as_float(y_true, y_pred)
        y_true, y_pred = F.same_rank(y_true, y_pred)
        if not self._built:
            self._build(tuple(y_true.shape), tuple(y_pred.shape))
        w = tf.constant(1.0) if sample_weight is None else F.as_float(sample_weight, y_true)
        if len(w.shape) == 1:
            w = tf.expand_dims(w, 1)
        w = w * tf.ones_like(y_true)
        weighted = y_true * w
        self.sum.assign_add(tf.reduce_sum(weighted, axis=0))
        self.squared_sum.assign_add(tf.reduce_sum(y_true * weighted, axis=0))
        self.total_mse.assign_add(tf.reduce_sum(tf.square(y_true - y_pred) * w, axis=0))
        self.count.assign_add(tf.reduce_sum(w, axis=0))
        self.num_samples.assign_add(tf.cast(tf.size(y_true), tf.float32))

    def result(self):
        tf = _tf()
        if not self._built:
            return tf.constant(0.0)
        mean = self.sum / self.count
        total = self.squared_sum - self.sum * mean
        raw = 1.0 - self.total_mse / total
        raw = tf.where(tf.math.is_inf(raw), tf.zeros_like(raw), raw)
        if self.class_aggregation == "uniform_average":
            score = tf.reduce_mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = tf.reduce_sum(total * raw) / tf.reduce_sum(total)
        else:
            score = raw
        if self.num_regressors:
            n, p = self.num_samples, float(self.num_regressors)
            # Keras keeps the plain score (with a warning) when there are too few samples.
            adjusted = 1.0 - (1.0 - score) * (n - 1.0) / (n - p - 1.0)
            score = tf.where(n - 1.0 > p, adjusted, score)
        return score


# ---------------------------------------------------------------- IoU
class _IoUBase(_KerasMetric):
    """A [num_classes, num_classes] confusion matrix (rows the labels), weighted; labels equal
    to ignore_class and ids out of range weigh 0. As Keras, the state's dtype defaults to "int":
    float sample weights are then truncated to integers (give dtype="float32" to keep them)."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True, sparse_y_pred=True,
                 axis=-1):
        super().__init__(name=name)
        self._int_weights = dtype is None or "int" in str(getattr(dtype, "name", dtype))
        self.num_classes = int(num_classes)
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_variable(shape=(self.num_classes, self.num_classes), initializer="zeros",
                                          name="total_confusion_matrix")

    def _labels_and_predictions(self, y_true, y_pred):
        tf = _tf()
        if not self.sparse_y_true:
            y_true = tf.argmax(y_true, axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = tf.argmax(y_pred, axis=self.axis)
        return y_true, y_pred

    def update_state(self, y_true, y_pred, sample_weight=None):
        tf = _tf()
        y_true, y_pred = self._labels_and_predictions(y_true, y_pred)
        y_true = tf.reshape(tf.cast(F.as_float(y_true), tf.int64), [-1])
        y_pred = tf.reshape(tf.cast(F.as_float(y_pred), tf.int64), [-1])
        w = tf.ones_like(tf.cast(y_true, tf.float32))
        if sample_weight is not None:
            sw = F.as_float(sample_weight)
            if self._int_weights:
                sw = tf.cast(tf.cast(sw, tf.int64), tf.float32)
            w = tf.reshape(sw, [-1]) if len(sw.shape) else w * sw
        valid = tf.logical_and(tf.logical_and(y_true >= 0, y_true < self.num_classes),
                               tf.logical_and(y_pred >= 0, y_pred < self.num_classes))
        if self.ignore_class is not None:
            valid = tf.logical_and(valid, tf.not_equal(y_true, int(self.ignore_class)))
        w = tf.where(valid, w, tf.zeros_like(w))
        y_true = tf.where(valid, y_true, tf.zeros_like(y_true))  # in range; weighs 0
        y_pred = tf.where(valid, y_pred, tf.zeros_like(y_pred))
        cm = tf.math.confusion_matrix(y_true, y_pred, num_classes=self.num_classes, weights=w, dtype=tf.float32)
        self.total_cm.assign_add(cm)

    def _ious(self):
        tf = _tf()
        cm = self.total_cm
        predicted = tf.reduce_sum(cm, axis=0)
        actual = tf.reduce_sum(cm, axis=1)
        tp = tf.linalg.diag_part(cm)
        return tp, predicted + actual - tp

    def result(self):
        tf = _tf()
        tp, denominator = self._ious()
        ids = list(self.target_class_ids)
        tp = tf.gather(tp, ids)
        denominator = tf.gather(denominator, ids)
        valid = tf.reduce_sum(tf.cast(denominator > 1e-9, tf.float32))
        return tf.math.divide_no_nan(tf.reduce_sum(tf.math.divide_no_nan(tp, denominator)), valid)

    def get_config(self):
        config = {"name": self.name, "dtype": "float32", "num_classes": self.num_classes,
                  "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                  "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}
        config.update(self._ef_config)
        return config


class IoU(_IoUBase):
    """Keras' IoU: the mean intersection-over-union of target_class_ids."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, name, dtype, ignore_class, sparse_y_true, sparse_y_pred, axis)
        if max(target_class_ids) >= num_classes:
            raise ValueError(f"Target class id {max(target_class_ids)} is out of range, which is [0, {num_classes}).")
        self.target_class_ids = list(target_class_ids)
        self._ef_config = {"target_class_ids": self.target_class_ids}


class MeanIoU(_IoUBase):
    """Keras' MeanIoU: IoU averaged over every class."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True, sparse_y_pred=True,
                 axis=-1):
        super().__init__(num_classes, name, dtype, ignore_class, sparse_y_true, sparse_y_pred, axis)
        self.target_class_ids = list(range(num_classes))


class BinaryIoU(_IoUBase):
    """Keras' BinaryIoU: IoU of the classes 0/1, predictions above `threshold` counting as 1."""

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(2, name, dtype)
        self.target_class_ids = list(target_class_ids)
        self.threshold = threshold
        self._ef_config = {"target_class_ids": self.target_class_ids, "threshold": threshold}

    def _labels_and_predictions(self, y_true, y_pred):
        tf = _tf()
        return y_true, tf.cast(F.as_float(y_pred) > self.threshold, tf.float32)

    def get_config(self):
        return {"name": self.name, "dtype": "float32", **self._ef_config}


class OneHotIoU(IoU):
    """Keras' OneHotIoU: IoU with one-hot labels (and, unless sparse_y_pred, scores)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_pred=False,
                 axis=-1):
        super().__init__(num_classes, target_class_ids, name, dtype, ignore_class, False, sparse_y_pred, axis)


class OneHotMeanIoU(MeanIoU):
    """Keras' OneHotMeanIoU: MeanIoU with one-hot labels."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name, dtype, ignore_class, False, sparse_y_pred, axis)


CLASSES = [Mean, Sum, MeanMetricWrapper, BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
           Hinge, SquaredHinge, CategoricalHinge, KLDivergence, Poisson, LogCoshError, MeanAbsolutePercentageError,
           MeanSquaredLogarithmicError, CosineSimilarity, PearsonCorrelation, ConcordanceCorrelation, TruePositives,
           FalsePositives, TrueNegatives, FalseNegatives, SensitivityAtSpecificity, SpecificityAtSensitivity,
           PrecisionAtRecall, RecallAtPrecision, R2Score, IoU, MeanIoU, BinaryIoU, OneHotIoU, OneHotMeanIoU]
