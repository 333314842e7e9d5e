"""ef.math: TensorFlow's tf.math with TF's argument names, defaults and result dtypes, over the
op table's ops (so each traces, differentiates and vmaps as they do). A name is here only when
it behaves as TF's; the rest of tf.math is issue 31's work (docs/tf_coverage.md)."""
from . import _core

__all__ = [
    "abs", "add", "add_n", "argmax", "ceil", "cos", "cumprod", "cumsum", "divide", "equal", "erf",
    "exp", "floor", "greater", "greater_equal", "less", "less_equal", "log", "log_softmax", "logical_and",
    "logical_not", "logical_or", "maximum", "minimum", "multiply", "negative", "not_equal", "pow",
    "reduce_all", "reduce_any", "reduce_max", "reduce_mean", "reduce_min", "reduce_sum", "round", "rsqrt",
    "sigmoid", "sin", "softmax", "sqrt", "square", "subtract", "tanh", "top_k", "truediv",
    "is_nan", "is_inf", "is_finite", "sign", "reciprocal", "log1p", "softplus", "log_sigmoid",
    "squared_difference", "divide_no_nan", "multiply_no_nan", "xlogy", "logical_xor", "reduce_prod",
    "reduce_logsumexp", "reduce_variance", "reduce_std", "reduce_euclidean_norm", "count_nonzero", "l2_normalize",
]
# Also here, as in TF's top level: linspace, eye, norm, clip_by_norm, clip_by_global_norm, meshgrid.


def _unary(core, tf_name):
    def op(x, name=None):
        return core(x)
    op.__name__ = op.__qualname__ = tf_name
    op.__doc__ = f"tf.math.{tf_name}(x, name=None)."
    return op


def _binary(core, tf_name):
    def op(x, y, name=None):
        return core(x, y)
    op.__name__ = op.__qualname__ = tf_name
    op.__doc__ = f"tf.math.{tf_name}(x, y, name=None)."
    return op


def _reduction(core, tf_name):
    def op(input_tensor, axis=None, keepdims=False, name=None):
        return core(input_tensor, axis, keepdims)
    op.__name__ = op.__qualname__ = tf_name
    op.__doc__ = f"tf.math.{tf_name}(input_tensor, axis=None, keepdims=False, name=None): every axis when axis is None."
    return op


for _n in ("abs", "ceil", "cos", "erf", "exp", "floor", "log", "logical_not", "rsqrt", "sigmoid", "sin", "sqrt",
           "square", "tanh", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "erfc"):
    globals()[_n] = _unary(getattr(_core, _n), _n)
negative = _unary(_core.neg, "negative")
round = _unary(_core.round, "round")  # noqa: A001 - TF's name; half to even, as TF
for _n in ("add", "equal", "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or", "maximum",
           "minimum", "not_equal", "pow"):
    globals()[_n] = _binary(getattr(_core, _n), _n)
subtract = _binary(_core.sub, "subtract")
multiply = _binary(_core.mul, "multiply")
divide = _binary(_core.divide, "divide")  # integers divide as float64, as TF's truediv
truediv = _binary(_core.divide, "truediv")
for _n in ("reduce_all", "reduce_any", "reduce_max", "reduce_mean", "reduce_min", "reduce_sum"):
    globals()[_n] = _reduction(getattr(_core, _n), _n)


def add_n(inputs, name=None):
    """tf.math.add_n: the elementwise sum of a non-empty list of tensors of one shape and dtype."""
    inputs = [_core.convert_to_tensor(x) for x in inputs]
    if not inputs:
        raise ValueError("add_n: inputs must be a non-empty list of tensors")
    for x in inputs[1:]:
        if tuple(x._shape_tuple) != tuple(inputs[0]._shape_tuple) or x.dtype != inputs[0].dtype:
            raise ValueError(f"add_n: inputs must have one shape and dtype, got {inputs[0]!r} and {x!r}")
    total = inputs[0]
    for x in inputs[1:]:
        total = _core.add(total, x)
    return total


def _arg_reduction(core, tf_name):
    def op(input, axis=None, output_type=_core.DType.int64, name=None):  # noqa: A002 - TF's name
        x = _core.convert_to_tensor(input)
        result = core(x, 0 if axis is None else int(axis))  # TF: axis None means 0
        return result if output_type == result.dtype else _core.cast(result, output_type)
    op.__name__ = op.__qualname__ = tf_name
    op.__doc__ = f"tf.math.{tf_name}(input, axis=None, output_type=tf.int64, name=None): axis None is 0."
    return op


argmax = _arg_reduction(_core.argmax, "argmax")


