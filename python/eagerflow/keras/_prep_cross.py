"""Keras 3's HashedCrossing: the bucket of each combination of categorical features, TF's
sparse-cross hash (tf.sparse.cross_hashed) so the buckets are Keras' own."""
import numpy as np

from .. import _core
from . import _prep_common as pc

_M64 = (1 << 64) - 1
_KMUL = 0xC6A4A7935BD1E995
_KEY = 0xDECAFCAFFE  # TF's SPARSE_CROSS_DEFAULT_HASH_KEY
_P = 1 << 62


def _shift_mix(v):
    return v ^ (v >> 47)


def _cat64(fp1, fp2):
    # TF's FingerprintCat64 on unsigned 64-bit values
    r = fp1 ^ _KMUL
    r ^= (_shift_mix((fp2 * _KMUL) & _M64) * _KMUL) & _M64
    r = (r * _KMUL) & _M64
    r = (_shift_mix(r) * _KMUL) & _M64
    return _shift_mix(r)


def _cross(num_bins, kinds, *columns):
    """Each row's bucket: key, then FingerprintCat64 with each feature's hash (a string's farmhash
    Fingerprint64, rebuilt from its residues mod 2**62 and 2**62 - 1; an integer's own value)."""
    n = columns[0].shape[0]
    out = np.empty(n, np.int64)
    it = iter(columns)
    hashes = []
    for kind in kinds:
        if kind == "string":
            r1, r2 = next(it).astype(object), next(it).astype(object)
            q = (r2 - r1) % (_P - 1)  # Fingerprint64 = q * 2**62 + r1, q in 0..3
            hashes.append(q * _P + r1)
        else:
            hashes.append(next(it).astype(object) & _M64)
    for row in range(n):
        h = _KEY
        for col in hashes:
            h = _cat64(h, int(col[row]))
        out[row] = h % num_bins if num_bins > 0 else h % ((1 << 63) - 1)
    return out


class HashedCrossing(pc.PreprocessingLayer):
    """Keras' HashedCrossing(num_bins, output_mode="int"): [a, b, ...] features (integers or
    strings, each of shape (), (batch,) or (batch, 1)) to the hashed bucket of their combination,
    int64 of the features' shape, or output_mode="one_hot" vectors of num_bins."""

    def __init__(self, num_bins, output_mode="int", sparse=False, name=None, dtype=None, **kwargs):
        if output_mode not in ("int", "one_hot"):
            raise ValueError(f"Invalid value for argument `output_mode` of HashedCrossing. Expected one of "
                             f"'int', 'one_hot'. Received: output_mode={output_mode!r}")
        if sparse:
            raise NotImplementedError("HashedCrossing: sparse=True (SparseTensor outputs) is not supported here")
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.num_bins, self.output_mode, self.sparse = num_bins, output_mode, sparse

    def __call__(self, inputs, **kwargs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"`HashedCrossing` should be called on a list or tuple of inputs. Received: "
                             f"inputs={inputs}")
        if len(inputs) < 2:
            raise ValueError(f"`HashedCrossing` should be called on at least two inputs. Received: inputs={inputs}")
        return super().__call__(list(inputs), **kwargs)

    def call(self, inputs):
        from .. import strings
        xs = [x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x) for x in inputs]
        shape = pc.static_shape(xs[0])
        if len(shape) > 2 or (len(shape) == 2 and shape[-1] != 1):
            raise ValueError(f"All `HashedCrossing` inputs should have shape `()`, `(batch_size)` or "
                             f"`(batch_size, 1)`. Received: inputs={inputs}")
        if any(pc.static_shape(x) != shape for x in xs[1:]):
            raise ValueError(f"All `HashedCrossing` inputs should have equal shape. Received: inputs={inputs}")
        if not all(x.dtype.is_integer or x.dtype.name == "string" for x in xs):
            raise ValueError(f"All `HashedCrossing` inputs should have an integer or string dtype. "
                             f"Received: inputs={inputs}")
        kinds, columns = [], []
        for x in xs:
            flat = _core.reshape(x, [-1])
            if x.dtype.name == "string":
                kinds.append("string")
                columns += [strings.to_hash_bucket_fast(flat, _P), strings.to_hash_bucket_fast(flat, _P - 1)]
            else:
                kinds.append("int")
                columns.append(_core.cast(flat, "int64"))
        ids = pc.host(lambda *cols: _cross(int(self.num_bins), kinds, *cols), columns, [None], "int64")
        ids = _core.reshape(ids, [-1] + list(shape[1:]) if shape else [])
        if self.output_mode == "int":
            return ids
        out_shape = pc.encoded_shape(shape, "one_hot", self.num_bins)
        return pc.host(lambda i: pc.encode(i, "one_hot", self.num_bins), [ids], out_shape, "float32")

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape[0])
        if self.output_mode == "int":
            return shape
        return pc.encoded_shape(shape, "one_hot", self.num_bins)

    def get_config(self):
        # Keras' keys exactly (its dtype: int64 for int ids, the float policy for one_hot)
        return {"num_bins": self.num_bins, "output_mode": self.output_mode, "sparse": self.sparse, "name": self.name,
                "dtype": "int64" if self.output_mode == "int" else "float32"}


__all__ = ["HashedCrossing"]
