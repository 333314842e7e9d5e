"""ef.random, as tf.random: draws with TF's names, arguments and seed rules, over the random ops.

Seeds as TF defines them: with no seeds, fresh numbers everywhere; ef.random.set_seed(s) makes a
program repeat; an op's seed gives that op's own sequence (the k-th call draws the k-th set). The
stateless_* draws take TF's seed of two integers (or one) and give the same numbers on every
call. Generator is tf.random.Generator over a seed with its own draw counter (keras'
SeedGenerator). The numbers are eagerflow's own stream, not TF's Philox: the same program
repeats under eagerflow, but draws differ from TF's.
"""
import math as _math

import numpy as _np

from . import _core

_r = _core.random
SeedGenerator = _r.SeedGenerator
set_seed = _r.set_seed
randint = _r.randint
permutation = _r.permutation
uniform_like, normal_like = _r.uniform_like, _r.normal_like

__all__ = ["Algorithm", "Generator", "SeedGenerator", "categorical", "create_rng_state", "fold_in", "get_global_generator",
           "normal", "set_global_generator", "set_seed", "shuffle", "split", "stateless_categorical", "stateless_normal",
           "stateless_truncated_normal", "stateless_uniform", "truncated_normal", "uniform"]

_MASK = (1 << 64) - 1


class Algorithm:
    """tf.random.Algorithm's names; eagerflow has one stream, whichever is asked for."""
    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def _dtype(dtype):
    return getattr(_core.DType, dtype) if isinstance(dtype, str) else dtype


def _is_int_dtype(dtype):
    return _dtype(dtype) in (_core.DType.int32, _core.DType.int64)


def _seed64(seed):
    """TF's stateless seed (a pair of integers, as a list, array or tensor; or one int) as one
    64-bit seed."""
    if isinstance(seed, (_core.Tensor, _core.Variable)):
        seed = seed.numpy()
    values = _np.asarray(seed).reshape(-1)
    if values.size not in (1, 2) or not _np.issubdtype(values.dtype, _np.integer):
        raise ValueError(f"a stateless seed is a shape [2] integer tensor (or one int), got {seed!r}")
    a = int(values[0]) & _MASK
    b = int(values[1]) & _MASK if values.size == 2 else 0
    return (a * 0x9E3779B97F4A7C15 ^ b) & _MASK


def _float(value, what):
    if isinstance(value, (_core.Tensor, _core.Variable)):
        value = value.numpy()
    try:
        return float(value)
    except TypeError:  # TF's convert_to_tensor refuses such a value (a dtype, None, ...) so
        raise ValueError(f"Attempt to convert a value ({value!r}) with an unsupported type ({type(value)}) "
                         f"to a Tensor (the `{what}` of a random draw).") from None


def _int_range(shape, minval, maxval, dtype, draw_unit):
    """Integers uniform in [minval, maxval) from float64 unit draws (exact below 2**53)."""
    if maxval is None:
        raise ValueError(f"Must specify maxval for integer dtype {_dtype(dtype)}")
    lo, hi = int(_float(minval, "minval")), int(_float(maxval, "maxval"))
    if not lo < hi:
        raise ValueError(f"random.uniform: needs minval < maxval, got {lo} and {hi}")
    u = draw_unit()
    return _core.cast(_core.floor(u * float(hi - lo)) + float(lo), dtype)


_UNIFORM_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")


def uniform(shape, minval=0, maxval=None, dtype=_core.DType.float32, seed=None, name=None):
    """tf.random.uniform: floats in [minval, maxval) (maxval 1 when None); integers need maxval."""
    if _dtype(dtype).name not in _UNIFORM_DTYPES:  # TF's ValueError (uint8 draws are not TF's)
        raise ValueError(f"Argument `dtype` got invalid value {_dtype(dtype)}. Accepted dtypes are "
                         f"(tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int32, tf.int64).")
    if _is_int_dtype(dtype):
        return _int_range(shape, minval, maxval, dtype, lambda: _r.uniform(shape, 0.0, 1.0, _core.DType.float64, seed))
    hi = 1.0 if maxval is None else _float(maxval, "maxval")
    return _r.uniform(shape, _float(minval, "minval"), hi, dtype, seed)