def _cumulative(core, tf_name):
    def op(x, axis=0, exclusive=False, reverse=False, name=None):
        return core(x, int(axis), exclusive, reverse)
    op.__name__ = op.__qualname__ = tf_name
    op.__doc__ = f"tf.math.{tf_name}(x, axis=0, exclusive=False, reverse=False, name=None)."
    return op


cumsum = _cumulative(_core.cumsum, "cumsum")
cumprod = _cumulative(_core.cumprod, "cumprod")


def softmax(logits, axis=None, name=None):
    """tf.math.softmax over `axis` (the last when None)."""
    return _core.softmax(logits, -1 if axis is None else axis)


def log_softmax(logits, axis=None, name=None):
    """tf.math.log_softmax over `axis` (the last when None)."""
    return _core.log_softmax(logits, -1 if axis is None else axis)


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - TF's names
    from . import top_k as _top_k
    return _top_k(input, k, sorted, name)


# Compositions of the op table's ops, defined once in C++ (eagerflow/ops/math.h).
for _n in ("is_nan", "is_inf", "is_finite", "sign", "reciprocal", "log1p", "softplus", "log_sigmoid", "lgamma", "digamma",
           "lbeta", "erfinv", "ndtri", "erfcinv"):
    globals()[_n] = _unary(getattr(_core._math, _n), _n)
for _n in ("squared_difference", "divide_no_nan", "multiply_no_nan", "xlogy", "logical_xor"):
    globals()[_n] = _binary(getattr(_core._math, _n), _n)
for _n in ("reduce_prod", "reduce_logsumexp", "reduce_variance", "reduce_std", "reduce_euclidean_norm"):
    globals()[_n] = _reduction(getattr(_core._math, _n), _n)


def count_nonzero(input, axis=None, keepdims=None, dtype=_core.DType.int64, name=None):  # noqa: A002 - TF's names
    """tf.math.count_nonzero: how many elements are nonzero (true, NaN), as `dtype` (int64)."""
    result = _core._math.count_nonzero(input, axis, bool(keepdims))
    return result if dtype == result.dtype else _core.cast(result, dtype)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """tf.math.l2_normalize: x / sqrt(max(sum(x**2, axis), epsilon)) (every axis when None)."""
    return _core._math.l2_normalize(x, dim if axis is None else axis, epsilon)


def _ord_text(ord):  # noqa: A002 - TF's name
    import math as _pymath
    if isinstance(ord, str):
        return ord
    if ord == _pymath.inf:
        return "inf"
    return repr(float(ord)) if not float(ord).is_integer() else str(int(ord))


def _convert_list(values):
    return [None if v is None else _core.convert_to_tensor(v) for v in values]


def linspace(start, stop, num, name=None, axis=0):
    """tf.linspace: `num` evenly spaced values from start to stop, both included (scalars)."""
    if axis != 0:
        raise NotImplementedError("linspace: only axis=0 (scalar start and stop) is supported")
    return _core._math.linspace(start, stop, int(num))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_core.DType.float32, name=None):
    """tf.eye: an identity matrix [num_rows, num_columns], repeated over batch_shape."""
    m = _core._math.eye(int(num_rows), -1 if num_columns is None else int(num_columns), dtype)
    if batch_shape:
        batch = [int(d) for d in batch_shape]
        m = _core.broadcast_to(m, batch + list(m._shape_tuple))
    return m


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002 - TF's names
    """tf.norm: vector norms (euclidean/fro, 1, inf, p > 0) and matrix norms (axis of two: fro, 1, inf)."""
    if axis is not None and not isinstance(axis, int):
        axis = [int(a) for a in axis]
    return _core._math.norm(tensor, _ord_text(ord), axis, bool(keepdims))


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """tf.clip_by_norm: t * clip_norm / max(l2norm(t, axes), clip_norm)."""
    return _core._math.clip_by_norm(t, float(clip_norm), axes)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """tf.clip_by_global_norm: (list clipped together, the global norm); None entries stay None."""
    if use_norm is not None:
        raise NotImplementedError("clip_by_global_norm: use_norm is not supported")
    if isinstance(t_list, (_core.Tensor,)) or not hasattr(t_list, "__iter__"):
        raise TypeError("clip_by_global_norm: t_list must be a sequence of tensors")
    clipped, global_norm = _core._math.clip_by_global_norm(_convert_list(t_list), float(clip_norm))
    return clipped, global_norm


def meshgrid(*args, **kwargs):
    """tf.meshgrid(*args, indexing='xy'): coordinate grids of 1-D tensors."""
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword arguments {sorted(kwargs)}")
    return _core._math.meshgrid([_core.convert_to_tensor(a) for a in args], indexing)


