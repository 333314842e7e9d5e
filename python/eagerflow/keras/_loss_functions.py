"""Keras 3's loss functions: each gives the loss of every example (the last axis reduced, as
Keras'), written with ef ops so that they run eagerly and inside a traced train step alike.
They are keras.losses' functions, the per-example part of its Loss classes, and keras.metrics'
mean metrics."""
from .. import _core



def _eps():
    # Keras reads backend.epsilon() at each call, so keras.config.set_epsilon changes later losses
    from .config import epsilon
    return epsilon()


def _tf():
    import eagerflow as tf  # the package imports keras: fetched at call time
    return tf


def as_float(x, like=None):
    tf = _tf()
    x = x if isinstance(x, (_core.Tensor, _core.Variable)) else tf.convert_to_tensor(x)
    dtype = like.dtype if like is not None else (x.dtype if x.dtype.is_floating else tf.float32)
    if x.dtype != dtype:
        x = tf.cast(x, dtype)
    return x


def _prepare(y_true, y_pred):
    y_pred = as_float(y_pred)
    y_true = as_float(y_true, y_pred)
    return same_rank(y_true, y_pred)


def same_rank(x1, x2):
    """Keras' squeeze_or_expand_to_same_rank: ranks one apart meet when the larger ends in 1."""
    tf = _tf()
    r1, r2 = len(x1.shape), len(x2.shape)
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1:
            x2 = tf.expand_dims(x2, -1)
        else:
            x1 = tf.squeeze(x1, -1)
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1:
            x1 = tf.expand_dims(x1, -1)
        else:
            x2 = tf.squeeze(x2, -1)
    return x1, x2


