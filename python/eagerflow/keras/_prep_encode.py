"""Keras 3's CategoryEncoding, Hashing and Discretization."""
import numpy as np

from .. import _core
from . import _prep_common as pc


class CategoryEncoding(pc.PreprocessingLayer):
    """Keras' CategoryEncoding: integer ids in [0, num_tokens) as one_hot, multi_hot or count
    vectors (float32), count optionally weighted by count_weights."""

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if output_mode == "binary":  # Keras' older name
            output_mode = "multi_hot"
        output_mode = pc.check_mode("CategoryEncoding", output_mode, ("count", "one_hot", "multi_hot"))
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of tokens is not known "
                             "beforehand, use the IntegerLookup layer instead.")
        if num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        if sparse:
            raise NotImplementedError("CategoryEncoding: sparse=True (SparseTensor outputs) is not supported here")
        self.num_tokens = int(num_tokens)
        self.output_mode = output_mode
        self.sparse = sparse

    def _forward(self, ids, weights=None):
        ids = np.asarray(ids)
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_tokens):
            from .. import errors
            raise errors.InvalidArgumentError(
                None, None, f"Input values must be in the range 0 <= values < num_tokens with "
                f"num_tokens={self.num_tokens}; got values from {ids.min()} to {ids.max()}")
        if self.output_mode == "count" and weights is not None:
            flat = ids.reshape(-1, ids.shape[-1]) if ids.ndim > 1 else ids.reshape(1, -1)
            w = np.asarray(weights, np.float64).reshape(flat.shape)
            out = np.zeros((flat.shape[0], self.num_tokens))
            for r in range(flat.shape[0]):
                np.add.at(out[r], flat[r], w[r])
            out = out.reshape(ids.shape[:-1] + (self.num_tokens,)) if ids.ndim > 1 else out[0]
            return out.astype(np.float32)
        return pc.encode(ids, self.output_mode, self.num_tokens)

    def __call__(self, inputs, count_weights=None, **kwargs):
        # The layer call of the C++ base takes no extra arguments; count_weights runs call directly.
        if count_weights is None:
            return super().__call__(inputs, **kwargs)
        return self.call(inputs, count_weights=count_weights)

    def call(self, inputs, count_weights=None):
        x = inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(inputs)
        if count_weights is not None and self.output_mode != "count":
            raise ValueError("`count_weights` is not used when `output_mode` is not `'count'`. "
                             f"Received `count_weights={count_weights}`.")
        shape = pc.encoded_shape(pc.static_shape(x), self.output_mode, self.num_tokens)
        args = [x] if count_weights is None else [x, count_weights]
        return pc.host(self._forward, args, shape, "float32")

    def compute_output_shape(self, input_shape):
        return pc.encoded_shape(input_shape, self.output_mode, self.num_tokens)

    def get_config(self):
        c = super().get_config()
        c.update({"num_tokens": self.num_tokens, "output_mode": self.output_mode})
        return c


class Hashing(pc.PreprocessingLayer):
    """Keras' Hashing: strings (and integers, hashed as their decimal text) to bins by TF's
    FarmHash Fingerprint64, or SipHash keyed by `salt`; mask_value goes to bin 0."""

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError(f"The `num_bins` for `Hashing` cannot be `None` or non-positive values. "
                             f"Received: num_bins={num_bins}.")
        output_mode = pc.check_mode("Hashing", output_mode, ("int", "one_hot", "multi_hot", "count"))
        if sparse:
            raise NotImplementedError("Hashing: sparse=True (SparseTensor outputs) is not supported here")
        if isinstance(salt, int):
            salt = [salt, salt]
        elif salt is not None:
            salt = list(salt)
            if len(salt) != 2:
                raise ValueError(f"The `salt` argument for `Hashing` can only be a tuple of size 2 integers, or a "
                                 f"single integer. Received: salt={salt}.")
        self.num_bins = int(num_bins)
        self.mask_value = mask_value
        self.salt = salt
        self.output_mode = output_mode
        self.sparse = sparse

    def _hash(self, x):
        from .. import strings
        n = self.num_bins - (1 if self.mask_value is not None else 0)
        s = x if x.dtype.name == "string" else strings.as_string(x)
        if self.salt is not None:
            h = strings.to_hash_bucket_strong(s, n, self.salt)
        else:
            h = strings.to_hash_bucket_fast(s, n)
        if self.mask_value is not None:
            mask = _core.convert_to_tensor(self.mask_value, dtype=x.dtype)
            from .. import math
            h = _core.where(math.equal(x, mask) if x.dtype.name != "string" else _core._strings.equal(x, mask),
                            _core.zeros_like(h), h + 1)
        return h

    def call(self, inputs):
        x = inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(inputs)
        if x.dtype.name != "string" and not x.dtype.is_integer:
            raise ValueError(f"Hashing expects string or integer inputs, got {x.dtype.name}")
        h = self._hash(x)
        if self.output_mode == "int":
            return h
        shape = pc.encoded_shape(pc.static_shape(x), self.output_mode, self.num_bins)
        return pc.host(lambda i: pc.encode(i, self.output_mode, self.num_bins), [h], shape, "float32")

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return tuple(input_shape)
        return pc.encoded_shape(input_shape, self.output_mode, self.num_bins)

    def get_config(self):
        c = super().get_config()
        c.update({"num_bins": self.num_bins, "salt": self.salt, "mask_value": self.mask_value,
                  "output_mode": self.output_mode, "sparse": self.sparse})
        return c


