"""Keras 3's StringLookup and IntegerLookup: a vocabulary (given, or learned by adapt) mapped to
indices laid out as Keras lays them out: [mask token] + [OOV buckets] + tokens by frequency."""
import numpy as np

from .. import _core
from . import _prep_common as pc

_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


class _IndexLookup(pc.PreprocessingLayer):
    _is_string = True

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary_dtype, vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", sparse=False, pad_to_max_tokens=False,
                 oov_method="floormod", salt=None, name=None, **kwargs):
        has_input_vocabulary = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        kwargs.pop("vocabulary_size", None)
        super().__init__(name=name, **kwargs)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"If set, `max_tokens` must be greater than 1. Received: max_tokens={max_tokens}")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(f"If pad_to_max_tokens is True, must set `max_tokens`. Received: max_tokens={max_tokens}")
        if num_oov_indices < 0:
            raise ValueError("`num_oov_indices` must be greater than or equal to 0. "
                             f"Received: num_oov_indices={num_oov_indices}")
        output_mode = pc.check_mode(type(self).__name__, output_mode, _MODES)
        if invert and output_mode != "int":
            raise ValueError("`output_mode` must be `'int'` when `invert` is true. "
                             f"Received: output_mode={output_mode}")
        if sparse:
            raise NotImplementedError(f"{type(self).__name__}: sparse=True (SparseTensor outputs) is not supported "
                                      "here")
        if idf_weights is not None and output_mode != "tf_idf":
            raise ValueError("`idf_weights` should only be set if `output_mode` is `'tf_idf'`. "
                             f"Received: idf_weights={idf_weights} and output_mode={output_mode}")
        if output_mode == "tf_idf" and vocabulary is not None and idf_weights is None:
            raise ValueError("When specifying the `vocabulary` argument, in TF-IDF output mode, the `idf_weights` "
                             "argument must also be provided.")
        if oov_method not in ("floormod", "farmhash"):
            raise ValueError(f"Invalid value for argument `oov_method`. Expected one of 'floormod', 'farmhash'. "
                             f"Received: oov_method={oov_method!r}")
        self.oov_method = oov_method
        self.salt = salt
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = mask_token
        self.oov_token = oov_token
        self.vocabulary_dtype = vocabulary_dtype
        self.invert = bool(invert)
        self.output_mode = output_mode
        self.sparse = sparse
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self._has_input_vocabulary = bool(has_input_vocabulary)
        self._tokens = []  # the learned or given tokens, without the special ones
        self._index = {}
        self._idf = None
        self._input_vocabulary = vocabulary
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # -- the vocabulary
    def _key(self, v):
        if v is None:
            return None
        if self._is_string:
            return v if isinstance(v, bytes) else str(v).encode("utf-8")
        return int(v)

    def _oov_start(self):
        return 1 if self.mask_token is not None else 0

    def _token_start(self):
        return self._oov_start() + self.num_oov_indices

    def vocabulary_size(self):
        """The size of the vocabulary, the special tokens included."""
        return self._token_start() + len(self._tokens)

    def get_vocabulary(self, include_special_tokens=True):
        """The vocabulary, a token's position being its index when include_special_tokens."""
        out = [self._show(t) for t in self._tokens]
        if include_special_tokens:
            out = [self.mask_token] * self._oov_start() + [self.oov_token] * self.num_oov_indices + out
        return out

    def _show(self, t):
        return t.decode("utf-8", errors="replace") if isinstance(t, bytes) else t

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the vocabulary (and the IDF weights in tf_idf mode) as Keras' set_vocabulary."""
        if self.output_mode == "tf_idf":
            if idf_weights is None:
                raise ValueError("`idf_weights` must be set if output_mode is 'tf_idf'.")
        elif idf_weights is not None:
            raise ValueError("`idf_weights` should only be set if output_mode is `'tf_idf'`. "
                             f"Received: output_mode={self.output_mode} and idf_weights={idf_weights}")
        if isinstance(vocabulary, str):
            with open(vocabulary, encoding="utf-8") as f:
                vocabulary = f.read().splitlines()
            while vocabulary and vocabulary[-1] == "":
                vocabulary.pop()
        vocab = [self._key(v) for v in pc.as_numpy(vocabulary).reshape(-1).tolist()]
        if not vocab:
            raise ValueError(f"Cannot set an empty vocabulary. Received: vocabulary={vocabulary}")
        special = [self._key(self.mask_token)] * self._oov_start() + [self._key(self.oov_token)] * self.num_oov_indices
        found_special = vocab[:len(special)] == special
        tokens = vocab[len(special):] if found_special else vocab
        seen, repeated = set(), []
        for t in tokens:
            if t in seen:
                repeated.append(self._show(t))
            seen.add(t)
        if repeated:
            raise ValueError("The passed vocabulary has at least one repeated term. Please uniquify your dataset. "
                             f"The repeated terms are: {repeated}")
        if self.mask_token is not None and self._key(self.mask_token) in seen:
            raise ValueError("Found reserved mask token at unexpected location in `vocabulary`. Note that passed "
                             "`vocabulary` does not need to include the OOV and mask tokens. Received: "
                             f"mask_token={self.mask_token}")
        if self.invert and self.oov_token is not None and self._key(self.oov_token) in seen:
            raise ValueError("Found reserved OOV token at unexpected location in `vocabulary`. Received: "
                             f"oov_token={self.oov_token}")
        size = self._token_start() + len(tokens)
        if self.max_tokens is not None and size > self.max_tokens:
            raise ValueError("Attempted to set a vocabulary larger than the maximum vocab size. Received vocabulary "
                             f"size is {size}; `max_tokens` is {self.max_tokens}.")
        self._set_tokens(tokens)
        if self.output_mode == "tf_idf":
            w = np.asarray(pc.as_numpy(idf_weights), np.float64).reshape(-1)
            if len(w) != len(vocab):
                raise ValueError("`idf_weights` must be the same length as vocabulary. "
                                 f"len(idf_weights) is {len(w)}; len(vocabulary) is {len(vocab)}")
            if not found_special:
                w = np.concatenate([np.full(self._token_start(), np.average(w)), w])
            self._idf = self._pad_idf(w)

    def _pad_idf(self, w):
        if self.pad_to_max_tokens and self.max_tokens is not None:
            w = np.concatenate([w, np.zeros(self.max_tokens - len(w))])
        return w.astype(np.float32)

    def _set_tokens(self, tokens):
        self._tokens = list(tokens)
        start = self._token_start()
        self._index = {t: start + i for i, t in enumerate(self._tokens)}

    # -- adapt
    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary from `data` (an array, a tensor or a Dataset of them): tokens by
        decreasing count, ties broken by the larger token first, as Keras."""
        if self._has_input_vocabulary:
            raise ValueError(f"Cannot adapt layer '{self.name}' after setting a static vocabulary via `vocabulary` "
                             "argument or `set_vocabulary()` method.")
        counts, doc_counts, docs = {}, {}, 0
        for b in pc.batches(data, steps):
            for doc in self._documents(b):
                keys = [self._key(v) for v in doc]
                for k in keys:
                    counts[k] = counts.get(k, 0) + 1
                if self.output_mode == "tf_idf":
                    docs += 1
                    for k in set(keys):
                        doc_counts[k] = doc_counts.get(k, 0) + 1
        self._finalize(counts, doc_counts, docs)

    def _documents(self, batch):
        """A batch's rows (Keras' documents for tf_idf): rank <= 1 data is one document per element
        of a rank-1 array expanded to (n, 1); a rank-0 one is a single token."""
        if isinstance(batch, list) and batch and isinstance(batch[0], list):  # ragged rows
            return batch
        a = np.asarray(batch, dtype=object if self._is_string else None)
        if a.ndim == 0:
            return [[a.item()]]
        if a.ndim == 1:
            return [[v] for v in a.tolist()]
        return [row.reshape(-1).tolist() for row in a.reshape(a.shape[0], -1)]

    def _finalize(self, counts, doc_counts, docs):
        for special in (self.mask_token, self.oov_token):
            if special is not None:
                counts.pop(self._key(special), None)
        if not counts:
            return
        # Keras: np.lexsort((tokens, counts))[::-1], i.e. by count, then by token, both descending.
        tokens = sorted(counts, key=lambda t: (counts[t], t), reverse=True)
        if self.max_tokens:
            tokens = tokens[:max(self.max_tokens - self._token_start(), 0)]
        self._set_tokens(tokens)
        if self.output_mode == "tf_idf":
            idf = np.log(1 + docs / (1 + np.array([doc_counts.get(t, 0) for t in tokens], np.float64)))
            idf = idf.astype(np.float32).astype(np.float64)
            self._idf = self._pad_idf(np.concatenate([np.full(self._token_start(), np.mean(idf)), idf]))

    # -- call
    def _depth(self):
        return self.max_tokens if self.pad_to_max_tokens else self.vocabulary_size()

    def _lookup(self, x):
        flat = x.reshape(-1)
        out = np.empty(flat.shape, np.int64)
        mask_key = None if self.mask_token is None else self._key(self.mask_token)
        miss = []
        for i, v in enumerate(flat.tolist()):
            k = self._key(v)
            if mask_key is not None and k == mask_key:
                out[i] = 0 if self.output_mode == "int" else -1
                continue
            j = self._index.get(k)
            if j is None:
                miss.append(i)
                j = self._oov_start()
            out[i] = j
        if miss:
            if self.num_oov_indices == 0:
                from .. import errors
                raise errors.InvalidArgumentError(
                    None, None, "When `num_oov_indices=0` all inputs should be in vocabulary, found OOV values "
                    f"{[self._show(self._key(flat[i])) for i in miss]}, consider setting `num_oov_indices=1`.")
            if self.num_oov_indices > 1:
                out[miss] = self._oov_bucket(flat[miss]) + self._oov_start()
        return out.reshape(x.shape)

    def _oov_bucket(self, values):
        """Keras' OOV buckets: integers by floormod (oov_method="floormod"); otherwise the text
        hashed by FarmHash Fingerprint64, or SipHash keyed by `salt`."""
        if not self._is_string and self.oov_method == "floormod":
            return np.mod(np.asarray(values, np.int64), self.num_oov_indices)
        from .. import strings
        keys = [self._key(v) if self._is_string else str(int(v)).encode() for v in values]
        t = _core.convert_to_tensor(np.array(keys + [b""], dtype=object)[:-1])
        if self.salt is not None:
            salt = [self.salt, self.salt] if isinstance(self.salt, int) else list(self.salt)
            return strings.to_hash_bucket_strong(t, self.num_oov_indices, salt).numpy()
        return strings.to_hash_bucket_fast(t, self.num_oov_indices).numpy()

    def _invert(self, x):
        x = np.asarray(x, np.int64)
        table = {i: t for t, i in self._index.items()}
        oov = self._key(self.oov_token)
        vals = []
        for i in x.reshape(-1).tolist():
            if self.mask_token is not None and i == 0:
                vals.append(self._key(self.mask_token))
            else:
                vals.append(table.get(i, oov))
        arr = np.empty(len(vals), dtype=object if self._is_string else np.int64)
        arr[:] = vals
        return arr.reshape(x.shape)

    def _forward(self, x):
        if self.invert:
            return self._invert(x)
        ids = self._lookup(np.asarray(x, dtype=object if self._is_string else np.int64))
        if self.output_mode == "int":
            return ids
        # Keras encodes in the index dtype (int64); tf_idf weighs the counts in float32.
        return pc.encode(ids, "count" if self.output_mode == "tf_idf" else self.output_mode, self._depth(),
                         self._idf if self.output_mode == "tf_idf" else None, self._encoded_dtype())

    def _encoded_dtype(self):
        return "float32" if self.output_mode == "tf_idf" else "int64"

    def __call__(self, inputs, *args, **kwargs):
        # A RaggedTensor is looked up value by value (int mode), its rows kept, as Keras'.
        from ..ragged import RaggedTensor
        inputs = pc.one_input(inputs)
        if isinstance(inputs, RaggedTensor):
            if self.output_mode != "int":
                raise NotImplementedError(f"{type(self).__name__}: RaggedTensor inputs are supported with "
                                          "output_mode='int' here")
            return inputs.with_flat_values(super().__call__(inputs.flat_values, *args, **kwargs))
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        x = inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(
            inputs, dtype=None if self._is_string or self.invert else "int64")
        if not self._is_string and not self.invert and not x.dtype.is_integer:
            raise ValueError(f"{type(self).__name__} expects integer inputs, got {x.dtype.name}")
        if self._is_string and not self.invert and x.dtype.name != "string":
            raise ValueError(f"{type(self).__name__} expects string inputs, got {x.dtype.name}")
        if self.invert and x.dtype.name == "string":
            raise ValueError(f"{type(self).__name__}(invert=True) expects integer indices, got strings")
        if self.output_mode == "tf_idf" and self._idf is None:
            raise ValueError("When `output_mode` is `'tf_idf'`, `idf_weights` must be provided.")
        shape = pc.static_shape(x)
        if self.invert:
            dtype = "string" if self._is_string else "int64"
        elif self.output_mode == "int":
            dtype = "int64"
        else:
            dtype = self._encoded_dtype()
            shape = pc.encoded_shape(shape, self.output_mode, self._depth())
        return pc.host(self._forward, [x], shape, dtype)

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return tuple(input_shape)
        return pc.encoded_shape(input_shape, self.output_mode, self._depth())

    # -- config
    def get_config(self):
        c = super().get_config()
        # Keras keeps an adapted vocabulary in the saved model's assets; here it travels in the config.
        vocab = self._input_vocabulary
        if vocab is None and self._tokens:
            vocab = [self._show(t) for t in self._tokens]
        elif vocab is not None and not isinstance(vocab, str):
            vocab = [self._show(self._key(v)) for v in pc.as_numpy(vocab).reshape(-1).tolist()]
        idf = None
        if self.output_mode == "tf_idf" and self._idf is not None:
            idf = [float(w) for w in self._idf[self._token_start():self.vocabulary_size()]]
        c.update({"invert": self.invert, "max_tokens": self.max_tokens, "num_oov_indices": self.num_oov_indices,
                  "oov_token": self.oov_token, "mask_token": self.mask_token, "output_mode": self.output_mode,
                  "sparse": self.sparse, "pad_to_max_tokens": self.pad_to_max_tokens, "vocabulary": vocab,
                  "idf_weights": idf, "vocabulary_size": self.vocabulary_size() if self._tokens else None,
                  "oov_method": self.oov_method, "salt": self.salt})
        if vocab is not None:
            c["has_input_vocabulary"] = self._has_input_vocabulary
        return c


class StringLookup(_IndexLookup):
    """Keras' StringLookup: strings to indices (or back, invert=True), or encoded (one_hot,
    multi_hot, count, tf_idf)."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]", vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", pad_to_max_tokens=False, sparse=False,
                 encoding="utf-8", oov_method="floormod", salt=None, name=None, **kwargs):
        if str(encoding).lower().replace("_", "-") not in ("utf-8", "utf8"):
            raise NotImplementedError(f"StringLookup: only encoding='utf-8' is supported here, got {encoding!r}")
        self.encoding = encoding
        kwargs.pop("vocabulary_dtype", None)
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, "string", vocabulary, idf_weights,
                         invert, output_mode, sparse, pad_to_max_tokens, oov_method, salt, name, **kwargs)

    def get_config(self):
        c = super().get_config()
        c["encoding"] = self.encoding
        return c


class IntegerLookup(_IndexLookup):
    """Keras' IntegerLookup: integers to indices (or back, invert=True), or encoded."""
    _is_string = False

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1, output_mode="int",
                 sparse=False, vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False,
                 pad_to_max_tokens=False, oov_method="floormod", salt=None, name=None, **kwargs):
        if vocabulary_dtype not in ("int64", "int32"):
            raise ValueError(f"IntegerLookup: vocabulary_dtype must be int64 or int32, got {vocabulary_dtype!r}")
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary_dtype, vocabulary,
                         idf_weights, invert, output_mode, sparse, pad_to_max_tokens, oov_method, salt, name, **kwargs)

    def get_config(self):
        c = super().get_config()
        c["vocabulary_dtype"] = self.vocabulary_dtype
        return c