def mean_squared_error(y_true, y_pred):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(tf.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(tf.abs(y_true - y_pred), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    diff = tf.abs((y_true - y_pred) / tf.maximum(tf.abs(y_true), _eps()))
    return 100.0 * tf.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    first = tf.math.log(tf.maximum(y_pred, _eps()) + 1.0)
    second = tf.math.log(tf.maximum(y_true, _eps()) + 1.0)
    return tf.reduce_mean(tf.square(first - second), axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    return -tf.reduce_sum(tf.math.l2_normalize(y_true, axis=axis) * tf.math.l2_normalize(y_pred, axis=axis), axis=axis)


def huber(y_true, y_pred, delta=1.0):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    error = tf.abs(y_pred - y_true)
    quadratic = 0.5 * tf.square(error)
    linear = delta * error - 0.5 * delta * delta
    return tf.reduce_mean(tf.where(error <= delta, quadratic, linear), axis=-1)


def log_cosh(y_true, y_pred):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    x = y_pred - y_true
    # log(cosh(x)) without overflow for large |x|
    return tf.reduce_mean(x + tf.nn.softplus(-2.0 * x) - 0.6931471805599453, axis=-1)


def kl_divergence(y_true, y_pred):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = tf.clip_by_value(y_true, _eps(), 1.0)
    y_pred = tf.clip_by_value(y_pred, _eps(), 1.0)
    return tf.reduce_sum(y_true * tf.math.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(y_pred - y_true * tf.math.log(y_pred + _eps()), axis=-1)


def _hinge_labels(y_true):
    # Keras: labels all in {0, 1} become {-1, 1}; others are taken as they are.
    tf = _tf()
    binary = tf.reduce_all(tf.logical_or(tf.equal(y_true, 0.0), tf.equal(y_true, 1.0)))
    return tf.where(binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(tf.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(tf.square(tf.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    tf = _tf()
    y_pred = as_float(y_pred)
    y_true = as_float(y_true, y_pred)
    pos = tf.reduce_sum(y_true * y_pred, axis=-1)
    neg = tf.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return tf.maximum(neg - pos + 1.0, 0.0)


def _binary_crossentropy_elements(y_true, y_pred, from_logits):
    tf = _tf()
    if from_logits:
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    p = tf.clip_by_value(y_pred, _eps(), 1.0 - _eps())
    return -(y_true * tf.math.log(p) + (1.0 - y_true) * tf.math.log(1.0 - p))


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return tf.reduce_mean(_binary_crossentropy_elements(y_true, y_pred, from_logits), axis=axis)


def _log_probs(y_pred, from_logits, axis):
    tf = _tf()
    if from_logits:
        return tf.nn.log_softmax(y_pred, axis=axis)
    p = y_pred / tf.reduce_sum(y_pred, axis=axis, keepdims=True)
    return tf.math.log(tf.clip_by_value(p, _eps(), 1.0 - _eps()))


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    tf = _tf()
    y_pred = as_float(y_pred)
    y_true = as_float(y_true, y_pred)
    if label_smoothing:
        classes = tf.cast(tf.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    return -tf.reduce_sum(y_true * _log_probs(y_pred, from_logits, axis), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    tf = _tf()
    y_pred = as_float(y_pred)
    y_true = y_true if isinstance(y_true, (_core.Tensor, _core.Variable)) else tf.convert_to_tensor(y_true)
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = tf.squeeze(y_true, -1)
    labels = tf.cast(y_true, tf.int64)
    if ignore_class is not None:
        valid = tf.not_equal(labels, ignore_class)
        labels = tf.where(valid, labels, tf.zeros_like(labels))
    rank = len(y_pred.shape)
    axis = axis % rank
    onehot = tf.one_hot(labels, int(y_pred.shape[axis]), dtype=y_pred.dtype)
    if axis != rank - 1:  # the classes' axis where y_pred has it
        onehot = tf.transpose(onehot, list(range(axis)) + [rank - 1] + list(range(axis, rank - 1)))
    out = -tf.reduce_sum(onehot * _log_probs(y_pred, from_logits, axis), axis=axis)
    if ignore_class is not None:
        out = tf.where(valid, out, tf.zeros_like(out))
    return out


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                              label_smoothing=0.0, axis=-1):
    tf = _tf()
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        y_pred = tf.sigmoid(y_pred)
    bce = _binary_crossentropy_elements(y_true, y_pred, False)
    p_t = y_true * y_pred + (1.0 - y_true) * (1.0 - y_pred)
    focal = tf.pow(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return tf.reduce_mean(focal, axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                                   axis=-1):
    tf = _tf()
    y_pred = as_float(y_pred)
    y_true = as_float(y_true, y_pred)
    if label_smoothing:
        classes = tf.cast(tf.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        y_pred = tf.nn.softmax(y_pred, axis=axis)
    p = y_pred / tf.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = tf.clip_by_value(p, _eps(), 1.0 - _eps())
    return tf.reduce_sum(alpha * tf.pow(1.0 - p, gamma) * (-y_true * tf.math.log(p)), axis=axis)


def _sums_axis(axis):
    return list(axis) if isinstance(axis, (tuple, list)) else axis


def dice(y_true, y_pred, axis=None):
    tf = _tf()
    y_pred = as_float(y_pred)
    y_true = as_float(y_true, y_pred)
    axis = _sums_axis(axis)
    inter = tf.reduce_sum(y_true * y_pred, axis=axis)
    total = tf.reduce_sum(y_true, axis=axis) + tf.reduce_sum(y_pred, axis=axis) + _eps()
    return 1.0 - 2.0 * inter / total


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    tf = _tf()
    y_pred = as_float(y_pred)
    y_true = as_float(y_true, y_pred)
    axis = _sums_axis(axis)
    inter = tf.reduce_sum(y_true * y_pred, axis=axis)
    # Keras' naming: "fp" counts missed positives and "fn" false alarms; alpha and beta weigh them so.
    fp = tf.reduce_sum((1.0 - y_pred) * y_true, axis=axis)
    fn = tf.reduce_sum(y_pred * (1.0 - y_true), axis=axis)
    return 1.0 - inter / (inter + alpha * fp + beta * fn + _eps())


# Keras 3's short names (keras.losses.MSE is mean_squared_error, ...).
MSE = mse = mean_squared_error
MAE = mae = mean_absolute_error
MAPE = mape = mean_absolute_percentage_error
MSLE = msle = mean_squared_logarithmic_error
KLD = kld = kl_divergence
logcosh = log_cosh


def categorical_generalized_cross_entropy(y_true, y_pred, q):
    """(1 - p**q) / q of the true class's probability p (labels are class indices)."""
    tf = _tf()
    y_pred = as_float(y_pred)
    labels = y_true if isinstance(y_true, (_core.Tensor, _core.Variable)) else tf.convert_to_tensor(y_true)
    if len(labels.shape) == len(y_pred.shape) and labels.shape[-1] == 1:
        labels = tf.squeeze(labels, -1)
    onehot = tf.one_hot(tf.cast(labels, tf.int64), int(y_pred.shape[-1]), dtype=y_pred.dtype)
    p = tf.reduce_sum(y_pred * onehot, axis=-1)
    return (1.0 - tf.pow(p, q)) / q


def ctc(y_true, y_pred):
    """Keras' CTC: labels [batch, max_length] (0 pads and is the blank), logits
    [batch, frames, classes]; every frame of every example counts."""
    tf = _tf()
    if len(y_true.shape) != 2:
        raise ValueError("Targets `y_true` are expected to be a tensor of shape `(batch_size, max_length)` in integer "
                         f"format. Received: y_true.shape={tuple(y_true.shape)}")
    y_pred = as_float(y_pred)
    if len(y_pred.shape) != 3:
        raise ValueError("Logits `y_pred` are expected to be a tensor of shape "
                         "`(batch_size, max_length, num_classes)`. "
                         f"Received: y_pred.shape={tuple(y_pred.shape)}")
    labels = tf.cast(y_true if isinstance(y_true, (_core.Tensor, _core.Variable)) else tf.convert_to_tensor(y_true),
                     tf.int32)
    label_length = tf.reduce_sum(tf.cast(tf.not_equal(labels, 0), tf.int32), axis=-1)
    frames = tf.cast(tf.shape(y_pred)[1], tf.int32) * tf.ones_like(label_length)
    return tf.nn.ctc_loss(labels=labels, logits=y_pred, label_length=label_length, logit_length=frames,
                          blank_index=0, logits_time_major=False)


def circle(y_true, y_pred, ref_labels=None, ref_embeddings=None, remove_diagonal=True, gamma=80, margin=0.4):
    """Keras' Circle loss of integer labels and L2-normalised embeddings (one value per
    example; a 0 means no pair contributes, and the averages skip it)."""
    tf = _tf()
    y_pred = as_float(y_pred)
    labels = tf.cast(y_true if isinstance(y_true, (_core.Tensor, _core.Variable)) else tf.convert_to_tensor(y_true),
                     tf.int32)
    ref = y_pred if ref_embeddings is None else as_float(ref_embeddings, y_pred)
    ref_labels = labels if ref_labels is None else tf.cast(tf.convert_to_tensor(ref_labels), tf.int32)
    distances = tf.maximum(1.0 - tf.matmul(y_pred, tf.transpose(ref)), 0.0)
    query, key = tf.reshape(labels, [-1, 1]), tf.reshape(ref_labels, [-1, 1])
    positive = tf.equal(query, tf.transpose(key))
    negative = tf.logical_not(positive)
    if remove_diagonal:
        # positions by running count (the batch size may be symbolic inside a traced step)
        rows = tf.cumsum(tf.ones_like(tf.cast(query, tf.float32)), axis=0)
        cols = tf.transpose(tf.cumsum(tf.ones_like(tf.cast(key, tf.float32)), axis=0))
        positive = tf.logical_and(positive, tf.not_equal(rows, cols))
    pos_mask, neg_mask = tf.cast(positive, y_pred.dtype), tf.cast(negative, y_pred.dtype)
    pos_weights = tf.maximum((margin + distances) * pos_mask, 0.0)
    neg_weights = tf.maximum((1.0 + margin - distances) * neg_mask, 0.0)
    pos_wdists = -gamma * pos_weights * (margin - distances)
    neg_wdists = gamma * neg_weights * ((1.0 - margin) - distances)
    p_loss = _masked_logsumexp(pos_wdists, positive)
    n_loss = _masked_logsumexp(neg_wdists, negative)
    return tf.nn.softplus(p_loss + n_loss)


def _masked_logsumexp(values, mask):
    # logsumexp over the masked-in entries of each row; -inf for a row with none.
    tf = _tf()
    neg_inf = tf.zeros_like(values) + float("-inf")
    masked = tf.where(mask, values, neg_inf)
    top = tf.reduce_max(masked, axis=1, keepdims=True)
    safe_top = tf.where(tf.math.is_finite(top), top, tf.zeros_like(top))
    total = tf.reduce_sum(tf.where(mask, tf.exp(values - safe_top), tf.zeros_like(values)), axis=1)
    return tf.math.log(total) + tf.squeeze(safe_top, 1)
