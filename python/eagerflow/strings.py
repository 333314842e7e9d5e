"""ef.strings, as tf.strings: TF's names and arguments over ef::strings (eagerflow/ops/strings.h).

String tensors hold bytes (Python str is stored as UTF-8; .numpy() gives bytes, as TF's). Every
function is an op: it runs eagerly and inside ef.function. Results TF gives as RaggedTensors
(split, bytes_split, unicode_split, unicode_decode) are ef.RaggedTensor for a vector input and a
plain 1-D tensor for a scalar input, as TF's.
"""
import numpy as _np

from . import _core

_s = _core._strings

__all__ = ["as_string", "bytes_split", "format", "join", "length", "lower", "ngrams", "reduce_join",
           "regex_full_match", "regex_replace", "split", "strip", "substr", "to_hash_bucket", "to_hash_bucket_fast",
           "to_hash_bucket_strong", "to_number", "unicode_decode", "unicode_decode_with_offsets", "unicode_encode",
           "unicode_split", "unicode_split_with_offsets", "unsorted_segment_join", "upper"]


def _t(x):
    return x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x)


def _ragged(x, values, row_splits):
    """TF's shape of a split: a 1-D tensor for a scalar input, ragged rows for a vector."""
    if _t(x).ndim == 0:
        return values
    from .ragged import RaggedTensor
    return RaggedTensor.from_row_splits(values, row_splits)


def _check_encoding(fn, encoding, errors="replace", replacement_char=65533):
    if str(encoding).upper().replace("_", "-") not in ("UTF-8", "UTF8"):
        raise NotImplementedError(f"tf.strings.{fn}: only UTF-8 is supported here, got {encoding!r}")
    if errors != "replace" or replacement_char != 65533:
        raise NotImplementedError(f"tf.strings.{fn}: only errors='replace' with U+FFFD is supported here")


def length(input, unit="BYTE", name=None):  # noqa: A002
    """Each string's length in bytes (unit='BYTE') or UTF-8 characters ('UTF8_CHAR'), int32."""
    return _s.length(_t(input), unit)


def lower(input, encoding="", name=None):  # noqa: A002
    if encoding:
        raise NotImplementedError("tf.strings.lower: only encoding='' (ASCII letters) is supported here")
    return _s.lower(_t(input))


def upper(input, encoding="", name=None):  # noqa: A002
    if encoding:
        raise NotImplementedError("tf.strings.upper: only encoding='' (ASCII letters) is supported here")
    return _s.upper(_t(input))


def strip(input, name=None):  # noqa: A002
    """Leading and trailing whitespace removed."""
    return _s.strip(_t(input))


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches `pattern` (RE2 syntax), bool."""
    return _s.regex_full_match(_t(input), str(pattern))


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Matches of `pattern` replaced by `rewrite` (\\1 ... refer to groups); the first only when
    replace_global=False."""
    return _s.regex_replace(_t(input), str(pattern), str(rewrite), bool(replace_global))


def to_number(string_tensor, out_type=None, name=None):
    """Text to numbers (float32 by default); text that is not a number raises InvalidArgumentError."""
    return _s.to_number(_t(string_tensor), _core.DType.float32 if out_type is None else out_type)


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):  # noqa: A002
    """Numbers and bools as text: floats as printf's %f (six digits) unless precision, scientific
    (%e) or shortest (%g) say otherwise; `width` pads with `fill` (' ' or '0')."""
    return _s.as_string(_t(input), int(precision), bool(scientific), bool(shortest), int(width), str(fill))


def join(inputs, separator="", name=None):
    """Element by element concatenation of the inputs (scalars broadcast), with `separator`."""
    if isinstance(inputs, (_core.Tensor, str, bytes)):
        raise TypeError("tf.strings.join takes a list of string tensors")
    return _s.join([_t(x) for x in inputs], str(separator))


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """Joins the strings along `axis` (every axis when None)."""
    if axis is not None:
        axis = [int(a) for a in _np.atleast_1d(_np.asarray(axis))]
    return _s.reduce_join(_t(inputs), axis, bool(keepdims), str(separator))