def normal(shape, mean=0.0, stddev=1.0, dtype=_core.DType.float32, seed=None, name=None):
    """tf.random.normal."""
    return _r.normal(shape, _float(mean, "mean"), _float(stddev, "stddev"), dtype, seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_core.DType.float32, seed=None, name=None):
    """tf.random.truncated_normal: normal draws, those beyond two standard deviations drawn again."""
    return _r.truncated_normal(shape, _float(mean, "mean"), _float(stddev, "stddev"), dtype, seed)


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=_core.DType.float32, name=None, alg="auto_select"):
    """tf.random.stateless_uniform: the same numbers for the same seed (a pair of ints)."""
    s = _seed64(seed)
    if _is_int_dtype(dtype):
        return _int_range(shape, minval, maxval, dtype, lambda: _r.stateless_uniform(shape, s, 0.0, 1.0, _core.DType.float64))
    hi = 1.0 if maxval is None else _float(maxval, "maxval")
    return _r.stateless_uniform(shape, s, _float(minval, "minval"), hi, dtype)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_core.DType.float32, name=None, alg="auto_select"):
    """tf.random.stateless_normal."""
    return _r.stateless_normal(shape, _seed64(seed), _float(mean, "mean"), _float(stddev, "stddev"), dtype)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_core.DType.float32, name=None, alg="auto_select"):
    """tf.random.stateless_truncated_normal."""
    return _r.stateless_truncated_normal(shape, _seed64(seed), _float(mean, "mean"), _float(stddev, "stddev"), dtype)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """tf.random.categorical: [batch, num_samples] class indices drawn from rows of logits."""
    return _r.categorical(logits, int(num_samples), _core.DType.int64 if dtype is None else dtype, seed)


def stateless_categorical(logits, num_samples, seed, dtype=_core.DType.int64, name=None):
    """tf.random.stateless_categorical."""
    return _r.stateless_categorical(logits, int(num_samples), _seed64(seed), dtype)


def shuffle(value, seed=None, name=None):
    """tf.random.shuffle: value's slices along its first axis in a random order."""
    x = _core.convert_to_tensor(value)
    if len(x._shape_tuple) == 0:
        raise ValueError("random.shuffle: value must have rank >= 1, got a scalar")
    n = x._shape_tuple[0]
    if n is None:
        raise NotImplementedError("random.shuffle: the first dim must be known while tracing")
    return _core.gather(x, _r.permutation(int(n), seed=seed), 0)


def _mix(*values):
    h = 0x243F6A8885A308D3
    for v in values:
        h = (h ^ (int(v) & _MASK)) * 0x9E3779B97F4A7C15 & _MASK
        h ^= h >> 31
    return h


def _as_seed_tensor(pairs):
    return _core.constant(_np.asarray(pairs, dtype=_np.uint64).astype(_np.int64))


def split(seed, num=2, alg="auto_select"):
    """tf.random.split: `num` new stateless seeds ([num, 2] int64) from one."""
    s = _seed64(seed)
    return _as_seed_tensor([[_mix(s, i, 0), _mix(s, i, 1)] for i in range(int(num))])


def fold_in(seed, data, alg="auto_select"):
    """tf.random.fold_in: a new stateless seed ([2] int64) from a seed and an integer."""
    s = _seed64(seed)
    d = int(_float(data, "data"))
    return _as_seed_tensor([_mix(s, d, 2), _mix(s, d, 3)])


def create_rng_state(seed, alg):
    """tf.random.create_rng_state: the state a Generator of this seed starts from ([seed, draws])."""
    return _np.array([int(seed) & _MASK, 0], dtype=_np.uint64).astype(_np.int64)