def _num_segments(n):
    if isinstance(n, (_core.Tensor, _core.Variable)):
        n = n.numpy()
    return int(n)


def _segment_fns(kind):
    def unsorted(data, segment_ids, num_segments, name=None):
        return _core._math.unsorted_segment_reduce(kind, data, segment_ids, _num_segments(num_segments))
    unsorted.__name__ = "unsorted_segment_" + kind
    unsorted.__doc__ = f"tf.math.unsorted_segment_{kind}: data's rows reduced ({kind}) per segment id."

    def ordered(data, segment_ids, name=None):
        return _core._math.segment_reduce(kind, data, segment_ids)
    ordered.__name__ = "segment_" + kind
    ordered.__doc__ = f"tf.math.segment_{kind}: sorted 1-D segment ids; empty segments hold 0."
    return unsorted, ordered


unsorted_segment_sum, segment_sum = _segment_fns("sum")
unsorted_segment_mean, segment_mean = _segment_fns("mean")
unsorted_segment_max, segment_max = _segment_fns("max")
unsorted_segment_min, segment_min = _segment_fns("min")
unsorted_segment_prod, segment_prod = _segment_fns("prod")
unsorted_segment_sqrt_n, segment_sqrt_n = _segment_fns("sqrt_n")
del segment_sqrt_n  # not in tf.math (tf.sparse has it)


def argmin(input, axis=None, output_type=_core.DType.int64, name=None):  # noqa: A002
    """tf.math.argmin: the index of the smallest value along `axis` (0 when None)."""
    x = _core.convert_to_tensor(input)
    a = 0 if axis is None else int(axis)
    if x.dtype.is_integer and x.dtype not in (_core.DType.int64, _core.DType.uint64):
        x = _core.cast(x, _core.DType.int64)  # negated there: -x would wrap for uint8 and int8's -128
    return argmax(-x if x.dtype != _core.DType.bool else _core.logical_not(x), axis=a, output_type=output_type)


def floordiv(x, y, name=None):
    """tf.math.floordiv: floor(x / y), in x's dtype (integers as Python's //)."""
    a, b = _core.convert_to_tensor(x), y
    q = _core.floor(_core.cast(a, _core.DType.float64) / _core.cast(_core.convert_to_tensor(b, dtype=a.dtype), _core.DType.float64))
    return _core.cast(q, a.dtype)


def floormod(x, y, name=None):
    """tf.math.floormod: x - floordiv(x, y) * y (the sign of y, as Python's %)."""
    a = _core.convert_to_tensor(x)
    b = _core.convert_to_tensor(y, dtype=a.dtype)
    return a - floordiv(a, b) * b


mod = floormod


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_core.DType.int32, name=None, axis=None,
             binary_output=False):
    """tf.math.bincount of non-negative integers (1-D or flattened): counts (or summed weights)."""
    if axis not in (None, 0, -1):
        raise NotImplementedError("bincount: only axis=None is supported")
    values = _core.reshape(_core.convert_to_tensor(arr), [-1])
    top = int(values.numpy().max()) + 1 if values.shape[0] else 0
    size = max(top, int(minlength or 0))
    if maxlength is not None:
        size = min(size, int(maxlength))
        values = _core.where(values < size, values, _core.full_like(values, -1))
    out_dtype = dtype if weights is None else _core.convert_to_tensor(weights).dtype
    w = _core.ones_like(_core.cast(values, out_dtype)) if weights is None else _core.reshape(_core.convert_to_tensor(weights), [-1])
    counts = _core._math.unsorted_segment_reduce("sum", w, values, size)
    if binary_output:
        counts = _core.cast(counts > 0, out_dtype)
    return counts


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=_core.DType.int32, name=None):
    """tf.math.confusion_matrix: [num_classes, num_classes] counts, rows the labels."""
    lab = _core.cast(_core.reshape(_core.convert_to_tensor(labels), [-1]), _core.DType.int64)
    pred = _core.cast(_core.reshape(_core.convert_to_tensor(predictions), [-1]), _core.DType.int64)
    if num_classes is None:
        num_classes = int(max(lab.numpy().max(initial=-1), pred.numpy().max(initial=-1))) + 1
    n = int(num_classes)
    w = _core.ones_like(_core.cast(lab, dtype)) if weights is None else _core.cast(_core.reshape(_core.convert_to_tensor(weights), [-1]), dtype)
    flat = _core._math.unsorted_segment_reduce("sum", w, lab * n + pred, n * n)
    return _core.reshape(flat, [n, n])


def softsign(features, name=None):
    """x / (1 + |x|)."""
    x = _core.convert_to_tensor(features)
    return x / (1.0 + _core.abs(x))


