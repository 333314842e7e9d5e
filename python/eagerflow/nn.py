"""ef.nn: TensorFlow's tf.nn with TF's names, argument names and defaults. Activations are the
library's (eagerflow/nn/activation_fn.h, ef::math); the losses and helpers compose the op
table's ops, so everything traces, differentiates and vmaps."""
from . import _core
from . import math as _math
from . import _distribute
from .keras import activations as _act

attention_probabilities = _core.nn.attention_probabilities
layer_norm = _core.nn.layer_norm
scaled_dot_product_attention = _core.nn.scaled_dot_product_attention

__all__ = [
    "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "softplus", "softsign", "sigmoid",
    "tanh", "softmax", "log_softmax", "sparse_softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
    "sigmoid_cross_entropy_with_logits", "weighted_cross_entropy_with_logits", "l2_loss", "l2_normalize",
    "moments", "batch_normalization", "bias_add", "dropout", "embedding_lookup", "log_poisson_loss",
    "attention_probabilities", "layer_norm", "scaled_dot_product_attention",
]


def relu(features, name=None):
    return _core.relu(features)


def relu6(features, name=None):
    return _act.relu6(features)


def leaky_relu(features, alpha=0.2, name=None):
    return _act.leaky_relu(features, alpha)


def elu(features, name=None):
    return _act.elu(features, 1.0)


def selu(features, name=None):
    return _act.selu(features)


def gelu(features, approximate=False, name=None):
    return _act.gelu(features, approximate)


def silu(features, beta=1.0, name=None):
    """x * sigmoid(beta * x)."""
    if beta == 1.0:
        return _act.silu(features)
    x = _core.convert_to_tensor(features)
    return x * _core.sigmoid(x * beta)


swish = silu


def softplus(features, name=None):
    return _math.softplus(features)


def softsign(features, name=None):
    return _act.softsign(features)


def sigmoid(x, name=None):
    return _core.sigmoid(x)


def tanh(x, name=None):
    return _core.tanh(x)


def softmax(logits, axis=None, name=None):
    return _math.softmax(logits, axis)


