"""ef.keras.random: Keras 3's random functions and SeedGenerator.

Keras' seed rules: seed=None draws fresh numbers (the global generator; ef.keras.utils /
ef.random.set_seed make a program repeat), an int seed gives the same numbers on every call
(a stateless draw, also inside ef.function), and a SeedGenerator advances its state on every
draw, in eager code and in traces alike. The numbers are eagerflow's stream, not Keras' own.
"""
import numpy as _np

import eagerflow as _ef
from .. import _core
from .. import cast as _cast
from ..dtypes import as_dtype
from .ops._dtypes import standardize_dtype, tensor


class SeedGenerator(_core.random.SeedGenerator):
    """keras.random.SeedGenerator(seed=None): pass it as `seed=` to draw a new set each time."""

    def __init__(self, seed=None, name=None, **kwargs):
        if seed is None:
            super().__init__()
        else:
            if not isinstance(seed, (int, _np.integer)):
                raise ValueError(f"Argument `seed` must be an integer. Received: seed={seed}")
            super().__init__(int(seed))
        self.name = name or "seed_generator"
        self._initial_seed = seed

    def next(self, ordered=True):
        """The next seed state (two int32s), advancing the generator."""
        return _ef.random.uniform([2], 0, 2 ** 31 - 1, dtype=_ef.int32, seed=self)

    def get_config(self):
        return {"seed": self._initial_seed}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _check_seed(seed):
    if seed is not None and not isinstance(seed, (int, _np.integer, _core.random.SeedGenerator)):
        raise ValueError(f"Argument `seed` must be either an integer or an instance of `SeedGenerator`. "
                         f"Received: seed={seed} (of type {type(seed)})")


def _shape(shape):
    if isinstance(shape, int):
        return [shape]
    return [int(d) if not isinstance(d, _ef.Tensor) else d for d in shape]


def _dt(dtype):
    dt = standardize_dtype(dtype)
    return as_dtype(dt)


def _uniform(shape, minval, maxval, dtype, seed):
    if isinstance(seed, (int, _np.integer)):
        return _ef.random.stateless_uniform(_shape(shape), seed=[int(seed), 0], minval=minval, maxval=maxval, dtype=dtype)
    return _ef.random.uniform(_shape(shape), minval=minval, maxval=maxval, dtype=dtype, seed=seed)


def _normal(shape, dtype, seed):
    if isinstance(seed, (int, _np.integer)):
        return _ef.random.stateless_normal(_shape(shape), seed=[int(seed), 0], dtype=dtype)
    return _ef.random.normal(_shape(shape), dtype=dtype, seed=seed)


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    _check_seed(seed)
    dt = _dt(dtype)
    return _normal(shape, dt, seed) * _cast(stddev, dt) + _cast(mean, dt)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    _check_seed(seed)
    dt = _dt(dtype)
    if not dt.is_floating:
        raise ValueError(f"`keras.random.uniform` requires a floating point `dtype`. Received: dtype={dtype}")
    return _uniform(shape, _cast(minval, dt), _cast(maxval, dt), dt, seed)


def randint(shape, minval, maxval, dtype="int32", seed=None):
    _check_seed(seed)
    dt = _dt(dtype)
    if not dt.is_integer:
        raise ValueError(f"`keras.random.randint` requires an integer `dtype`. Received: dtype={dtype}")
    draw_dt = _ef.int64 if dt in (_ef.int64, _ef.uint32, _ef.uint64) else _ef.int32
    return _cast(_uniform(shape, int(minval), int(maxval), draw_dt, seed), dt)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    _check_seed(seed)
    dt = _dt(dtype)
    if isinstance(seed, (int, _np.integer)):
        z = _ef.random.stateless_truncated_normal(_shape(shape), seed=[int(seed), 0], dtype=dt)
    else:
        z = _ef.random.truncated_normal(_shape(shape), dtype=dt, seed=seed)
    return z * _cast(stddev, dt) + _cast(mean, dt)


def dropout(inputs, rate, noise_shape=None, seed=None):
    _check_seed(seed)
    x = tensor(inputs)
    if not 0 <= rate < 1:
        raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                         f"Received: rate={rate}")
    if noise_shape is None:
        ns = _ef.shape(x) if None in x.shape else list(x.shape)
    else:
        ns = [x.shape[i] if d is None else int(d) for i, d in enumerate(noise_shape)]
    keep = _ef.greater_equal(_uniform(ns, 0.0, 1.0, _ef.float32, seed), _cast(rate, _ef.float32))
    scale = _cast(1.0 / (1.0 - rate), x.dtype)
    return _ef.where(keep, x * scale, _ef.zeros_like(x))


def shuffle(x, axis=0, seed=None):
    _check_seed(seed)
    t = tensor(x)
    n = t.shape[axis] if t.shape[axis] is not None else _ef.shape(t)[axis]
    keys = _uniform([n], 0.0, 1.0, _ef.float32, seed)
    return _ef.gather(t, _ef.argsort(keys), axis=axis)