def _summarize(values, epsilon):
    # Keras' quantile sketch: every step-th sorted value, each weighing `step` values.
    values = np.sort(np.reshape(values, [-1]))
    step = max(values.size * epsilon, 1)
    picked = values[int(step - 1)::int(step)]
    return np.stack([picked, np.ones_like(picked) * step])


def _compress(summary, epsilon):
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum = summary[1].cumsum()
    bins = np.interp(percents, cum / cum[-1], summary[0])
    cum_at = np.interp(percents, cum / cum[-1], cum)
    return np.stack((bins, cum_at - np.concatenate(([0], cum_at[:-1])))).astype("float32")


def _merge(a, b, epsilon):
    merged = np.concatenate((a, b), axis=1)
    return _compress(np.take(merged, np.argsort(merged[0]), axis=1), epsilon)


class Discretization(pc.PreprocessingLayer):
    """Keras' Discretization: values to bucket ids by bin_boundaries (bucket i holds
    boundaries[i-1] <= x < boundaries[i]), int32; or encoded. adapt learns num_bins quantiles
    with Keras' sketch (the same boundaries)."""

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int", sparse=False,
                 dtype=None, name=None, **kwargs):
        super().__init__(name=name, dtype=dtype, **kwargs)
        if sparse and output_mode == "int":
            raise ValueError("`sparse=True` may only be used if `output_mode` is `'one_hot'`, `'multi_hot'`, or "
                             f"`'count'`. Received: sparse={sparse} and output_mode={output_mode}")
        if sparse:
            raise NotImplementedError("Discretization: sparse=True (SparseTensor outputs) is not supported here")
        output_mode = pc.check_mode("Discretization", output_mode, ("int", "one_hot", "multi_hot", "count"))
        if num_bins is not None and num_bins < 0:
            raise ValueError(f"`num_bins` must be greater than or equal to 0. Received: `num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError("Both `num_bins` and `bin_boundaries` should not be set. Received: "
                             f"`num_bins={num_bins}` and `bin_boundaries={bin_boundaries}`")
        if num_bins is None and bin_boundaries is None:
            raise ValueError("You need to set either `num_bins` or `bin_boundaries`.")
        self.bin_boundaries = None if bin_boundaries is None else list(bin_boundaries)
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.output_mode = output_mode
        self.sparse = sparse

    def adapt(self, data, steps=None):
        """Bin boundaries at num_bins quantiles of `data` (an array, tensor or Dataset)."""
        if self.num_bins is None:
            raise ValueError("Cannot adapt a Discretization layer that has been initialized with `bin_boundaries`, "
                             "use `num_bins` instead.")
        summary = np.array([[], []], dtype="float32")
        for b in pc.batches(data, steps):
            summary = _merge(_summarize(np.array(b).astype("float32"), self.epsilon), summary, self.epsilon)
        self.bin_boundaries = _compress(summary, 1.0 / self.num_bins)[0, :-1].tolist()

    def _depth(self):
        return len(self.bin_boundaries) + 1

    def _forward(self, x):
        ids = np.searchsorted(np.asarray(self.bin_boundaries, np.float64), x, side="right")
        if self.output_mode == "int":
            return ids.astype(np.int32)
        return pc.encode(ids, self.output_mode, self._depth())

    def call(self, inputs):
        if self.bin_boundaries is None:
            raise ValueError("You need to either pass the `bin_boundaries` argument at construction time or call "
                             "`adapt(dataset)` before you can start using the `Discretization` layer.")
        x = inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(inputs)
        shape = pc.static_shape(x)
        if self.output_mode == "int":
            return pc.host(self._forward, [x], shape, "int32")
        return pc.host(self._forward, [x], pc.encoded_shape(shape, self.output_mode, self._depth()), "float32")

    def get_config(self):
        c = super().get_config()
        c.update({"bin_boundaries": self.bin_boundaries, "num_bins": self.num_bins, "epsilon": self.epsilon,
                  "output_mode": self.output_mode, "sparse": self.sparse})
        return c

    @classmethod
    def from_config(cls, config):
        # An adapted layer's config has both; __init__ takes one (as Keras' from_config).
        if config.get("bin_boundaries") is not None and config.get("num_bins") is not None:
            config = dict(config)
            bounds = config.pop("bin_boundaries")
            layer = cls(**config)
            layer.bin_boundaries = bounds
            return layer
        return cls(**config)