def atan2(y, x, name=None):
    """tf.math.atan2: the angle of (x, y) in [-pi, pi], by quadrant from atan(y / x)."""
    y = _core.convert_to_tensor(y)
    x = _core.convert_to_tensor(x, dtype=y.dtype)
    if y.dtype not in (_core.DType.float32, _core.DType.float64):
        raise TypeError(f"atan2 takes floating tensors, got {y.dtype}")
    zero = _core.zeros_like(x)
    safe_x = _core.where(_core.equal(x, zero), _core.ones_like(x), x)
    base = _core.atan(y / safe_x)
    pi = 3.141592653589793
    negative_y = y < zero
    shifted = _core.where(negative_y, base - pi, base + pi)
    off_axis = _core.where(x < zero, shifted, base)
    # x == 0: +-pi/2 by y's sign, 0 at the origin (as TF's).
    on_axis = _core.where(y > zero, _core.full_like(y, pi / 2), _core.where(negative_y, _core.full_like(y, -pi / 2), zero))
    return _core.where(_core.equal(x, zero), on_axis, off_axis)


def xdivy(x, y, name=None):
    """x / y, 0 where x is 0."""
    x = _core.convert_to_tensor(x)
    y = _core.convert_to_tensor(y, dtype=x.dtype)
    zero = _core.equal(x, _core.zeros_like(x))
    return _core.where(zero, _core.zeros_like(x), x / _core.where(zero, _core.ones_like(y), y))


def xlog1py(x, y, name=None):
    """x * log1p(y), 0 where x is 0."""
    x = _core.convert_to_tensor(x)
    y = _core.convert_to_tensor(y, dtype=x.dtype)
    zero = _core.equal(x, _core.zeros_like(x))
    return _core.where(zero, _core.zeros_like(x), x * log1p(_core.where(zero, _core.zeros_like(y), y)))


def reciprocal_no_nan(x, name=None):
    """1 / x, 0 where x is 0."""
    return divide_no_nan(_core.ones_like(_core.convert_to_tensor(x)), x)


def scalar_mul(scalar, x, name=None):
    return _core.convert_to_tensor(x) * scalar


def rint(x, name=None):
    """Round half to even (as round)."""
    return _core.round(x)


def polyval(coeffs, x, name=None):
    """coeffs[0] * x^(n-1) + ... + coeffs[n-1], by Horner's rule."""
    x = _core.convert_to_tensor(x)
    if not coeffs:
        return _core.zeros_like(x)
    result = _core.convert_to_tensor(coeffs[0], dtype=x.dtype) * _core.ones_like(x)
    for c in coeffs[1:]:
        result = result * x + c
    return result


def is_non_decreasing(x, name=None):
    v = _core.reshape(_core.convert_to_tensor(x), [-1])
    return _core.reduce_all(v[1:] >= v[:-1]) if v.shape[0] and v.shape[0] > 1 else _core.constant(True)


def is_strictly_increasing(x, name=None):
    v = _core.reshape(_core.convert_to_tensor(x), [-1])
    return _core.reduce_all(v[1:] > v[:-1]) if v.shape[0] and v.shape[0] > 1 else _core.constant(True)


def invert_permutation(x, name=None):
    """y[x[i]] = i."""
    p = _core.convert_to_tensor(x)
    n = p.shape[0]
    return _core.scatter_nd(_core.expand_dims(p, -1), _core.cast(_core.range(n), p.dtype), [n])


def in_top_k(targets, predictions, k, name=None):
    from . import nn as _nn
    return _nn.in_top_k(targets, predictions, k)


def zero_fraction(value, name=None):
    from . import nn as _nn
    return _nn.zero_fraction(value)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """log(cumsum(exp(x))) computed stably (shifted by the max along the axis)."""
    x = _core.convert_to_tensor(x)
    m = _core.stop_gradient(_core.reduce_max(x, axis=axis, keepdims=True))
    return _core.log(cumsum(_core.exp(x - m), axis=axis, exclusive=exclusive, reverse=reverse)) + m


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    return add_n(inputs)


def real(input, name=None):  # noqa: A002
    """tf.math.real: the real part (float32 of complex64, float64 of complex128); a real tensor
    is its own real part."""
    return _core._complex.real(input)


def imag(input, name=None):  # noqa: A002
    """tf.math.imag: the imaginary part; zeros for a real tensor."""
    return _core._complex.imag(input)


def conj(x, name=None):
    """tf.math.conj: the complex conjugate; a real tensor as it is."""
    return _core._complex.conj(x)


def angle(input, name=None):  # noqa: A002
    """tf.math.angle: atan2(imag, real); for a real number 0, or pi when it is negative."""
    return _core._complex.angle(input)