def substr(input, pos, len, unit="BYTE", name=None):  # noqa: A002
    """Substrings from `pos` (negative: from the end) of at most `len` bytes or UTF-8 characters."""
    return _s.substr(_t(input), pos, len, unit)


def unsorted_segment_join(inputs, segment_ids, num_segments, separator="", name=None):
    """The strings of each segment joined in order ('' for an empty segment)."""
    return _s.unsorted_segment_join(_t(inputs), segment_ids, int(num_segments), str(separator))


def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """Splits each string on `sep` (empty pieces kept), or on runs of whitespace when sep is
    None; a vector gives a RaggedTensor of rows, a scalar a 1-D tensor."""
    x = _t(input)
    if x.ndim > 1:
        raise ValueError(f"tf.strings.split: only scalars and vectors of strings are supported here, got rank {x.ndim}")
    values, splits, _ = _s.split(x, None if sep is None or sep == "" else str(sep), int(maxsplit))
    return _ragged(x, values, splits)


def bytes_split(input, name=None):  # noqa: A002
    """Each string as its bytes (length-1 strings)."""
    x = _t(input)
    values, splits, _ = _s.bytes_split(x)
    return _ragged(x, values, splits)


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533, name=None):  # noqa: A002
    """Each string as its UTF-8 characters (malformed bytes become U+FFFD)."""
    _check_encoding("unicode_split", input_encoding, errors, replacement_char)
    x = _t(input)
    values, splits, _ = _s.unicode_split(x)
    return _ragged(x, values, splits)


def unicode_split_with_offsets(input, input_encoding, errors="replace", replacement_char=65533, name=None):  # noqa: A002
    _check_encoding("unicode_split_with_offsets", input_encoding, errors, replacement_char)
    x = _t(input)
    values, splits, starts = _s.unicode_split(x)
    return _ragged(x, values, splits), _ragged(x, starts, splits)


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   replace_control_characters=False, name=None):
    """Each string's code points (int32); malformed bytes decode to U+FFFD."""
    _check_encoding("unicode_decode", input_encoding, errors, replacement_char)
    x = _t(input)
    values, splits, _ = _s.unicode_decode(x)
    return _ragged(x, values, splits)


def unicode_decode_with_offsets(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                                replace_control_characters=False, name=None):
    _check_encoding("unicode_decode_with_offsets", input_encoding, errors, replacement_char)
    x = _t(input)
    values, splits, starts = _s.unicode_decode(x)
    return _ragged(x, values, splits), _ragged(x, starts, splits)


def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533, name=None):  # noqa: A002
    """Code points to UTF-8 strings: a RaggedTensor's rows, or the last axis of a dense tensor."""
    _check_encoding("unicode_encode", output_encoding, errors, replacement_char)
    from .ragged import RaggedTensor
    if isinstance(input, RaggedTensor):
        return _s.unicode_encode(input.values, input.row_splits)
    x = _t(input)
    if x.ndim == 0:
        raise ValueError("tf.strings.unicode_encode: the input must have at least one axis (the characters)")
    shape = list(x._shape_tuple)
    rows = int(_np.prod(shape[:-1])) if len(shape) > 1 else 1
    width = shape[-1]
    splits = _core.constant(_np.arange(rows + 1, dtype=_np.int64) * width)
    out = _s.unicode_encode(_core.reshape(x, [-1]), splits)
    return _core.reshape(out, shape[:-1])


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """FarmHash Fingerprint64 of each string mod num_buckets (TF's numbers), int64."""
    return _s.to_hash_bucket_fast(_t(input), int(num_buckets))


def to_hash_bucket(string_tensor, num_buckets, name=None):
    """TF's legacy Hash64 of each string mod num_buckets, int64."""
    return _s.to_hash_bucket(_t(string_tensor), int(num_buckets))


