"""tf.random's parameterized draws: gamma and poisson (global or op seed), and the stateless
gamma, poisson, binomial and parameterized truncated normal (TF's seed of two ints), over the
C++ ops of src/ops/random_dists_op.cpp. The streams are eagerflow's own, not TF's Philox; the
distributions, shapes, dtypes and seed rules are TF's. gamma differentiates in alpha (the
implicit reparameterization gradient) and beta, as TF's.
"""
from . import _core

_d = _core._random_dists
_float32 = _core.DType.float32


def _dtype(dtype):
    return getattr(_core.DType, dtype) if isinstance(dtype, str) else dtype


def _shape(shape):
    if isinstance(shape, (_core.Tensor, _core.Variable)):
        shape = shape.numpy()
    if hasattr(shape, "tolist"):
        shape = shape.tolist()
    return [int(d) for d in shape] if isinstance(shape, (list, tuple)) else [int(shape)]


def _as(value, dtype, what):
    """TF converts a parameter to the draw's dtype: numbers and lists are converted, a tensor of
    another dtype is a ValueError."""
    if isinstance(value, (_core.Tensor, _core.Variable)) and value.dtype != dtype:
        raise ValueError(f"{what}: Tensor conversion requested dtype {dtype} for Tensor with dtype {value.dtype}")
    return value


def _check_float(dtype, op):
    if _dtype(dtype) not in (_core.DType.float16, _core.DType.float32, _core.DType.float64, _core.DType.bfloat16):
        raise TypeError(f"{op}: dtype must be floating, got {dtype}")


def _stateless_seed(seed):
    from .random import _seed64
    return _seed64(seed)


def _op_seed(seed):
    return None if seed is None else int(seed)


def gamma(shape, alpha, beta=None, dtype=_float32, seed=None, name=None):
    """tf.random.gamma: Gamma(alpha, rate beta) draws of shape `shape` + broadcast(alpha, beta).shape."""
    dtype = _dtype(dtype)
    _check_float(dtype, "random.gamma")
    alpha, beta = _as(alpha, dtype, "alpha"), None if beta is None else _as(beta, dtype, "beta")
    return _d.gamma(_shape(shape), alpha, beta, dtype, _op_seed(seed))


def stateless_gamma(shape, seed, alpha, beta=None, dtype=_float32, name=None):
    """tf.random.stateless_gamma: `shape` ends with broadcast(alpha, beta).shape."""
    dtype = _dtype(dtype)
    _check_float(dtype, "random.stateless_gamma")
    alpha, beta = _as(alpha, dtype, "alpha"), None if beta is None else _as(beta, dtype, "beta")
    return _d.stateless_gamma(_shape(shape), _stateless_seed(seed), alpha, beta, dtype)


def poisson(shape, lam, dtype=_float32, seed=None, name=None):
    """tf.random.poisson: Poisson(lam) draws of shape `shape` + lam.shape, as `dtype`."""
    return _d.poisson(_shape(shape), lam, _dtype(dtype), _op_seed(seed))


def stateless_poisson(shape, seed, lam, dtype=_core.DType.int32, name=None):
    """tf.random.stateless_poisson: `shape` ends with lam.shape."""
    return _d.stateless_poisson(_shape(shape), _stateless_seed(seed), lam, _dtype(dtype))


def stateless_binomial(shape, seed, counts, probs, output_dtype=_core.DType.int32, name=None):
    """tf.random.stateless_binomial: Binomial(counts, probs) draws; `shape` ends with their
    broadcast shape."""
    return _d.stateless_binomial(_shape(shape), _stateless_seed(seed), counts, probs, _dtype(output_dtype))


def stateless_parameterized_truncated_normal(shape, seed, means=0.0, stddevs=1.0, minvals=-2.0, maxvals=2.0, name=None):
    """tf.random.stateless_parameterized_truncated_normal: Normal(means, stddevs) conditioned on
    [minvals, maxvals]; stddev <= 0 or minval >= maxval is an InvalidArgumentError."""
    return _d.stateless_parameterized_truncated_normal(_shape(shape), _stateless_seed(seed), means, stddevs, minvals, maxvals)