class Generator:
    """tf.random.Generator: a seed and its own draw counter. Draws through a generator continue
    its sequence, eagerly and inside ef.function (the traced draw reads the counter on every
    call); split() makes independent generators."""

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            seed, draws = copy_from._gen.seed, copy_from._gen.draws
        elif state is not None:
            values = _np.asarray(state.numpy() if hasattr(state, "numpy") else state).reshape(-1)
            seed, draws = int(values[0]) & _MASK, int(values[1]) if values.size > 1 else 0
        else:
            raise ValueError("Generator: give copy_from or state, or use Generator.from_seed / from_non_deterministic_state")
        self._gen = SeedGenerator(seed)
        self._gen.draws = draws

    @classmethod
    def from_seed(cls, seed, alg=None):
        """A generator whose draws depend only on `seed`."""
        if isinstance(seed, (_core.Tensor, _core.Variable)):
            seed = int(seed.numpy())
        return cls(state=[_mix(int(seed), 0x5EED), 0])

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        """A generator seeded from the operating system's entropy."""
        import os
        return cls(state=[int.from_bytes(os.urandom(8), "little"), 0])

    @classmethod
    def from_state(cls, state, alg=None):
        return cls(state=state)

    @property
    def algorithm(self):
        return Algorithm.PHILOX

    @property
    def state(self):
        """[seed, draws so far] as int64."""
        return _core.constant(_np.array([self._gen.seed, self._gen.draws], dtype=_np.uint64).astype(_np.int64))

    @property
    def key(self):
        return _core.constant(_np.array([self._gen.seed], dtype=_np.uint64).astype(_np.int64))

    def reset_from_seed(self, seed):
        fresh = Generator.from_seed(seed)
        self._gen = fresh._gen

    def reset(self, state):
        fresh = Generator(state=state)
        self._gen = fresh._gen

    def skip(self, delta):
        self._gen.draws = self._gen.draws + int(delta)

    def uniform(self, shape, minval=0, maxval=None, dtype=_core.DType.float32, name=None):
        return uniform(shape, minval, maxval, dtype, seed=self._gen)

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=_core.DType.float32, name=None):
        return normal(shape, mean, stddev, dtype, seed=self._gen)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=_core.DType.float32, name=None):
        return truncated_normal(shape, mean, stddev, dtype, seed=self._gen)

    def uniform_full_int(self, shape, dtype=_core.DType.int64, name=None):
        """Integers over the whole range of int32 (or 53 random bits of int64)."""
        if _dtype(dtype) == _core.DType.int32:
            return self.uniform(shape, -(2 ** 31), 2 ** 31, _core.DType.int32)
        return self.uniform(shape, -(2 ** 52), 2 ** 52, _core.DType.int64)

    def make_seeds(self, count=1):
        """[2, count] int64 seeds for the stateless_* ops."""
        return self.uniform([2, int(count)], 0, 2 ** 52, _core.DType.int64)

    def split(self, count=1):
        """`count` new generators, independent of this one and of each other."""
        seeds = self.make_seeds(count).numpy()
        return [Generator(state=[_mix(int(seeds[0, i]), int(seeds[1, i])), 0]) for i in range(int(count))]

    def _ef_checkpoint_children(self):
        """tf.train.Checkpoint saves and restores the state (python/eagerflow/_generator_state.py)."""
        from ._generator_state import children
        return children(self)

    def __repr__(self):
        return f"<ef.random.Generator seed={self._gen.seed} draws={self._gen.draws}>"


_global_generator = None


def get_global_generator():
    """tf.random.get_global_generator: made on first use (from the OS's entropy)."""
    global _global_generator
    if _global_generator is None:
        _global_generator = Generator.from_non_deterministic_state()
    return _global_generator


def set_global_generator(generator):
    """tf.random.set_global_generator."""
    global _global_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"set_global_generator: expected a Generator, got {type(generator).__name__}")
    _global_generator = generator


class experimental:  # noqa: N801 - tf.random.experimental's names
    Generator = Generator
    Algorithm = Algorithm
    get_global_generator = staticmethod(get_global_generator)
    set_global_generator = staticmethod(set_global_generator)
    stateless_split = staticmethod(split)
    stateless_fold_in = staticmethod(fold_in)
    create_rng_state = staticmethod(create_rng_state)


# TF's parameterized draws and candidate samplers (their own files).
from ._random_dists import (gamma, poisson, stateless_gamma, stateless_poisson, stateless_binomial,  # noqa: E402
                            stateless_parameterized_truncated_normal)
from ._candidate_sampling import (uniform_candidate_sampler, log_uniform_candidate_sampler,  # noqa: E402
                                  learned_unigram_candidate_sampler, fixed_unigram_candidate_sampler,
                                  all_candidate_sampler)

__all__ += ["gamma", "poisson", "stateless_gamma", "stateless_poisson", "stateless_binomial",
            "stateless_parameterized_truncated_normal", "uniform_candidate_sampler", "log_uniform_candidate_sampler",
            "learned_unigram_candidate_sampler", "fixed_unigram_candidate_sampler", "all_candidate_sampler"]


def _as_initializer(draw):
    """Keras calls an initializer as fn(shape, dtype=dtype); eagerflow's C++ layers call a plain
    callable fn(shape, dtype), which would make dtype these functions' `mean`/`minval`. The hook
    that initializer objects use (_ef_initializer) hands the layers a callable with that call."""
    draw._ef_initializer = lambda: (lambda shape, dtype: draw(shape, dtype=dtype))


for _draw in (normal, uniform, truncated_normal):
    _as_initializer(_draw)