def categorical(logits, num_samples, dtype="int32", seed=None):
    _check_seed(seed)
    lg = tensor(logits)
    if lg.shape.rank != 2:
        raise ValueError(f"`logits` should be a 2-dimensional tensor with shape [batch_size, num_classes]. "
                         f"Received: logits={lg}")
    lg = _cast(lg, _ef.float32)
    # Gumbel-max: argmax(logits + Gumbel noise) is a draw from softmax(logits)
    shape = [lg.shape[0] if lg.shape[0] is not None else _ef.shape(lg)[0], int(num_samples), lg.shape[1]]
    u = _uniform(shape, 1e-20, 1.0, _ef.float32, seed)
    g = -_ef.math.log(-_ef.math.log(u))
    return _cast(_ef.argmax(_ef.expand_dims(lg, 1) + g, axis=-1), _dt(dtype))


def _gamma_draw(shape, alpha, dt, seed):
    if isinstance(seed, (int, _np.integer)):
        return _ef.random.stateless_gamma(_shape(shape), seed=[int(seed), 0], alpha=alpha, dtype=dt)
    if seed is None:
        return _ef.random.gamma(_shape(shape), alpha, dtype=dt)
    # a SeedGenerator: Marsaglia and Tsang's method from the generator's normals and uniforms, a few
    # rounds at once (each accepts with probability > 0.95), so it needs no data-dependent loop
    a = _ef.broadcast_to(_cast(alpha, _ef.float32), _shape(shape))
    boost = _ef.less(a, 1.0)
    a1 = _ef.where(boost, a + 1.0, a)
    d = a1 - 1.0 / 3.0
    c = 1.0 / _ef.sqrt(9.0 * d)
    rounds = 8
    z = _ef.random.normal([rounds] + _shape(shape), seed=seed)
    u = _ef.random.uniform([rounds] + _shape(shape), minval=1e-12, maxval=1.0, seed=seed)
    v = _ef.pow(1.0 + c * z, 3.0)
    ok = _ef.logical_and(_ef.greater(v, 0.0),
                         _ef.less(_ef.math.log(u), 0.5 * z * z + d - d * v + d * _ef.math.log(_ef.maximum(v, 1e-30))))
    first = _ef.argmax(_cast(ok, _ef.int32), axis=0)
    vv = _ef.squeeze(_ef.gather(_ef.transpose(v, list(range(1, len(_shape(shape)) + 1)) + [0]),
                                _ef.expand_dims(first, -1), batch_dims=len(_shape(shape))), [-1]) \
        if _shape(shape) else v[first]
    out = d * vv
    ub = _ef.random.uniform(_shape(shape), minval=1e-12, maxval=1.0, seed=seed)
    out = _ef.where(boost, out * _ef.pow(ub, 1.0 / a), out)
    return _cast(out, dt)


def gamma(shape, alpha, dtype=None, seed=None):
    _check_seed(seed)
    return _gamma_draw(shape, alpha, _dt(dtype), seed)


def beta(shape, alpha, beta, dtype=None, seed=None):  # noqa: A002 - Keras' name
    _check_seed(seed)
    dt = _dt(dtype)
    s1 = seed if not isinstance(seed, (int, _np.integer)) else int(seed)
    s2 = seed if not isinstance(seed, (int, _np.integer)) else int(seed) + 1
    ga = _gamma_draw(shape, alpha, _ef.float32, s1)
    gb = _gamma_draw(shape, beta, _ef.float32, s2)
    return _cast(ga / (ga + gb), dt)


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    _check_seed(seed)
    dt = _dt(dtype)
    c = tensor(counts, "float32")
    p = tensor(probabilities, "float32")
    if isinstance(seed, (int, _np.integer)):
        out = _ef.random.stateless_binomial(_shape(shape), seed=[int(seed), 0], counts=_ef.broadcast_to(c, _shape(shape)),
                                            probs=_ef.broadcast_to(p, _shape(shape)), output_dtype=_ef.float32)
        return _cast(out, dt)
    # the sum of `counts` Bernoulli draws; counts must be known when the op is built
    n = int(_np.max(c.numpy())) if not c.is_symbolic else None
    if n is None:
        raise ValueError("binomial: `counts` must have a value (not a symbolic tensor) to draw with a SeedGenerator "
                         "or no seed")
    u = _uniform([n] + _shape(shape), 0.0, 1.0, _ef.float32, seed)
    idx = _ef.reshape(_ef.range(n, dtype=_ef.float32), [n] + [1] * len(_shape(shape)))
    hits = _ef.logical_and(_ef.less(u, p), _ef.less(idx, c))
    return _cast(_ef.reduce_sum(_cast(hits, _ef.float32), axis=0), dt)


__all__ = ["SeedGenerator", "beta", "binomial", "categorical", "dropout", "gamma", "normal", "randint", "shuffle",
           "truncated_normal", "uniform"]
