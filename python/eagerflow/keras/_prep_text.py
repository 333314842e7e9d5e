"""Keras 3's TextVectorization: standardize, split, n-grams, then a StringLookup vocabulary
(mask "" at 0 and "[UNK]" at 1 in int mode), as token ids or per-text encodings."""
import re

import numpy as np

from .. import _core
from . import _prep_common as pc
from ._prep_lookup import StringLookup

# Keras' punctuation set: ASCII punctuation, the range ",-." included.
_PUNCT = re.compile(rb"[!\"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~']")
_WHITESPACE = b" \t\n\r\x0b\x0c"


def _lower(s):
    # tf.strings.lower with its default encoding: ASCII letters only, as Keras calls it.
    return s.translate(bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz"))


class TextVectorization(pc.PreprocessingLayer):
    """Keras' TextVectorization over string tensors: text to token ids (padded to the longest
    text, or to output_sequence_length) or to multi_hot / count / tf_idf vectors."""

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation", split="whitespace", ngrams=None,
                 output_mode="int", output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", name=None, **kwargs):
        kwargs.pop("vocabulary_size", None)
        has_input_vocabulary = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        super().__init__(name=name, **kwargs)
        output_mode = pc.check_mode("TextVectorization", output_mode, ("int", "one_hot", "multi_hot", "count",
                                                                      "tf_idf"))
        if output_mode == "one_hot":
            raise NotImplementedError("TextVectorization: output_mode='one_hot' is not supported here "
                                      "(use multi_hot or StringLookup)")
        if not (standardize is None or callable(standardize) or standardize in (
                "lower_and_strip_punctuation", "lower", "strip_punctuation")):
            raise ValueError("Invalid value for argument `standardize`. Expected one of None, "
                             "'lower_and_strip_punctuation', 'lower', 'strip_punctuation' or a callable. "
                             f"Received: standardize={standardize!r}")
        if not (split is None or callable(split) or split in ("whitespace", "character")):
            raise ValueError("Invalid value for argument `split`. Expected one of None, 'whitespace', 'character' "
                             f"or a callable. Received: split={split!r}")
        if not (ngrams is None or isinstance(ngrams, int) and ngrams > 0 or
                isinstance(ngrams, (tuple, list)) and all(isinstance(n, int) and n > 0 for n in ngrams)):
            raise ValueError(f"`ngrams` must be None, an integer, or a tuple of integers. Received: ngrams={ngrams}")
        if output_mode == "int" and output_sequence_length is not None and output_sequence_length < 1:
            raise ValueError(f"`output_sequence_length` must be a positive integer. "
                             f"Received: output_sequence_length={output_sequence_length}")
        if output_mode != "int" and output_sequence_length is not None:
            raise ValueError("`output_sequence_length` must not be set if `output_mode` is not 'int'. "
                             f"Received output_sequence_length={output_sequence_length}.")
        if ragged and output_mode != "int":
            raise ValueError(f"`ragged` must not be true if `output_mode` is `'{output_mode}'`")
        if ragged and output_sequence_length is not None:
            raise ValueError("`output_sequence_length` must not be set if ragged is True.")
        if sparse:
            raise NotImplementedError("TextVectorization: sparse=True (SparseTensor outputs) is not supported here")
        self._max_tokens = max_tokens
        self._standardize = standardize
        self._split = split
        self._ngrams = ngrams
        self._ngrams_arg = tuple(ngrams) if isinstance(ngrams, list) else ngrams
        self._widths = None if ngrams is None else (tuple(range(1, ngrams + 1)) if isinstance(ngrams, int)
                                                     else tuple(ngrams))
        self._output_mode = output_mode
        self._output_sequence_length = output_sequence_length
        self._ragged = ragged
        self._encoding = encoding
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            mask_token="" if output_mode == "int" else None, output_mode=output_mode,
            pad_to_max_tokens=pad_to_max_tokens, encoding=encoding, name=None,
            has_input_vocabulary=has_input_vocabulary)

    # -- text to tokens
    def _tokens(self, s):
        s = s if isinstance(s, bytes) else str(s).encode("utf-8")
        if self._standardize in ("lower", "lower_and_strip_punctuation"):
            s = _lower(s)
        if self._standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            s = _PUNCT.sub(b"", s)
        if self._split is None:
            toks = [s]
        elif self._split == "whitespace":
            toks = s.split()
        else:
            toks = [c.encode("utf-8") for c in s.decode("utf-8", errors="replace")]
        if self._widths is not None:
            grams = []
            for w in self._widths:
                grams += [b" ".join(toks[k:k + w]) for k in range(len(toks) - w + 1)]
            toks = grams
        return toks

    def _texts(self, arr):
        a = np.asarray(arr, dtype=object)
        if a.ndim == 2 and a.shape[-1] == 1:
            a = a[:, 0]
        if a.ndim == 0:
            a = a.reshape(1)
        if a.ndim != 1:
            raise ValueError(f"TextVectorization expects a batch of strings of shape (batch,) or (batch, 1), got "
                             f"{a.shape}")
        return a.tolist()

    def _callable_parts(self):
        return callable(self._standardize) or callable(self._split)

    def _token_rows(self, x):
        """Each text's tokens; a callable standardize / split runs on the ef tensors, as Keras."""
        if not self._callable_parts():
            return [self._tokens(s) for s in self._texts(x.numpy() if isinstance(x, _core.Tensor) else x)]
        t = x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x)
        if t.ndim == 2 and t._shape_tuple[-1] == 1:
            t = _core.reshape(t, [-1])
        if callable(self._standardize):
            t = self._standardize(t)
        elif self._standardize is not None:
            from .. import strings
            if "lower" in self._standardize:
                t = strings.lower(t)
            if "strip" in self._standardize:
                t = strings.regex_replace(t, _PUNCT.pattern.decode(), "")
        if callable(self._split):
            rows = self._split(t)
        else:
            from .. import strings
            rows = strings.split(t) if self._split == "whitespace" else (
                strings.unicode_split(t, "UTF-8") if self._split == "character" else _core.reshape(t, [-1, 1]))
        rows = rows.to_list() if hasattr(rows, "to_list") else rows.numpy().tolist()
        out = []
        for r in rows:
            r = [v if isinstance(v, bytes) else str(v).encode() for v in (r if isinstance(r, list) else [r])]
            if self._widths is not None:
                r = [b" ".join(r[k:k + w]) for w in self._widths for k in range(len(r) - w + 1)]
            out.append(r)
        return out

    # -- vocabulary
    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary (and IDF weights) from texts: an array, a tensor or a Dataset of them."""
        lk = self._lookup_layer
        if lk._has_input_vocabulary:
            raise ValueError(f"Cannot adapt layer '{self.name}' after setting a static vocabulary via `vocabulary` "
                             "argument or `set_vocabulary()` method.")
        counts, doc_counts, docs = {}, {}, 0
        for b in pc.batches(data, steps):
            for toks in self._token_rows(b):
                for k in toks:
                    counts[k] = counts.get(k, 0) + 1
                docs += 1
                for k in set(toks):
                    doc_counts[k] = doc_counts.get(k, 0) + 1
        lk._finalize(counts, doc_counts, docs)

    def get_vocabulary(self, include_special_tokens=True):
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    # -- call
    def _forward(self, x):
        rows = self._token_rows(x)
        lk = self._lookup_layer
        ids = [lk._lookup(np.array(r + [b""], dtype=object)[:-1]) for r in rows]
        if self._output_mode == "int":
            n = self._output_sequence_length
            if n is None:
                n = max((len(r) for r in ids), default=0)
            out = np.zeros((len(ids), n), np.int64)
            for i, r in enumerate(ids):
                r = r[:n]
                out[i, :len(r)] = r
            return out
        mode = "count" if self._output_mode == "tf_idf" else self._output_mode
        depth = lk._depth()
        out = np.stack([pc.encode(r, mode, depth, lk._idf if self._output_mode == "tf_idf" else None)
                        if len(r) else np.zeros(depth) for r in ids]) if ids else np.zeros((0, depth))
        return out.astype(lk._encoded_dtype())

    def __call__(self, inputs, *args, **kwargs):
        # ragged=True gives a RaggedTensor, which a layer call cannot return: the layer computes it directly.
        inputs = pc.one_input(inputs)
        if self._ragged:
            return self.call(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        x = inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(inputs)
        if x.dtype.name != "string":
            raise ValueError(f"TextVectorization expects string inputs, got {x.dtype.name}")
        shape = pc.static_shape(x)
        batch = shape[0] if shape else 1
        if self._output_mode == "tf_idf" and self._lookup_layer._idf is None:
            raise ValueError("When `output_mode` is `'tf_idf'`, `idf_weights` must be provided.")
        if self._ragged:
            if _core._in_trace():
                raise NotImplementedError("TextVectorization(ragged=True) runs eagerly here, not inside ef.function")
            from ..ragged import RaggedTensor
            rows = [self._lookup_layer._lookup(np.array(r + [b""], dtype=object)[:-1]).tolist()
                    for r in self._token_rows(x)]
            return RaggedTensor.from_row_lengths(
                _core.constant(np.array([v for r in rows for v in r], np.int64)),
                np.array([len(r) for r in rows], np.int64))
        if self._output_mode == "int":
            return pc.host(self._forward, [x], (batch, self._output_sequence_length), "int64")
        return pc.host(self._forward, [x], (batch, self._lookup_layer._depth()), self._lookup_layer._encoded_dtype())

    def compute_output_shape(self, input_shape):
        batch = tuple(input_shape)[:1] or (None,)
        if self._output_mode == "int":
            return batch + (self._output_sequence_length,)
        return batch + (self._lookup_layer._depth(),)

    def get_config(self):
        c = super().get_config()
        lk = self._lookup_layer.get_config()
        c.update({"max_tokens": lk["max_tokens"], "standardize": self._standardize, "split": self._split,
                  "ngrams": self._ngrams_arg, "output_mode": self._output_mode,
                  "output_sequence_length": self._output_sequence_length,
                  "pad_to_max_tokens": lk["pad_to_max_tokens"], "sparse": False, "ragged": self._ragged,
                  "vocabulary": lk["vocabulary"], "idf_weights": lk["idf_weights"], "encoding": self._encoding,
                  "vocabulary_size": self.vocabulary_size()})
        if lk["vocabulary"] is not None:
            c["has_input_vocabulary"] = self._lookup_layer._has_input_vocabulary
        return c