def log_softmax(logits, axis=None, name=None):
    return _math.log_softmax(logits, axis)


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Per row: logsumexp(logits) - logits[label], over the last axis (one fused op)."""
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits: pass both labels= and logits=")
    return _core.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits)) over `axis`; no gradient to labels is stopped, as TF."""
    logits = _core.convert_to_tensor(logits)
    labels = _core.cast(_core.convert_to_tensor(labels), logits.dtype)
    return _core.neg(_core.sum(labels * _core.log_softmax(logits, axis), axis))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """max(x, 0) - x * z + log1p(exp(-|x|)) per element (x logits, z labels): no overflow."""
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits: pass both labels= and logits=")
    x = _core.convert_to_tensor(logits)
    z = _core.cast(_core.convert_to_tensor(labels), x.dtype)
    if tuple(x._shape_tuple) != tuple(z._shape_tuple):
        raise ValueError(f"logits and labels must have the same shape, got {x._shape_tuple} and {z._shape_tuple}")
    return _core.relu(x) - x * z + _math.log1p(_core.exp(_core.neg(_core.abs(x))))


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """TF's: (1 - z) * x + (1 + (q - 1) * z) * (log1p(exp(-|x|)) + max(-x, 0))."""
    x = _core.convert_to_tensor(logits)
    z = _core.cast(_core.convert_to_tensor(labels), x.dtype)
    log_weight = (pos_weight - 1.0) * z + 1.0
    return (1.0 - z) * x + log_weight * (_math.log1p(_core.exp(_core.neg(_core.abs(x)))) + _core.relu(_core.neg(x)))


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(c) - z * c (plus Stirling's term for z > 1 when compute_full_loss)."""
    c = _core.convert_to_tensor(log_input)
    z = _core.cast(_core.convert_to_tensor(targets), c.dtype)
    loss = _core.exp(c) - z * c
    if compute_full_loss:
        import math
        safe = _core.where(z > 1.0, z, _core.ones_like(z))
        stirling = safe * _core.log(safe) - safe + 0.5 * _core.log(safe * (2.0 * math.pi))
        loss = loss + _core.where(z > 1.0, stirling, _core.zeros_like(z))
    return loss


def l2_loss(t, name=None):
    """sum(t ** 2) / 2."""
    t = _core.convert_to_tensor(t)
    return _core.sum(_core.square(t)) * 0.5


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    return _math.l2_normalize(x, axis, epsilon, name, dim)


def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) over `axes` (population variance, as TF)."""
    x = _core.convert_to_tensor(x)
    mean = _core.mean(x, axes, True)
    variance = _core.mean(_core.square(x - mean), axes, True)
    if not keepdims:
        mean, variance = _core.squeeze(mean, axes), _core.squeeze(variance, axes)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset (offset, scale may be None)."""
    x = _core.convert_to_tensor(x)
    inv = _core.rsqrt(_core.convert_to_tensor(variance) + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    y = (x - mean) * inv
    return y if offset is None else y + offset


def bias_add(value, bias, data_format=None, name=None):
    """value + bias over the last axis (NHWC); data_format "NC..." adds over axis 1."""
    value = _core.convert_to_tensor(value)
    bias = _core.convert_to_tensor(bias, dtype=value.dtype)  # as TF's
    if len(bias._shape_tuple) != 1:
        raise ValueError(f"bias_add: bias must be 1-D, got shape {bias._shape_tuple}")
    if data_format is not None and data_format.startswith("NC"):
        bias = _core.reshape(bias, [-1] + [1] * (len(value._shape_tuple) - 2))
    return value + bias


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Each element zeroed with probability `rate`, the rest scaled by 1 / (1 - rate)."""
    x = _core.convert_to_tensor(x)
    if not 0 <= rate < 1:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    if rate == 0:
        return x
    # noise_shape: one draw per position of it, broadcast over x (TF's).
    u = _core.random.uniform_like(x, seed=seed) if noise_shape is None else \
        _core.random.uniform(list(noise_shape), dtype=x.dtype, seed=seed)
    keep = _core.cast(u >= rate, x.dtype)
    return x * keep * (1.0 / (1.0 - rate))


def embedding_lookup(params, ids, max_norm=None, name=None):
    """params[ids] along axis 0."""
    if max_norm is not None:
        raise NotImplementedError("embedding_lookup: max_norm is not supported")
    return _core.gather(params, ids, 0)


from ._nn_conv import (conv1d, conv2d, convolution, conv2d_transpose, conv1d_transpose, conv_transpose,  # noqa: E402
                       depthwise_conv2d, separable_conv2d, atrous_conv2d, max_pool, max_pool1d, max_pool2d, avg_pool,
                       avg_pool1d, avg_pool2d, pool, space_to_depth, depth_to_space)
from ._nn_conv3d import conv3d, conv3d_transpose, max_pool3d, avg_pool3d  # noqa: E402
from ._nn_conv_grads import (atrous_conv2d_transpose, depthwise_conv2d_backprop_filter,  # noqa: E402
                             depthwise_conv2d_backprop_input)
from ._nn_morphology import dilation2d, erosion2d, max_pool_with_argmax  # noqa: E402
from ._nn_space_batch import space_to_batch, with_space_to_batch  # noqa: E402
from ._nn_embedding import embedding_lookup_sparse, safe_embedding_lookup_sparse  # noqa: E402
from ._nn_ctc import (ctc_loss, ctc_greedy_decoder, ctc_beam_search_decoder, collapse_repeated,  # noqa: E402
                      ctc_unique_labels)
from ._nn_isotonic import isotonic_regression  # noqa: E402
from ._nn_fractional_pool import fractional_max_pool, fractional_avg_pool  # noqa: E402


def top_k(input, k=1, sorted=True, index_type=None, name=None):  # noqa: A002 - TF's names
    from . import top_k as _top_k
    return _top_k(input, k, sorted, name)


def in_top_k(targets, predictions, k, name=None):
    """Whether each row's target class scores among the k highest (ties count for the target)."""
    p = _core.convert_to_tensor(predictions)
    t = _core.cast(_core.convert_to_tensor(targets), _core.DType.int64)
    target_score = _core.gather_nd(p, _core.expand_dims(t, -1), 1)
    higher = _core.reduce_sum(_core.cast(p > _core.expand_dims(target_score, -1), _core.DType.int32), axis=-1)
    return higher < int(k)


def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, name=None):  # noqa: A002
    """x / (bias + alpha * sum of x^2 over the 2r+1 channels around each)^beta, over the last axis."""
    x = _core.convert_to_tensor(input)
    r = int(depth_radius)
    squares = x * x
    c = x._shape_tuple[-1]
    padded = _core.pad(squares, [[0, 0]] * (len(x._shape_tuple) - 1) + [[r + 1, r]])
    sums = _core.cumsum(padded, axis=-1)
    window = sums[..., 2 * r + 1:2 * r + 1 + c] - sums[..., 0:c]
    return x / _core.pow(bias + alpha * window, beta)


lrn = local_response_normalization


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """sum(loss * weight) / global batch size (by default this replica's examples times the
    replicas in sync of the current tf.distribute strategy)."""
    _distribute._require_replica_context("compute_average_loss")
    loss = _core.convert_to_tensor(per_example_loss)
    if sample_weight is not None:
        loss = loss * _core.cast(_core.convert_to_tensor(sample_weight), loss.dtype)
    if global_batch_size is None:
        replicas = _distribute.get_strategy().num_replicas_in_sync
        n = loss._shape_tuple[0] if loss._shape_tuple else 1
        global_batch_size = (_core.cast(_core.shape(loss)[0] * replicas, loss.dtype) if n is None else n * replicas)
    return _core.reduce_sum(loss) / global_batch_size