def to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """SipHash-2-4 keyed by `key` (two ints) of each string mod num_buckets, int64."""
    key = list(key)
    if len(key) != 2:
        raise ValueError(f"tf.strings.to_hash_bucket_strong: key must be two integers, got {key}")
    return _s.to_hash_bucket_strong(_t(input), int(num_buckets), int(key[0]) % 2**64, int(key[1]) % 2**64)


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None, preserve_short_sequences=False,
           name=None):
    """The n-grams of the last axis of a dense string tensor (or of each row of a RaggedTensor),
    joined with `separator`; pad_values (a string or a pair) pads each side by padding_width
    (ngram_width - 1 by default)."""
    from .ragged import RaggedTensor
    widths = [int(w) for w in _np.atleast_1d(_np.asarray(ngram_width))]
    if any(w < 1 for w in widths):
        raise ValueError(f"tf.strings.ngrams: ngram_width must be positive, got {ngram_width}")
    if isinstance(data, RaggedTensor):
        rows = data.to_list()
        outs = [_ngrams_of_row(r, widths, separator, pad_values, padding_width, preserve_short_sequences) for r in rows]
        from .ragged import constant as _ragged_constant
        flat = [g for r in outs for g in r]
        values = _core.constant(_np.array(flat, dtype=object)) if flat else _core.constant(_np.zeros((0,), dtype=object))
        return RaggedTensor.from_row_lengths(values, _np.array([len(r) for r in outs], _np.int64))
    x = _t(data)
    if x.ndim == 0:
        raise ValueError("tf.strings.ngrams: data must have at least one axis")
    if pad_values is None and len(widths) == 1 and x.ndim >= 1:
        # Dense and unpadded: one join of shifted slices, an op that traces.
        w = widths[0]
        n = x._shape_tuple[-1]
        if n is not None and n >= w:
            parts = [x[..., k:n - w + 1 + k] for k in range(w)]
            return join(parts, separator)
    arr = x.numpy()
    lead = arr.shape[:-1]
    rows = [_ngrams_of_row(list(r), widths, separator, pad_values, padding_width, preserve_short_sequences)
            for r in arr.reshape(-1, arr.shape[-1])]
    width = len(rows[0]) if rows else 0
    out = _np.empty((len(rows), width), dtype=object)
    for i, r in enumerate(rows):
        out[i, :] = r
    return _core.constant(out.reshape(lead + (width,)))


def _as_bytes(v):
    return v if isinstance(v, bytes) else str(v).encode()


def _ngrams_of_row(row, widths, separator, pad_values, padding_width, preserve_short):
    sep = _as_bytes(separator)
    row = [_as_bytes(v) for v in row]
    out = []
    for w in widths:
        items = row
        if pad_values is not None:
            left, right = (pad_values, pad_values) if isinstance(pad_values, (str, bytes)) else tuple(pad_values)
            p = w - 1 if padding_width is None else int(padding_width)
            items = [_as_bytes(left)] * p + row + [_as_bytes(right)] * p
        grams = [sep.join(items[k:k + w]) for k in range(len(items) - w + 1)]
        if not grams and preserve_short and items:
            grams = [sep.join(items)]
        out.extend(grams)
    return out


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001
    """A scalar string: `template` with each placeholder replaced by an input printed as TF
    prints tensors (at most `summarize` entries of each axis's ends)."""
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    pieces = str(template).split(placeholder)
    if len(pieces) - 1 != len(inputs):
        raise ValueError(f"tf.strings.format: {len(pieces) - 1} placeholders in the template for {len(inputs)} inputs")
    out = pieces[0]
    for value, rest in zip(inputs, pieces[1:]):
        out += _format_value(value, summarize) + rest
    return _core.convert_to_tensor(out)


def _format_value(v, summarize):
    if isinstance(v, _core.Tensor) or isinstance(v, (list, tuple, _np.ndarray)):
        t = _t(v)
        a = _np.asarray(t.numpy(), dtype=object if t.dtype == _core.DType.string else None)
        if summarize is None or summarize < 0:
            threshold = a.size + 1
        else:
            threshold = 2 * summarize
        with _np.printoptions(threshold=threshold, edgeitems=max(summarize or 0, 1)):
            if a.dtype == object:
                quoted = _np.vectorize(lambda b: '"' + b.decode("utf-8", "backslashreplace") + '"', otypes=[object])(a)
                if a.ndim == 0:
                    return quoted[()]
                return _np.array2string(quoted, formatter={"object": str})
            return str(a)
    return str(v)