def scale_regularization_loss(regularization_loss):
    """The regularization loss summed, divided by the replicas in sync (gradients are summed
    over the replicas, so it counts once)."""
    _distribute._require_replica_context("scale_regularization_loss")
    if isinstance(regularization_loss, (list, tuple)):
        total = _math.add_n(list(regularization_loss))
    else:
        total = _core.reduce_sum(_core.convert_to_tensor(regularization_loss))
    replicas = _distribute.get_strategy().num_replicas_in_sync
    return total if replicas == 1 else total / replicas


def sufficient_statistics(x, axes, shift=None, keepdims=False, name=None):
    """(count, sum of x - shift, sum of (x - shift)^2, shift) over `axes`."""
    x = _core.convert_to_tensor(x)
    axes = [int(a) for a in axes]
    count = 1.0
    for a in axes:
        count *= x._shape_tuple[a]
    y = x if shift is None else x - shift
    return (_core.constant(count, dtype=x.dtype), _core.reduce_sum(y, axis=axes, keepdims=keepdims),
            _core.reduce_sum(y * y, axis=axes, keepdims=keepdims), shift)


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """(mean, variance) from sufficient statistics."""
    divisor = 1.0 / counts
    mean = mean_ss * divisor
    variance = variance_ss * divisor - mean * mean
    return (mean if shift is None else mean + shift), variance


def weighted_moments(x, axes, frequency_weights, keepdims=False, name=None):
    """(mean, variance) with each element weighted."""
    x = _core.convert_to_tensor(x)
    w = _core.cast(_core.convert_to_tensor(frequency_weights), x.dtype)
    axes = [int(a) for a in axes]
    total = _core.reduce_sum(w * _core.ones_like(x), axis=axes, keepdims=True)
    mean = _core.reduce_sum(w * x, axis=axes, keepdims=True) / total
    variance = _core.reduce_sum(w * (x - mean) ** 2, axis=axes, keepdims=True) / total
    if not keepdims:
        mean, variance = _core.squeeze(mean, axes), _core.squeeze(variance, axes)
    return mean, variance


def crelu(features, axis=-1, name=None):
    """concat(relu(x), relu(-x)) along `axis`."""
    x = _core.convert_to_tensor(features)
    return _core.concat([relu(x), relu(-x)], int(axis))


def zero_fraction(value, name=None):
    """The fraction of zeros, as float32."""
    x = _core.convert_to_tensor(value)
    return _core.reduce_mean(_core.cast(_core.equal(x, _core.zeros_like(x)), _core.DType.float32))


def batch_norm_with_global_normalization(input, mean, variance, beta, gamma, variance_epsilon,  # noqa: A002
                                         scale_after_normalization, name=None):
    """batch_normalization with offset beta, and scale gamma only when scale_after_normalization."""
    return batch_normalization(input, mean, variance, beta, gamma if scale_after_normalization else None,
                               variance_epsilon)


def _approx_k(operand, k, reduction_dimension, largest):
    """The exact top k along reduction_dimension (what TF's CPU kernel returns): (values, int32 indices)."""
    import collections
    x = _core.convert_to_tensor(operand)
    rank = len(x._shape_tuple)
    axis = int(reduction_dimension)
    if not -rank <= axis < rank:
        raise ValueError(f"reduction_dimension {reduction_dimension} is out of range for a tensor of rank {rank}")
    axis %= rank
    if x._shape_tuple[axis] is not None and not 0 <= int(k) <= x._shape_tuple[axis]:
        raise ValueError(f"k = {k} must be in [0, {x._shape_tuple[axis]}] (the size of dimension {axis})")
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = [perm.index(d) for d in range(rank)]
    moved = _core.transpose(x, perm) if axis != rank - 1 else x
    values, indices = _core.top_k(moved if largest else _core.neg(moved), int(k))
    if not largest:
        values = _core.neg(values)
    if axis != rank - 1:
        values, indices = _core.transpose(values, back), _core.transpose(indices, back)
    return collections.namedtuple("ApproxTopK", ["values", "indices"])(values, indices)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """The k largest along reduction_dimension (exact, so recall 1), largest first."""
    return _approx_k(operand, k, reduction_dimension, True)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """The k smallest along reduction_dimension (exact, so recall 1), smallest first."""
    return _approx_k(operand, k, reduction_dimension, False)
# Candidate sampling and the sampled losses (python/eagerflow/_candidate_sampling.py).
from ._candidate_sampling import (uniform_candidate_sampler, log_uniform_candidate_sampler,  # noqa: E402
                                  learned_unigram_candidate_sampler, fixed_unigram_candidate_sampler,
                                  all_candidate_sampler, compute_accidental_hits, nce_loss, sampled_softmax_loss)

__all__ += ["uniform_candidate_sampler", "log_uniform_candidate_sampler", "learned_unigram_candidate_sampler",
            "fixed_unigram_candidate_sampler", "all_candidate_sampler", "compute_accidental_hits", "nce_loss",
            "sampled_softmax_loss"]
